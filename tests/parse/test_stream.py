"""StreamParser behaviour beyond the golden tables, and render -> parse round trips for every
builtin dialect."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooldialect.dialect import builtin_dialects, get_builtin
from tooldialect.dialect.spec import DialectSpec
from tooldialect.errors import ToolDialectError
from tooldialect.parse import StreamParser, parse_output

from .helpers import assemble

HERMES = DialectSpec.builtin("hermes")
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "n": {"type": "integer"},
                    "ok": {"type": "boolean"},
                    "tags": {"type": "array"},
                    "obj": {"type": "object"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    },
]
ARGS_1 = {"city": "Paris", "n": 3, "ok": True, "tags": ["a", "b"], "obj": {"k": None}}
ARGS_2 = {"q": 'x"y</tool_call>'}


@pytest.mark.parametrize("name", builtin_dialects())
def test_render_then_parse_round_trips(name: str) -> None:
    spec = get_builtin(name)
    ids = [spec.new_id(name="get_weather", index=0), spec.new_id(name="search", index=1)]
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("get_weather", ARGS_1, ids[0]),
        ("search", ARGS_2, ids[1]),
    ]
    if not spec.parallel_calls:
        calls = calls[:1]
    text = spec.render_calls([(n, a, i) for n, a, i in calls])
    result = parse_output(text, spec, tools=TOOLS)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [(n, a) for n, a, _ in calls]
    assert result.content is None
    for call, (_, _, cid) in zip(result.tool_calls, calls, strict=True):
        if cid in text:  # the dialect writes ids: they must come back
            assert call.id == cid
    parser = StreamParser(spec, tools=TOOLS)
    deltas = [d for i in range(0, len(text), 3) for d in parser.feed(text[i : i + 3])]
    deltas += parser.close()
    assembled = assemble(deltas)
    assert [(c["name"], json.loads(c["arguments"])) for c in assembled.calls] == [
        (n, a) for n, a, _ in calls
    ]


def _feed_all(parser: StreamParser, chunks: list[str]) -> list[list[dict[str, Any]]]:
    return [parser.feed(c) for c in chunks]


def test_partial_marker_is_held_back_not_leaked() -> None:
    parser = StreamParser(HERMES)
    out = _feed_all(parser, ["Hello <tool_", 'call>\n{"name": "search", ', '"arguments": {}}'])
    assert out[0] == [{"content": "Hello"}]
    assert out[1] == []
    assert out[2][0]["tool_calls"][0]["function"]["name"] == "search"


def test_held_prefix_that_is_not_a_marker_comes_back() -> None:
    parser = StreamParser(HERMES)
    out = _feed_all(parser, ["a <tool", "box> b"])
    parser.close()
    assert out[0] == [{"content": "a"}]
    assert out[1] == [{"content": " <toolbox> b"}]
    assert parser.result.content == "a <toolbox> b"


def test_json_arguments_stream_before_the_call_ends() -> None:
    parser = StreamParser(HERMES, stream_arguments=True)
    out = _feed_all(
        parser,
        [
            '<tool_call>\n{"name": "search", "arguments": {"q": "hel',
            "lo wor",
            'ld"}}\n</tool_call>',
        ],
    )
    first, second = out[0], out[1]
    assert first[0]["tool_calls"][0]["function"] == {"name": "search", "arguments": ""}
    assert first[1]["tool_calls"][0]["function"]["arguments"] == '{"q": "hel'
    assert second == [{"tool_calls": [{"index": 0, "function": {"arguments": "lo wor"}}]}]
    parser.close()
    assert parser.result.tool_calls[0].arguments_json == '{"q": "hello world"}'


def test_json_call_is_held_until_it_ends_by_default() -> None:
    """Without ``stream_arguments`` a call is sent when it ends: its JSON may still break."""
    parser = StreamParser(HERMES)
    assert parser.feed('<tool_call>\n{"name": "search", "arguments": {"q": "hel') == []
    assert parser.feed("lo wor") == []
    out = parser.feed('ld"}}\n</tool_call>')
    assert out[0]["tool_calls"][0]["function"] == {"name": "search", "arguments": ""}
    assert (
        "".join(d["tool_calls"][0]["function"]["arguments"] for d in out) == '{"q": "hello world"}'
    )


def test_broken_json_call_is_content_streamed_like_batch() -> None:
    text = '<tool_call>\n{"name": "search", "arguments": {"q": "a"b"}}\n</tool_call>\nok'
    parser = StreamParser(HERMES)
    deltas = [d for piece in text for d in parser.feed(piece)] + parser.close()
    assert deltas and all("tool_calls" not in d for d in deltas)
    assert parser.result.content == text
    kept = StreamParser(HERMES, stream_arguments=True)  # a grammar-constrained stream: healed
    kept.feed(text)
    kept.close()
    assert [c.arguments for c in kept.result.tool_calls] == [{"q": "a"}]


def test_call_is_not_announced_before_it_is_certain() -> None:
    parser = StreamParser(HERMES)
    assert parser.feed('<tool_call>\n{"name": "search", "argu') == []
    assert parser.close() == [{"content": '<tool_call>\n{"name": "search", "argu'}]
    assert parser.result.tool_calls == []


def test_element_arguments_come_whole_when_the_call_ends() -> None:
    spec = get_builtin("qwen3-coder")
    text = spec.render_call("search", {"q": "x"})
    parser = StreamParser(spec, tools=TOOLS)
    cut = text.index("</function>") + 3
    deltas = parser.feed(text[:cut])
    assert not any("tool_calls" in d for d in deltas)
    deltas += parser.feed(text[cut:]) + parser.close()
    assert assemble(deltas).calls[0]["arguments"] == '{"q": "x"}'


def test_one_call_when_parallel_calls_is_false() -> None:
    spec = HERMES.model_copy(update={"parallel_calls": False})
    text = HERMES.render_calls([("search", {"q": "a"}, None), ("search", {"q": "b"}, None)])
    result = parse_output(text, spec)
    assert [c.arguments for c in result.tool_calls] == [{"q": "a"}]
    assert result.content is not None and '"b"' in result.content


def test_feed_after_close_and_result_before_close_raise() -> None:
    parser = StreamParser(HERMES)
    with pytest.raises(ToolDialectError, match="close"):
        _ = parser.result
    parser.close()
    with pytest.raises(ToolDialectError, match="close"):
        parser.feed("x")


def test_tooldefs_and_openai_dicts_both_accepted() -> None:
    from tooldialect.tool_defs import normalize_tools

    spec = get_builtin("qwen3-coder")
    text = spec.render_call("get_weather", {"n": 3})
    for tools in (TOOLS, normalize_tools(TOOLS)):
        assert parse_output(text, spec, tools=tools).tool_calls[0].arguments == {"n": 3}


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (
            'Sure.\n<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>\nDone.',
            "Sure.\nDone.",
        ),
        ('Sure. <tool_call>{"name": "search", "arguments": {}}</tool_call>Done.', "Sure.\nDone."),
        ('<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>\nDone.', "Done."),
        ('Sure.\n<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>\n', "Sure."),
        (
            'A <tool_call>{"name": "search", "arguments": {}}</tool_call> B '
            '<tool_call>{"name": "search", "arguments": {}}</tool_call> C',
            "A\nB\nC",
        ),
        ("A <think>r</think> B", "AB"),
    ],
    ids=[
        "around-call",
        "no-newlines-written",
        "nothing-before",
        "nothing-after",
        "two-blocks",
        "reasoning-is-not-a-call",
    ],
)
def test_content_around_calls_is_joined_with_one_newline(text: str, content: str) -> None:
    assert parse_output(text, HERMES).content == content
    parser = StreamParser(HERMES)
    deltas = [d for ch in text for d in parser.feed(ch)] + parser.close()
    assert assemble(deltas).content == content


def test_join_newline_goes_out_with_the_content_after_the_call() -> None:
    parser = StreamParser(HERMES)
    call = '<tool_call>{"name": "search", "arguments": {}}</tool_call>'
    assert parser.feed("Sure.\n") == [{"content": "Sure."}]
    assert [d for d in parser.feed(call + "\n") if "content" in d] == []
    assert parser.feed("Done") == [{"content": "\nDone"}]


FUNCTIONARY = DialectSpec.builtin("functionary-v3.2")


def test_prefill_is_read_but_never_emitted() -> None:
    parser = StreamParser(FUNCTIONARY, prefill=">>>")
    deltas = [d for ch in 'get_weather\n{"city": "Oslo"}' for d in parser.feed(ch)]
    deltas += parser.close()
    assembled = assemble(deltas)
    assert assembled.content == "" and parser.result.content is None
    assert [(c["name"], c["arguments"]) for c in assembled.calls] == [
        ("get_weather", '{"city": "Oslo"}')
    ]


@pytest.mark.parametrize(
    "prefill",
    [">>>", ">>>all\n", "Sure, ", "<tool_call>\n"],
    ids=["call-opener", "strip-marker", "plain-text", "hermes-opener"],
)
def test_prefill_text_never_reaches_the_content(prefill: str) -> None:
    spec = HERMES if "tool_call" in prefill else FUNCTIONARY
    text = "!!! not a call"
    parser = StreamParser(spec, prefill=prefill)
    deltas = [d for ch in text for d in parser.feed(ch)] + parser.close()
    assert prefill.strip() not in (assemble(deltas).content or "")
    assert parse_output(text, spec, prefill=prefill).content == parser.result.content


@pytest.mark.parametrize(
    "text",
    [
        "I think.</think>Answer.",
        " I think. </think> Answer.",
        'Hmm.</think>\n<tool_call>{"name": "search", "arguments": {}}</tool_call>',
        "never closed",
    ],
    ids=["closed", "spaces", "call-after", "unclosed"],
)
def test_reasoning_open_is_prefill_of_the_open_marker(text: str) -> None:
    assert HERMES.reasoning is not None
    a = parse_output(text, HERMES, reasoning_open=True)
    b = parse_output(text, HERMES, prefill=HERMES.reasoning.open)
    assert (a.content, a.reasoning_content, [c.arguments for c in a.tool_calls]) == (
        b.content,
        b.reasoning_content,
        [c.arguments for c in b.tool_calls],
    )
