"""The long-tail mechanisms beyond the golden tables (tests/fixtures/outputs/long-tail/): which
dialects get which variant layouts, the stream options, and invalid UTF-8."""

from __future__ import annotations

from typing import Any

import pytest

from tooldialect.dialect.builtins import builtin_dialects
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.parse.stream_plan import plan_for

from .helpers import assemble

WEATHER: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'


def _stream(spec: DialectSpec, text: str, **options: Any) -> tuple[Any, list[dict[str, Any]]]:
    parser = StreamParser(spec, tools=WEATHER, **options)
    deltas = [d for ch in text for d in parser.feed(ch)] + parser.close()
    return parser.result, deltas


@pytest.mark.parametrize("name", builtin_dialects())
def test_wrappers_are_read_only_for_bare_dialects(name: str) -> None:
    """A fence around a call is a call only where the dialect's calls have no opener of their
    own: elsewhere a fenced JSON object is the model quoting code."""
    spec = DialectSpec.builtin(name)
    fenced = f"Here:\n```json\n[{CALL}]\n```"
    out = parse_output(fenced, spec, tools=WEATHER)
    bare = spec.primary.opener().strip() in ("", "[")
    if bare and spec.primary.body.kind == "json":
        assert [c.name for c in out.tool_calls] == ["get_weather"] and out.content == "Here:"
    elif not bare:
        assert out.content is not None and "```json" in out.content


def test_end_of_turn_drops_everything_after_it_streamed_like_batch() -> None:
    spec = DialectSpec.builtin("hermes")
    text = "Sure.<|im_end|>\n<|im_start|>user\nmore"
    result, deltas = _stream(spec, text, end_of_turn=["<|im_end|>"])
    assert result.content == "Sure." and assemble(deltas).content == "Sure."
    assert parse_output(text, spec, end_of_turn=["<|im_end|>"]).content == "Sure."
    assert parse_output(text, spec).content == text  # no markers named: content, verbatim


def test_end_of_turn_markers_key_the_plan_cache() -> None:
    spec = DialectSpec.builtin("hermes")
    assert plan_for(spec, ("<|im_end|>",)) is not plan_for(spec)
    assert plan_for(spec, ("<|im_end|>",)) is plan_for(spec, ("<|im_end|>",))


@pytest.mark.parametrize("stream_arguments", [False, True])
def test_broken_json_batch_equals_stream_under_both_options(stream_arguments: bool) -> None:
    spec = DialectSpec.builtin("hermes")
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "P"x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    )
    batch = parse_output(text, spec, tools=WEATHER, stream_arguments=stream_arguments)
    streamed, deltas = _stream(spec, text, stream_arguments=stream_arguments)
    got = [(c.name, c.arguments) for c in streamed.tool_calls]
    assert got == [(c.name, c.arguments) for c in batch.tool_calls]
    assert streamed.content == batch.content
    assert assemble(deltas).content == (batch.content or "")
    if stream_arguments:  # a grammar-constrained stream: the broken call is kept, healed
        assert got[0] == ("get_weather", {"city": "P"})
    else:
        assert got == [("get_weather", {"city": "Rome"})]
        assert batch.content is not None and '"P"x"' in batch.content


def test_held_call_comes_out_whole_when_it_ends() -> None:
    spec = DialectSpec.builtin("hermes")
    parser = StreamParser(spec, tools=WEATHER)
    head = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
    assert parser.feed(head) == []
    assert parser.feed("ris and more plain text") == []
    out = parser.feed('"}}\n</tool_call>')
    call = assemble(out).calls
    assert call == [
        {
            "id": call[0]["id"],
            "name": "get_weather",
            "arguments": '{"city": "Paris and more plain text"}',
        }
    ]


def test_escaped_reading_leaves_real_backslashes_alone() -> None:
    """A normally written element call whose value holds ``\\n`` is not read as escaped."""
    spec = DialectSpec.builtin("qwen3-coder")
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nC:\\new\\dir\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    out = parse_output(text, spec, tools=WEATHER)
    assert [c.arguments for c in out.tool_calls] == [{"city": "C:\\new\\dir"}]


@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
@pytest.mark.parametrize("name", ["hermes", "llama-3", "qwen3-coder", "gpt-oss"])
def test_invalid_utf8_inside_and_around_calls_is_kept(name: str, errors: str) -> None:
    spec = DialectSpec.builtin(name)
    junk = b"\xff\xfe\xc3(\xe2\x82".decode("utf-8", errors=errors)
    call = spec.render_call("get_weather", {"city": "Par" + junk + "is"})
    text = f"a{junk}b " + call + f" c{junk}"
    batch = parse_output(text, spec, tools=WEATHER)
    streamed, _ = _stream(spec, text)
    assert [c.arguments for c in batch.tool_calls] == [{"city": "Par" + junk + "is"}]
    assert [c.arguments for c in streamed.tool_calls] == [c.arguments for c in batch.tool_calls]
    assert batch.content is not None and f"a{junk}b" in batch.content
    assert f"c{junk}" in batch.content
    assert streamed.content == batch.content


REASONING = [  # with reasoning markers (harmony's message headers are another reader)
    n
    for n in builtin_dialects()
    if DialectSpec.builtin(n).reasoning is not None and DialectSpec.builtin(n).messages is None
]


@pytest.mark.parametrize("name", REASONING)
@pytest.mark.parametrize("reasoning_open", [False, True], ids=["model-opened", "prompt-opened"])
def test_a_repeated_reasoning_opener_is_a_marker(name: str, reasoning_open: bool) -> None:
    """The block's opener written again at its start (``<|channel>thought<|channel>thought``,
    or by a model whose prompt already opened the block) is dropped; later in the block it is
    the model quoting it, kept as text. Stream equals batch."""
    spec = DialectSpec.builtin(name)
    r = spec.reasoning
    assert r is not None
    if not (r.open.strip() and r.close.strip()):
        pytest.skip("no reasoning block markers")
    for text, reasoning in [
        (f"{r.open}{r.open}\nhmm{r.close}Hi", "hmm"),
        (f"{r.open} \n{r.open}hmm{r.close}Hi", "hmm"),
        (f"{r.open}hmm {r.open} x{r.close}Hi", f"hmm {r.open.strip()} x"),
    ]:
        batch = parse_output(text, spec, tools=WEATHER, reasoning_open=reasoning_open)
        assert (batch.content, batch.reasoning_content) == ("Hi", reasoning), text
        streamed, deltas = _stream(spec, text, reasoning_open=reasoning_open)
        assert (streamed.content, streamed.reasoning_content) == ("Hi", reasoning)
        assert assemble(deltas).reasoning == reasoning
