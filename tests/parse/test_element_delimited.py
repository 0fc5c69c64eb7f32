"""Element bodies whose ``key: value`` parameters are joined by a separator
(``ElementBody.param_separator``): a value runs to the separator before a next parameter of the
tool, or to the tail, so the separator's text inside a value stays text; read in batch and
streamed in any chunking alike."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import CallFormat, DialectSpec, ElementBody
from tooldialect.parse import ParsedOutput, StreamParser, parse_output

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "note",
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "n": {"type": "integer"},
                    "tags": {"type": "array"},
                    "ok": {"type": "boolean"},
                },
            },
        },
    }
]
ARGS: dict[str, Any] = {
    "text": 'a "b" <c> & d\nline two ;; x: 1, y | z',
    "n": 3,
    "tags": ["p", 2],
    "ok": False,
}
SEPARATORS = [" ;; ", "\n", ", ", "<|and|>", " | "]


def _spec(separator: str) -> DialectSpec:
    body = ElementBody(
        head="{name}\n",
        param="{key}: {value}",
        tail="\n<|act_end|>",
        trim_value=False,
        param_separator=separator,
    )
    return DialectSpec(id="t", formats=[CallFormat(call_open="<|act|>", body=body)])


def _calls(out: ParsedOutput) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in out.tool_calls]


@pytest.mark.parametrize("separator", SEPARATORS, ids=[repr(s) for s in SEPARATORS])
def test_render_call_reads_back_batch_and_streamed(separator: str) -> None:
    spec = _spec(separator)
    text = "Sure. " + spec.render_calls([("note", ARGS, None), ("note", {"n": 1}, None)])
    want = [("note", ARGS), ("note", {"n": 1})]
    batch = parse_output(text, spec, tools=TOOLS)
    assert _calls(batch) == want
    assert (batch.content or "").strip() == "Sure."
    for seed in range(12):
        parser = StreamParser(spec, tools=TOOLS)
        streamed = feed_in_random_chunks(parser, text, random.Random(seed))
        assert _calls(streamed) == want
        assert streamed.content == batch.content


def test_a_separator_no_parameter_follows_is_text() -> None:
    spec = _spec(" ;; ")
    text = "<|act|>note\ntext: a ;; b ;; other: 2 ;; n: 4\n<|act_end|>"
    assert _calls(parse_output(text, spec, tools=TOOLS)) == [
        ("note", {"text": "a ;; b ;; other: 2", "n": 4})
    ]


def test_the_model_s_spacing_around_the_separator() -> None:
    spec = _spec(" ;; ")
    text = "<|act|>note\ntext:x;;n:  4 ;;ok: true<|act_end|>"
    assert _calls(parse_output(text, spec, tools=TOOLS)) == [
        ("note", {"text": "x", "n": 4, "ok": True})
    ]


def test_a_missing_tail_at_the_end_of_the_reply() -> None:
    spec = _spec(" ;; ")
    text = "<|act|>note\ntext: last words ;; n: 2"
    assert _calls(parse_output(text, spec, tools=TOOLS)) == [
        ("note", {"text": "last words", "n": 2})
    ]


def test_a_closer_in_pieces_is_read_alike_streamed() -> None:
    # the tail is two markers with blanks between: a value may hold the first alone
    body = ElementBody(
        head="{name}\n",
        param="{key}: {value}",
        tail="\n</act>  </acts>",
        trim_value=False,
        param_separator=" ;; ",
    )
    spec = DialectSpec(id="t", formats=[CallFormat(call_open="<acts><act>", body=body)])
    args = {"text": "x </act> y </act>\n\n z", "n": 5}
    text = spec.render_call("note", args)
    assert _calls(parse_output(text, spec, tools=TOOLS)) == [("note", args)]
    for seed in range(12):
        parser = StreamParser(spec, tools=TOOLS)
        assert _calls(feed_in_random_chunks(parser, text, random.Random(seed))) == [("note", args)]


def test_a_long_value_streams_in_linear_time() -> None:
    spec = _spec(" ;; ")
    value = ("word ;; other <x> & y\n" * 1000)[:20000]
    text = spec.render_call("note", {"text": value, "n": 2})
    parser = StreamParser(spec, tools=TOOLS)
    started = time.perf_counter()
    for i in range(0, len(text), 4):
        parser.feed(text[i : i + 4])
    parser.close()
    # a rescan of the value on every chunk took 7 s here, the resumed scans 0.08 s
    assert time.perf_counter() - started < 2.0
    assert _calls(parser.result) == [("note", {"text": value, "n": 2})]
