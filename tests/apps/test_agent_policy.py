"""The agent for long runs, on a scripted model: loop breaker, approval hook, step events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_script import ScriptedLlama, calls, text
from tooldialect import (
    Agent,
    AgentEvent,
    Allow,
    CallFinished,
    Deny,
    FinalAnswer,
    PendingCall,
    StepStarted,
    ToolResult,
    ToolSpecError,
    tool,
)


class Counter:
    """A tool with a side effect: every run is counted."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

        @tool
        def send(to: str, amount: int) -> str:
            """Send money."""
            self.runs.append({"to": to, "amount": amount})
            return f"sent {amount} to {to} (transfer #{len(self.runs)})"

        self.tool = send


def finished(result: Any) -> list[CallFinished]:
    return [c for s in result.steps for c in s.calls]


def test_an_identical_call_is_not_run_twice_and_the_model_gets_the_earlier_result() -> None:
    bank = Counter()
    llm = ScriptedLlama(
        [
            calls(("send", {"to": "ann", "amount": 5})),
            # the same call, other key order and spacing: still the same call
            calls(("send", '{ "amount": 5,  "to": "ann" }')),
            calls(("send", {"to": "ann", "amount": 6})),  # other arguments: runs
            text("done"),
        ]
    )
    result = Agent(llm, tools=[bank.tool]).run("pay ann")
    assert result.outcome == "answer" and result.answer == "done"
    assert bank.runs == [{"to": "ann", "amount": 5}, {"to": "ann", "amount": 6}]
    first, repeat, other = finished(result)
    assert first.error is None and other.error is None
    assert repeat.error == "repeated_call"
    assert "transfer #1" in repeat.result and "step 1" in repeat.result
    assert "Not run" in repeat.result
    tool_messages = [m for m in result.messages if m["role"] == "tool"]
    assert tool_messages[1]["content"] == repeat.result


def test_repeats_past_the_loop_limit_end_the_run_with_a_stated_outcome() -> None:
    bank = Counter()
    same = calls(("send", {"to": "bob", "amount": 1}))
    llm = ScriptedLlama([same] * 6 + [text("never reached")])
    result = Agent(llm, tools=[bank.tool], max_steps=8, loop_limit=2).run("pay bob")
    assert result.outcome == "loop" and result.answer is None
    assert len(bank.runs) == 1
    assert len(result.steps) == 3  # one run, two refusals, then the end
    assert result.reason is not None and "2 repeated calls" in result.reason
    assert 'send({"to": "bob", "amount": 1})' in result.reason
    assert [c.error for c in finished(result)] == [None, "repeated_call", "repeated_call"]


def test_answer_at_limit_asks_for_an_answer_after_the_loop_breaker_trips() -> None:
    bank = Counter()
    same = calls(("send", {"to": "bob", "amount": 1}))
    llm = ScriptedLlama([same, same, text("I sent it once.")])
    agent = Agent(llm, tools=[bank.tool], loop_limit=1, answer_at_limit=True)
    result = agent.run("pay bob")
    assert result.outcome == "loop" and result.answer == "I sent it once."
    assert [r["tool_choice"] for r in llm.requests] == ["auto", "auto", "none"]
    assert len(bank.runs) == 1


def test_identical_calls_in_one_turn_run_once_and_the_limit_can_be_raised_or_lifted() -> None:
    bank = Counter()
    pair = calls(("send", {"to": "cy", "amount": 2}), ("send", {"to": "cy", "amount": 2}))
    result = Agent(ScriptedLlama([pair, text("ok")]), tools=[bank.tool]).run("x")
    assert len(bank.runs) == 1
    # the repeat inside one reply is cut (issue 29): the step keeps one call
    assert [c.error for c in finished(result)] == [None]
    assert len(result.messages[1]["tool_calls"]) == 1

    bank = Counter()
    llm = ScriptedLlama([pair, pair, text("ok")])
    result = Agent(llm, tools=[bank.tool], max_identical_calls=3).run("x")
    assert len(bank.runs) == 3  # the fourth identical call is refused
    assert [c.error for c in finished(result)] == [None, None, None, "repeated_call"]

    bank = Counter()
    llm = ScriptedLlama([pair, pair, text("ok")])
    result = Agent(llm, tools=[bank.tool], max_identical_calls=None).run("x")
    assert len(bank.runs) == 4 and result.outcome == "answer"


def test_limits_are_validated() -> None:
    with pytest.raises(ToolSpecError, match="max_identical_calls"):
        Agent(ScriptedLlama([]), max_identical_calls=0)
    with pytest.raises(ToolSpecError, match="loop_limit"):
        Agent(ScriptedLlama([]), loop_limit=0)


def test_the_approval_hook_sees_each_call_and_may_deny_it() -> None:
    bank = Counter()
    seen: list[PendingCall] = []

    def approve(call: PendingCall) -> Any:
        seen.append(call)
        return Deny("over the daily limit") if call.parsed["amount"] > 100 else True

    llm = ScriptedLlama(
        [
            calls(("send", {"to": "dee", "amount": 500}), ("send", {"to": "dee", "amount": 50})),
            calls(("send", {"to": "dee", "amount": 500})),  # asking again is a repeat
            text("sent 50"),
        ]
    )
    result = Agent(llm, tools=[bank.tool], approve=approve).run("pay dee")
    assert bank.runs == [{"to": "dee", "amount": 50}]
    assert [(c.step, c.name, json.loads(c.arguments)["amount"]) for c in seen] == [
        (1, "send", 500),
        (1, "send", 50),
    ]
    denied, ran, again = finished(result)
    assert denied.error == "denied" and "over the daily limit" in denied.result
    assert "did not allow" in denied.result
    assert ran.error is None
    assert again.error == "repeated_call"  # the hook was not asked a second time
    assert len(seen) == 2


def test_the_approval_hook_may_edit_the_arguments_and_the_model_is_told() -> None:
    bank = Counter()

    def cap(call: PendingCall) -> Any:
        args = call.parsed
        return Allow(arguments={**args, "amount": min(args["amount"], 10)})

    llm = ScriptedLlama([calls(("send", {"to": "eve", "amount": 99})), text("ok")])
    result = Agent(llm, tools=[bank.tool], approve=cap).run("pay eve")
    assert bank.runs == [{"to": "eve", "amount": 10}]
    (call,) = finished(result)
    assert json.loads(call.arguments) == {"to": "eve", "amount": 10}
    assert call.requested_arguments is not None
    assert json.loads(call.requested_arguments) == {"to": "eve", "amount": 99}
    assert "changed by the user" in call.result and "sent 10 to eve" in call.result
    # the transcript keeps what the model wrote (its reply memory must match)
    assistant = next(m for m in result.messages if m.get("tool_calls"))
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["amount"] == 99


def test_a_failing_or_confused_hook_never_runs_the_call() -> None:
    bank = Counter()

    def broken(call: PendingCall) -> Any:
        raise RuntimeError("policy service down")

    llm = ScriptedLlama([calls(("send", {"to": "fay", "amount": 1})), text("ok")])
    result = Agent(llm, tools=[bank.tool], approve=broken).run("x")
    assert bank.runs == []
    (call,) = finished(result)
    assert call.error == "denied" and "policy service down" in call.result

    llm = ScriptedLlama([calls(("send", {"to": "fay", "amount": 1})), text("ok")])
    with pytest.raises(ToolSpecError, match="approval hook returned 'yes'"):
        Agent(llm, tools=[bank.tool], approve=lambda c: "yes").run("x")  # type: ignore[arg-type,return-value]
    assert bank.runs == []


def test_on_event_sees_every_event_of_run_as_it_happens() -> None:
    bank = Counter()
    llm = ScriptedLlama([calls(("send", {"to": "gus", "amount": 3})), text("ok")])
    events: list[AgentEvent] = []
    result = Agent(llm, tools=[bank.tool]).run("x", on_event=events.append)
    assert isinstance(events[-1], FinalAnswer) and events[-1].result is result
    assert [e.step for e in events if isinstance(e, StepStarted)] == [1, 2]
    assert [type(e).__name__ for e in events].count("CallFinished") == 1


def test_a_tool_result_sets_the_text_the_error_code_and_keeps_its_value() -> None:
    picture = object()

    @tool
    def snapshot(camera: str) -> ToolResult:
        """Take a picture."""
        if camera == "broken":
            return ToolResult("Error: camera offline", is_error=True, error="offline")
        return ToolResult("[image: kept for the caller]", media=(picture,))

    llm = ScriptedLlama(
        [calls(("snapshot", {"camera": "broken"}), ("snapshot", {"camera": "door"})), text("ok")]
    )
    result = Agent(llm, tools=[snapshot]).run("x")
    bad, good = finished(result)
    assert (bad.error, bad.result) == ("offline", "Error: camera offline")
    assert good.error is None and good.result == "[image: kept for the caller]"
    assert isinstance(good.value, ToolResult) and good.value.media == (picture,)
