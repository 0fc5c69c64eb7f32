"""A call cut short, then prose, then a whole call: the prose stays content verbatim and the whole
call parses (found by the marker-soup fuzzer, tests/test_fuzz.py; docs/reliability.md)."""

from __future__ import annotations

import pytest

from tooldialect.dialect.builtins import builtin_dialects
from tooldialect.dialect.spec import DialectSpec, ElementBody
from tooldialect.parse import StreamParser, parse_output
from tooldialect.tool_defs import normalize_tools

TOOLS = normalize_tools(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
                },
            },
        }
    ]
)
ARGS = {"city": "Paris", "n": 3}
GAP = "w12q w13q, then"


def _cuts(call: str) -> dict[str, int]:
    """Where to cut ``call``: inside its first closing tag and inside its last one."""
    first, last = call.find("</"), call.rfind("</")
    return {"first-closer": first + 3, "last-closer": last + 3} if first >= 0 else {}


CASES = [
    pytest.param(name, where, id=f"{name}-{where}")
    for name in builtin_dialects()
    for where in _cuts(DialectSpec.builtin(name).render_call("get_weather", ARGS))
]


@pytest.mark.parametrize(("name", "where"), CASES)
def test_text_after_a_cut_call_stays_content(name: str, where: str) -> None:
    spec = DialectSpec.builtin(name)
    call = spec.render_call("get_weather", ARGS)
    cut = call[: _cuts(call)[where]]
    text = f"{cut}{GAP}{call}"
    batch = parse_output(text, spec, tools=TOOLS)
    # no loss: content, or a value of the cut call where its dialect reads a call left unclosed
    kept = (batch.content or "") + "".join(c.arguments_json for c in batch.tool_calls)
    assert GAP in kept, (text, batch)
    assert [(c.name, c.arguments) for c in batch.tool_calls][-1:] == [("get_weather", ARGS)]
    stream = StreamParser(spec, tools=TOOLS)
    for ch in text:
        stream.feed(ch)
    stream.close()
    got = stream.result
    assert (got.content, [(c.name, c.arguments) for c in got.tool_calls]) == (
        batch.content,
        [(c.name, c.arguments) for c in batch.tool_calls],
    )


def test_value_cut_inside_its_closer_keeps_the_following_text() -> None:
    """The fuzzer's reproducer: qwen3-coder's value closer cut to ``</pa``, words, a whole call.
    The cut value used to run on to the next call's first parameter and be overwritten by it."""
    spec = DialectSpec.builtin("qwen3-coder")
    call = spec.render_call("get_weather", ARGS)
    text = "w0q" + call[: call.index("</parameter>") + 4] + "w12qw13q" + call
    out = parse_output(text, spec, tools=TOOLS)
    assert out.content == text[: -len(call)]
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("get_weather", ARGS)]


ELEMENT = [
    name
    for name in builtin_dialects()
    if isinstance(DialectSpec.builtin(name).formats[0].body, ElementBody)
]


@pytest.mark.parametrize("name", ELEMENT)
def test_a_header_alone_at_the_end_is_no_call(name: str) -> None:
    """The reply ends after a call's header (``<tool_call><function=get_weather>``): the model
    stopped before any argument or closer, so no call with ``{}`` is made up; the text stays."""
    spec = DialectSpec.builtin(name)
    text = spec.render_call("get_weather", ARGS)
    first_key = text.find("city")
    for cut in range(text.find("get_weather") + len("get_weather"), first_key - 1):
        head = text[:cut]
        batch = parse_output(head, spec, tools=TOOLS)
        parser = StreamParser(spec, tools=TOOLS)
        for ch in head:
            parser.feed(ch)
        parser.close()
        assert batch.tool_calls == [], (cut, head)
        assert batch.content == head, (cut, head)
        assert parser.result.content == batch.content and parser.result.tool_calls == []
