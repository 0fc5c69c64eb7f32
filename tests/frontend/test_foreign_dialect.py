"""Issue 3: a real decoder under a dialect it was not trained on. Qwen2.5-Coder-0.5B is served
with the Qwen3-Coder XML (element) dialect and ``tool_choice="required"``: the forced grammar
must make it write that format, and the calls must parse, with arguments typed by the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.schema_check import schema_errors
from tooldialect import DialectSpec, parse_output
from tooldialect.handler import ToolChatHandler

FORECAST: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_forecast",
        "description": "Weather forecast for a city for the next days",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city", "days"],
        },
    },
}
PROMPTS = ["Forecast for Paris for 3 days?", "Will it rain in Lima this week?"]


@pytest.fixture(scope="module")
def qwen_as_qwen3_coder(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(
        str(qwen_path),
        n_threads=2,
        n_ctx=4096,
        verbose=False,
        chat_handler=ToolChatHandler(dialect="qwen3-coder"),
    )
    yield llm
    llm.close()


@pytest.mark.model
@pytest.mark.parametrize("prompt", PROMPTS, ids=["paris", "lima"])
def test_forced_element_dialect_on_real_decoder(qwen_as_qwen3_coder: Any, prompt: str) -> None:
    spec = DialectSpec.builtin("qwen3-coder")
    llm = qwen_as_qwen3_coder
    handler = llm.chat_handler
    response = llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}],
        tools=[FORECAST],
        tool_choice="required",
        temperature=0,
        max_tokens=80,
    )
    choice = response["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_forecast"
    args = json.loads(call["function"]["arguments"])
    assert schema_errors(args, FORECAST["function"]["parameters"]) == []
    assert isinstance(args["days"], int)  # typed from the schema, not the raw "3" text
    # The raw text the model wrote is the element format itself, not hermes JSON.
    raw = handler.last_result.text
    assert raw.lstrip().startswith(spec.primary.opener().strip()), raw
    assert "<parameter=city>" in raw and '"name"' not in raw, raw
    assert parse_output(raw, spec, tools=[FORECAST]).tool_calls[0].arguments == args
