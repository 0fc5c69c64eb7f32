"""Target 3 for ``tooldialect.Agent``: the multi-turn workload run by the agent loop.

The same scripted user turns, tools and results as ``speed.multi_turn``, but the tools are Python
functions and the agent makes the requests; one row per model call, in ``multi_turn``'s shape, so
the report's table shows it beside the hand-written loop.
"""

from __future__ import annotations

from typing import Any, Literal

from bench import workload
from bench.common import make_llama, quiet_stderr


def _tools() -> list[Any]:
    from tooldialect import tool

    @tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Current weather for a city."""
        return workload.tool_result("get_weather")

    @tool
    def get_time(city: str) -> str:
        """Current local time in a city."""
        return workload.tool_result("get_time")

    @tool
    def convert_currency(amount: float, source: str, target: str) -> str:
        """Convert an amount between currencies."""
        return workload.tool_result("convert_currency")

    return [get_weather, get_time, convert_currency]


def agent_multi_turn(
    *, model: str = "qwen", max_tokens: int = 128, steps: int = 6
) -> list[dict[str, Any]]:
    """``steps`` model calls over the scripted user turns (at most 2 calls a turn)."""
    from tooldialect import Agent, FinalAnswer, StepFinished

    with quiet_stderr():
        llm = make_llama(model, "tooldialect", n_ctx=4096)
    agent = Agent(
        llm,
        tools=_tools(),
        system=workload.AGENT_SYSTEM["content"],
        max_steps=2,
        temperature=0.0,
        max_tokens=max_tokens,
    )
    user_turns = [*workload.AGENT_USER_TURNS, "Thanks. Anything else?", "Go on."]
    messages: list[dict[str, Any]] = []
    cached = 0  # tokens the KV cache held after the previous request
    rows: list[dict[str, Any]] = []
    while len(rows) < steps and user_turns:
        messages = [*messages, {"role": "user", "content": user_turns.pop(0)}]
        for event in agent.stream(messages):
            if isinstance(event, FinalAnswer):
                messages = event.result.messages  # the next user turn continues the transcript
            if not isinstance(event, StepFinished) or len(rows) >= steps:
                continue
            step = event.step
            usage = step.usage
            decoded = llm.chat_handler.last_result.last_prompt_eval_tokens
            suffix = usage["prompt_tokens"] - cached if rows else usage["prompt_tokens"]
            rows.append(
                {
                    "turn": len(rows) + 1,
                    "prompt_tokens": usage["prompt_tokens"],
                    "new_suffix": suffix,
                    "decoded": decoded,
                    "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"],
                    "excess": decoded - suffix,
                    "completion_tokens": usage["completion_tokens"],
                    "calls": [c.name for c in step.calls],
                    "model_seconds": round(step.model_seconds, 3),
                }
            )
            cached = int(llm.n_tokens)
    return rows
