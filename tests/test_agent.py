"""The agent loop on a scripted model: calls, results, failures, events, limits."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

# `X as X` re-exports: test_agent_outcomes.py still imports these from here; once it imports
# agent_script, the aliases go and this module moves to tests/apps
from agent_script import Reply as Reply
from agent_script import ScriptedLlama as ScriptedLlama
from agent_script import add as add
from agent_script import calls as calls
from agent_script import text as text
from tooldialect import (
    Agent,
    ArgumentsDelta,
    CallFinished,
    CallStarted,
    FinalAnswer,
    ReasoningDelta,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolSpecError,
    tool,
)
from tooldialect.apps.agent import TOOL_ERROR_HINT


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def test_runs_calls_until_an_answer_and_keeps_the_transcript() -> None:
    llm = ScriptedLlama([calls(("add", {"a": 2, "b": 3})), text("It is 5.")])
    result = Agent(llm, tools=[add], system="Be brief.").run("What is 2+3?")
    assert result.outcome == "answer" and result.answer == "It is 5."
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = result.messages[2]["tool_calls"][0]
    assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert result.messages[3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "name": "add",
        "content": "5",
    }
    # the second request carried the call and its result, and the tools every time
    assert llm.requests[1]["messages"] == result.messages[:4]
    assert all(r["tools"] == [add.to_openai()] and r["stream"] for r in llm.requests)
    assert [s.usage["prompt_tokens"] for s in result.steps] == [10, 20]
    assert [s.decoded_prompt_tokens for s in result.steps] == [4, 4]
    assert result.usage == {"prompt_tokens": 30, "completion_tokens": 10, "cached_tokens": 22}
    assert result.steps[0].calls[0].result == "5" and result.steps[1].calls == []


def test_parallel_calls_get_results_in_order_with_their_ids() -> None:
    llm = ScriptedLlama(
        [
            calls(("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2}), ("add", {"a": 3, "b": 3})),
            text("2, 4, 6"),
        ]
    )
    result = Agent(llm, tools=[add]).run("three sums")
    ids = [c["id"] for c in result.messages[1]["tool_calls"]]
    tool_msgs = result.messages[2:5]
    assert [m["tool_call_id"] for m in tool_msgs] == ids
    assert [m["content"] for m in tool_msgs] == ["2", "4", "6"]
    assert len(set(ids)) == 3


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (
            calls(("subtract", {"a": 1})),
            "unknown_tool",
            ["no tool named 'subtract'", "add, explode"],
        ),
        (calls(("add", {"a": "two", "b": 1})), "invalid_arguments", ["a:", "integer", "again"]),
        (calls(("add", '{"a": 1, "b":')), "invalid_arguments", ["not valid JSON"]),
        (calls(("add", {"a": 1})), "invalid_arguments", ["b:", "required"]),
        (
            calls(("explode", {"reason": "disk"})),
            "tool_error",
            ["RuntimeError", "boom: disk", TOOL_ERROR_HINT],
        ),
    ],
    ids=["unknown-tool", "wrong-type", "broken-json", "missing-argument", "tool-raises"],
)
def test_failures_go_back_to_the_model(reply: Reply, error: str, words: list[str]) -> None:
    llm = ScriptedLlama([reply, text("Sorry.")])
    events = list(Agent(llm, tools=[add, explode]).stream("go"))
    finished = [e for e in events if isinstance(e, CallFinished)]
    assert len(finished) == 1 and finished[0].error == error
    for word in words:
        assert word in finished[0].result
    sent = llm.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and sent["content"] == finished[0].result
    result = events[-1]
    assert isinstance(result, FinalAnswer) and result.result.outcome == "answer"


def test_max_steps_is_a_clear_outcome() -> None:
    llm = ScriptedLlama([calls(("add", {"a": i, "b": 0})) for i in range(5)])
    result = Agent(llm, tools=[add], max_steps=3).run("loop")
    assert result.outcome == "max_steps" and result.answer is None
    assert len(result.steps) == 3 and len(llm.requests) == 3
    assert result.messages[-1]["role"] == "tool"  # the last calls still ran


def test_answer_at_limit_forces_a_last_answer() -> None:
    llm = ScriptedLlama(
        [calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 1, "b": 1})), text("2")]
    )
    result = Agent(llm, tools=[add], max_steps=3, answer_at_limit=True).run("loop")
    assert [r["tool_choice"] for r in llm.requests] == ["auto", "auto", "none"]
    assert result.outcome == "max_steps" and result.answer == "2"
    one = ScriptedLlama([calls(("add", {"a": 1, "b": 1}))])
    alone = Agent(one, tools=[add], max_steps=1, answer_at_limit=True).run("x")
    assert alone.outcome == "max_steps" and alone.answer is None  # one step: the call runs


def test_length_is_reported() -> None:
    result = Agent(ScriptedLlama([text("cut he", finish="length")]), tools=[add]).run("x")
    assert result.outcome == "length" and result.answer == "cut he"


def test_tool_choice_applies_to_the_first_step_then_resets() -> None:
    llm = ScriptedLlama([calls(("add", {"a": 1, "b": 1})), text("2")])
    Agent(llm, tools=[add], tool_choice="required", temperature=0.0).run("x")
    assert [r["tool_choice"] for r in llm.requests] == ["required", "auto"]
    assert all(r["temperature"] == 0.0 for r in llm.requests)
    llm = ScriptedLlama([calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 1, "b": 1}))])
    out = Agent(llm, tools=[add], tool_choice="required", reset_tool_choice=False, max_steps=2)
    assert out.run("x").outcome == "max_steps"
    assert [r["tool_choice"] for r in llm.requests] == ["required", "required"]


def test_stream_yields_typed_events_in_order() -> None:
    llm = ScriptedLlama(
        [
            calls(("add", {"a": 20, "b": 22}), content="Let me add."),
            text("The answer is 42.", reasoning="easy"),
        ]
    )
    events = list(Agent(llm, tools=[add]).stream("sum"))
    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["StepStarted", "TextDelta"] and kinds[-1] == "FinalAnswer"
    opened = [(e.step, e.tools) for e in events if isinstance(e, StepStarted)]
    assert opened == [(1, ("add",)), (2, ("add",))]
    assert kinds.index("StepFinished") < kinds.index("StepStarted", 1)
    started = [e for e in events if isinstance(e, CallStarted)]
    assert [(e.step, e.index, e.name) for e in started] == [(1, 0, "add")]
    args = "".join(e.delta for e in events if isinstance(e, ArgumentsDelta))
    assert json.loads(args) == {"a": 20, "b": 22}
    assert kinds.index("CallStarted") < kinds.index("ArgumentsDelta") < kinds.index("CallFinished")
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "easy"
    texts = [(e.step, e.text) for e in events if isinstance(e, TextDelta)]
    assert "".join(t for s, t in texts if s == 1) == "Let me add."
    assert "".join(t for s, t in texts if s == 2) == "The answer is 42."
    steps = [e.step.number for e in events if isinstance(e, StepFinished)]
    assert steps == [1, 2]
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.result.messages[-1]["reasoning_content"] == "easy"


def test_async_tools_of_one_turn_run_concurrently() -> None:
    active = {"now": 0, "peak": 0}

    @tool
    async def fetch(key: str) -> str:
        """Fetch a key slowly."""
        active["now"] += 1
        active["peak"] = max(active["peak"], active["now"])
        await asyncio.sleep(0.05)
        active["now"] -= 1
        return key.upper()

    llm = ScriptedLlama([calls(("fetch", {"key": "a"}), ("fetch", {"key": "b"})), text("AB")])
    result = Agent(llm, tools=[fetch]).run("x")
    assert active["peak"] == 2  # both sleeps were in flight at once (no wall-clock bound: CI load)
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["A", "B"]


def test_async_tools_run_inside_a_running_loop() -> None:
    """A notebook calls ``run`` with an event loop already running in the thread."""

    @tool
    async def where() -> str:
        """Name the thread."""
        return threading.current_thread().name

    async def main() -> Any:
        llm = ScriptedLlama([calls(("where", {})), text("done")])
        return Agent(llm, tools=[where]).run("x")

    result = asyncio.run(main())
    assert result.outcome == "answer" and result.messages[2]["content"]


def test_plain_functions_become_tools_and_clashes_are_refused() -> None:
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    agent = Agent(ScriptedLlama([]), tools=[mul, add])
    assert sorted(agent.tools) == ["add", "mul"]
    with pytest.raises(ToolSpecError, match="two tools are named 'add'"):
        Agent(ScriptedLlama([]), tools=[add, add])
    with pytest.raises(ToolSpecError, match="max_steps"):
        Agent(ScriptedLlama([]), tools=[add], max_steps=0)


def test_a_conversation_continues_from_the_transcript() -> None:
    llm = ScriptedLlama([text("Hi."), text("Bye.")])
    agent = Agent(llm, system="S")
    first = agent.run("hello")
    second = agent.run([*first.messages, {"role": "user", "content": "bye"}])
    assert [m["role"] for m in second.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert "tools" not in llm.requests[0]  # no tools: a plain chat


def test_a_client_that_does_not_stream_works_too() -> None:
    llm = ScriptedLlama([calls(("add", {"a": 1, "b": 2})), text("3")], stream=False)
    result = Agent(llm, tools=[add]).run("x")
    assert result.answer == "3" and result.messages[2]["content"] == "3"
