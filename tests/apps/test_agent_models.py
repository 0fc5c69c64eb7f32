"""The agent on the real small models: the polyfill path (SmolLM2) and a native dialect (Qwen).

Each step re-sends the whole transcript; the handler must decode only what is new.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tooldialect
from tooldialect import Agent, CallFinished, CallStarted, FinalAnswer, StepFinished, tool

pytestmark = pytest.mark.model

CITY_WEATHER = {"paris": "18 C, cloudy", "tokyo": "25 C, sunny"}


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name, e.g. Paris.
    """
    return CITY_WEATHER.get(city.strip().lower(), f"no data for {city}")


def load(path: Path, **options: Any) -> Any:
    from llama_cpp import Llama

    handler = tooldialect.ToolChatHandler(parallel_tool_calls=False, **options)
    return Llama(str(path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler)


def run_two_steps(llm: Any, tool_choice: str) -> tuple[list[Any], Any]:
    agent = Agent(
        llm,
        tools=[get_weather],
        system="You are a helpful assistant.",
        max_steps=2,
        tool_choice=tool_choice,
        temperature=0.0,
        max_tokens=48,
    )
    events = list(agent.stream("What is the weather in Paris?"))
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    return events, final.result


def check_transcript(events: list[Any], result: Any) -> None:
    started = [e for e in events if isinstance(e, CallStarted)]
    finished = [e for e in events if isinstance(e, CallFinished)]
    assert started and started[0].name == "get_weather"
    assert finished[0].error is None and finished[0].result == "18 C, cloudy"
    assert [e.step.number for e in events if isinstance(e, StepFinished)] == [1, 2]
    call = result.messages[2]["tool_calls"][0]
    assert result.messages[3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "name": "get_weather",
        "content": "18 C, cloudy",
    }
    assert result.outcome in ("answer", "max_steps")  # a 0.5B model may call again
    assert len(result.steps) == 2


def test_polyfill_agent_on_smollm2(smollm2_path: Path) -> None:
    llm = load(smollm2_path)
    events, result = run_two_steps(llm, "required")
    check_transcript(events, result)
    first, second = result.steps
    # the second step re-used the whole first prompt from the KV cache (the model's reply is
    # re-rendered verbatim; grammar-constrained tokens may re-tokenize a few tokens differently)
    assert second.usage["prompt_tokens_details"]["cached_tokens"] >= first.usage["prompt_tokens"]
    assert second.decoded_prompt_tokens == llm.chat_handler.last_result.last_prompt_eval_tokens
    assert (
        second.decoded_prompt_tokens < second.usage["prompt_tokens"] - first.usage["prompt_tokens"]
    )


@pytest.mark.parametrize("steer", [False, True], ids=["as-written", "steered"])
def test_native_agent_on_qwen_decodes_only_the_new_suffix(qwen_path: Path, steer: bool) -> None:
    """As written, the fenced call re-renders as the model wrote it: only the new suffix is
    decoded. Steered, the call rewritten as ``<tool_call>`` (spelled in pieces by this model
    under the grammar, tokenized whole in the next prompt) is decoded again once."""
    llm = load(qwen_path, steer_calls=steer)
    events, result = run_two_steps(llm, "auto")
    check_transcript(events, result)
    first, second = result.steps
    reply = first.usage["completion_tokens"] - first.usage.get("completion_tokens_details", {}).get(
        "rejected_prediction_tokens", 0
    )
    new_suffix = second.usage["prompt_tokens"] - first.usage["prompt_tokens"] - reply
    assert second.decoded_prompt_tokens == llm.chat_handler.last_result.last_prompt_eval_tokens
    bar = reply + 5 if steer else 5  # the benchmark's bar
    assert second.decoded_prompt_tokens <= new_suffix + bar
