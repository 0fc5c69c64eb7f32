"""Stream reassembly and a/b comparison used by the accuracy benchmark (bench/accuracy.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import accuracy


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call_delta(index: int, *, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        fn["name"] = name
    return {"tool_calls": [{"index": index, "function": fn}]}


def test_reassemble_interleaved_calls() -> None:
    chunks = [
        chunk({"role": "assistant"}),
        chunk({"content": "Sure"}),
        chunk(call_delta(0, name="weather")),
        chunk(call_delta(0, arguments='{"city": ')),
        chunk(call_delta(1, name="time", arguments="{}")),
        chunk(call_delta(0, arguments='"Paris"}')),
        chunk({}, "tool_calls"),
    ]
    content, calls, finish = accuracy.reassemble(chunks)
    assert (content, calls, finish) == (
        "Sure",
        [("weather", '{"city": "Paris"}'), ("time", "{}")],
        "tool_calls",
    )


def test_same_answer_ignores_json_spacing_but_not_values() -> None:
    a = {"calls": [("f", '{"x": 1}')], "content": ""}
    assert accuracy._same_answer(a, {"calls": [["f", '{"x":1}']], "content": None})
    assert not accuracy._same_answer(a, {"calls": [("f", '{"x": 2}')], "content": ""})
    assert not accuracy._same_answer(a, {"calls": [("f", '{"x": 1}')], "content": "hi"})


def test_calls_of_message_encodes_dict_arguments() -> None:
    message = {"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}
    assert accuracy.calls_of_message(message) == [("f", '{"x": 1}')]
    assert accuracy.calls_of_message({"content": "no calls"}) == []
