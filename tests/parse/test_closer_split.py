"""A call closer cut by a chunk boundary: streaming equals batch (spec derived from an invented
fenced template, whose closer ``\\n```\\n`` the JSON scanner first sees as a stray backtick)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunking import feed_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import detect_dialect

TEMPLATE = (
    Path(__file__).parent.parent / "fixtures" / "templates" / "invented" / "fenced-name-info.jinja"
)
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("search", "get_weather")
]


def _spec() -> DialectSpec:
    spec = detect_dialect(TEMPLATE.read_text(encoding="utf-8"), builtins=False)
    assert spec is not None
    return spec


def _shape(out: object) -> object:
    return (
        out.content,  # type: ignore[attr-defined]
        out.reasoning_content,  # type: ignore[attr-defined]
        [(c.name, c.arguments) for c in out.tool_calls],  # type: ignore[attr-defined]
    )


def _streamed(spec: DialectSpec, chunks: list[str]) -> object:
    return feed_chunks(StreamParser(spec, tools=TOOLS), chunks)


# the arguments' closing brace is missing before the fence closer (healed, a call), or a member
# is cut before it (no call: its words stay content)
TEXTS = [
    'Look.\n```call:search\n{"city": 1\n```w3q ```',
    '```call:get_weather\n{"city": "Paris"\n```\nw3q',
    '```call:search\n{"city": \n```w3q ```',
    '```call:get_weather\n{"ciw10qw11q"\n```',
    'a```call:search\n{"city": "x"}\n```w3q ```',
]


def test_the_fuzz_finding_chunking_streams_as_batch() -> None:
    spec = _spec()
    text = 'w0q```call:search\n{"city": \n```w10qw11q'
    cut = text.index("\n`") + 2  # after the closer's first backtick
    batch = parse_output(text, spec, tools=TOOLS)
    assert _shape(_streamed(spec, [text[:cut], text[cut:]])) == _shape(batch)
    text = '```call:search\n{"city": 2\n```w3q ```'
    cut = text.index("\n`") + 2
    batch = parse_output(text, spec, tools=TOOLS)
    assert _shape(batch) == ("w3q ```", None, [("search", {"city": 2})])
    assert _shape(_streamed(spec, [text[:cut], text[cut:]])) == _shape(batch)


@pytest.mark.parametrize("text", TEXTS)
def test_every_two_way_split_streams_as_batch(text: str) -> None:
    spec = _spec()
    batch = _shape(parse_output(text, spec, tools=TOOLS))
    bad = [i for i in range(1, len(text)) if _shape(_streamed(spec, [text[:i], text[i:]])) != batch]
    assert not bad, f"splits at {bad} differ from batch {batch!r}"


def test_a_member_cut_before_the_closer_is_no_call_and_keeps_its_words() -> None:
    spec = _spec()
    text = '```call:get_weather\n{"ciw10qw11q"\n```'
    out = parse_output(text, spec, tools=TOOLS)
    assert out.tool_calls == []
    assert out.content == text
    # only the braces missing: healed, a call
    out = parse_output('```call:get_weather\n{"city": "Paris"\n```', spec, tools=TOOLS)
    assert _shape(out) == (None, None, [("get_weather", {"city": "Paris"})])
