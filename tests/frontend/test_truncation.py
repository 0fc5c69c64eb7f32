"""Truncation never fabricates a call: a reply the token limit cut inside a call's arguments comes
back with ``finish_reason: "length"`` and the call's partial text, never a completed call; streaming
and batch agree (docs/parsing.md, "Truncation"). Parser tables: tests/fixtures/outputs/lenient/
truncation.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tool_defs import WEATHER
from tooldialect.dialect.spec import DialectSpec
from tooldialect.engine.base import GenerationResult
from tooldialect.frontend.response import finish_reason
from tooldialect.handler import ToolChatHandler
from tooldialect.parse import StreamParser, parse_output

CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city":'


def _stream(text: str, *, truncated: bool, size: int) -> tuple[list[dict[str, Any]], Any]:
    parser = StreamParser(DialectSpec.builtin("hermes"), tools=[WEATHER])
    deltas: list[dict[str, Any]] = []
    for i in range(0, len(text), size):
        deltas += parser.feed(text[i : i + size])
    deltas += parser.close(truncated=truncated)
    return deltas, parser.result


@pytest.mark.parametrize("size", [1, 3, 1000], ids=["1", "3", "whole"])
def test_cut_call_keeps_its_partial_text_in_stream_and_batch(size: int) -> None:
    batch = parse_output(CUT, DialectSpec.builtin("hermes"), tools=[WEATHER], truncated=True)
    (call,) = batch.tool_calls
    assert call.truncated and call.name == "get_weather"
    assert call.arguments_json == '{"city":' and call.arguments == {}
    assert batch.content is None
    deltas, result = _stream(CUT, truncated=True, size=size)
    fragments = "".join(
        d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d
    )
    assert fragments == call.arguments_json
    assert [(c.name, c.arguments_json, c.truncated) for c in result.tool_calls] == [
        ("get_weather", '{"city":', True)
    ]
    assert result.content is None


def test_the_same_text_ended_by_the_model_is_healed_as_before() -> None:
    # without truncation (the model itself stopped) the call is kept, healed from its safe point
    result = parse_output(CUT, DialectSpec.builtin("hermes"), tools=[WEATHER])
    assert [c.truncated for c in result.tool_calls] == [False]
    assert json.loads(result.tool_calls[0].arguments_json) == result.tool_calls[0].arguments


@pytest.mark.parametrize(
    ("calls", "engine", "expected"),
    [
        (True, "length", "length"),
        (False, "length", "length"),
        (True, "stop", "tool_calls"),
        (False, "stop", "stop"),
    ],
    ids=["cut-with-calls", "cut-text", "calls", "text"],
)
def test_finish_reason_length_wins(calls: bool, engine: Any, expected: str) -> None:
    assert finish_reason(calls, GenerationResult(finish_reason=engine)) == expected


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(
        str(qwen_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=ToolChatHandler()
    )
    yield llm
    llm.close()


def _collect(chunks: Iterator[dict[str, Any]]) -> tuple[str | None, list[tuple[str, str]], str]:
    content: str | None = None
    calls: dict[int, list[str]] = {}
    finish = ""
    for chunk in chunks:
        choice = chunk["choices"][0]
        finish = choice["finish_reason"] or finish
        delta = choice["delta"]
        if delta.get("content"):
            content = (content or "") + delta["content"]
        for tc in delta.get("tool_calls") or []:
            slot = calls.setdefault(tc["index"], ["", ""])
            if "id" in tc:
                slot[0] = tc["function"]["name"]
            slot[1] += tc["function"].get("arguments", "")
    return content, [(n, a) for n, a in (calls[i] for i in sorted(calls))], finish


@pytest.mark.model
def test_qwen_cut_by_max_tokens_is_length_never_a_complete_call(qwen: Any) -> None:
    """Measured in issue 7: Qwen2.5-Coder-0.5B, tool_choice="required", max_tokens=18 stops
    inside the arguments; it used to come back as get_weather({}) with finish "tool_calls"."""
    request: dict[str, Any] = {
        "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "temperature": 0,
        "max_tokens": 18,
    }
    whole = qwen.create_chat_completion(**request)
    choice = whole["choices"][0]
    assert choice["finish_reason"] == "length"
    message = choice["message"]
    calls = message.get("tool_calls") or []
    assert whole["usage"]["completion_tokens"] == 18
    # greedy: the call is begun (name and "{" read) when the limit cuts it
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    for call in calls:
        # a cut call keeps its partial arguments: it must not read as a complete JSON object
        with pytest.raises(json.JSONDecodeError):
            json.loads(call["function"]["arguments"])
    content, pairs, finish = _collect(qwen.create_chat_completion(**request, stream=True))
    assert finish == "length"
    assert content == message["content"]
    assert pairs == [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
