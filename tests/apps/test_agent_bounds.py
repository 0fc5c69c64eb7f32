"""What the agent bounds for small models (issue 29 s4): a call repeated in parallel within one
reply is cut to one and decoding stops; a reply that is a call written as text is no answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_script import ScriptedLlama, calls, text
from conftest import ROOT
from tooldialect import Agent, DialectSpec, tool
from tooldialect.handler import ToolChatHandler
from tooldialect.models import MODELS


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


class Endless(ScriptedLlama):
    """The first reply repeats one call for ever, as a 0.5B model did (~100 calls)."""

    def __init__(self) -> None:
        super().__init__([text("Sunny.")])
        self.chunks_sent = 0
        self.closed = False

    def create_chat_completion(self, **request: Any) -> Any:
        if not self.requests:
            self.requests.append(request)
            return self._forever()
        return super().create_chat_completion(**request)

    def _forever(self) -> Iterator[dict[str, Any]]:
        args = json.dumps({"city": "Paris"})
        try:
            for index in range(10_000):
                head = {"index": index, "id": f"c{index}", "type": "function"}
                fn = {"name": "lookup", "arguments": args}
                self.chunks_sent += 1
                yield {
                    "choices": [{"index": 0, "delta": {"tool_calls": [{**head, "function": fn}]}}]
                }
        finally:
            self.closed = True


def test_a_call_repeated_in_parallel_is_cut_to_one_and_decoding_stops() -> None:
    llm = Endless()
    result = Agent(llm, tools=[lookup]).run("Weather in Paris?")
    assert result.outcome == "answer" and result.answer == "Sunny."
    assert llm.closed and llm.chunks_sent < 5  # not ten thousand
    assert len(result.messages[1]["tool_calls"]) == 1
    assert [c.result for s in result.steps for c in s.calls] == ["Paris: sunny"]


class CutAfterRepeat(ScriptedLlama):
    """A repeat, then a call whose head streams before its arguments (Qwen2.5-Coder-0.5B under
    docs/mcp.md's snippet): decoding stops at that head."""

    def __init__(self) -> None:
        super().__init__([text("Sunny.")])

    def create_chat_completion(self, **request: Any) -> Any:
        if self.requests:
            return super().create_chat_completion(**request)
        self.requests.append(request)
        paris = {"name": "lookup", "arguments": json.dumps({"city": "Paris"})}
        parts = [
            {"index": 0, "id": "c0", "type": "function", "function": paris},
            {"index": 1, "id": "c1", "type": "function", "function": paris},
            {"index": 2, "id": "c2", "type": "function", "function": {"name": "lookup"}},
            {"index": 2, "function": {"arguments": json.dumps({"city": "Rome"})}},
        ]
        return iter([{"choices": [{"index": 0, "delta": {"tool_calls": [p]}}]} for p in parts])


def test_a_call_begun_after_a_repeat_is_cut_and_never_runs() -> None:
    result = Agent(CutAfterRepeat(), tools=[lookup]).run("Weather in Paris?")
    assert [(c.arguments, c.error) for c in result.steps[0].calls] == [('{"city": "Paris"}', None)]
    assert len(result.messages[1]["tool_calls"]) == 1


def test_distinct_parallel_calls_all_run() -> None:
    llm = ScriptedLlama([calls(("lookup", {"city": "A"}), ("lookup", {"city": "B"})), text("ok")])
    result = Agent(llm, tools=[lookup]).run("x")
    assert [c.result for s in result.steps for c in s.calls] == ["A: sunny", "B: sunny"]


class HermesLlama(ScriptedLlama):
    """A scripted model behind a ToolChatHandler whose dialect is hermes."""

    chat_format = None

    def __init__(self, replies: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(replies)
        self.chat_handler = ToolChatHandler()
        setup = type("Setup", (), {"spec": DialectSpec.builtin("hermes")})()
        monkeypatch.setattr(ToolChatHandler, "setup", lambda _self, _llama: setup)
        llm = self

        def complete(_self: Any, *, llama: Any, **request: Any) -> Any:
            return llm.create_chat_completion(**request)

        monkeypatch.setattr(ToolChatHandler, "__call__", complete)


def test_a_call_written_as_text_at_the_last_step_is_no_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = '<tool_call>\n{"name": "lookup", "arguments": {"city": "Paris"}}\n</tool_call>'
    llm = HermesLlama([calls(("lookup", {"city": "Oslo"})), text(raw)], monkeypatch)
    result = Agent(llm, tools=[lookup], max_steps=2, answer_at_limit=True).run("x")
    assert llm.requests[-1]["tool_choice"] == "none"
    assert result.outcome == "max_steps" and result.answer is None
    assert result.reason is not None and "call to lookup written as text" in result.reason


def test_prose_at_the_last_step_stays_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = HermesLlama([calls(("lookup", {"city": "Oslo"})), text("Oslo is sunny.")], monkeypatch)
    result = Agent(llm, tools=[lookup], max_steps=2, answer_at_limit=True).run("x")
    assert result.answer == "Oslo is sunny."


def test_examples_name_their_model() -> None:
    examples = ROOT / "examples"
    for name in ("agent.py", "mcp_agent.py"):
        doc = (examples / name).read_text(encoding="utf-8")
        assert "Meant for" in doc and any(m.about.split(":")[0] in doc for m in MODELS.values())
