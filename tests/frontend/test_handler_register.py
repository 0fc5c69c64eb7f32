"""``register()`` + ``Llama(chat_format="tooldialect")`` is the same as ``chat_handler=``: the
per-request extras and the Agent work with either (issue 29 s2)."""

from __future__ import annotations

from typing import Any

import pytest

import tooldialect
from tooldialect import Agent, ToolChatHandler, ToolSpecError
from tooldialect.handler import handler_of

pytest.importorskip("llama_cpp")


class Loaded:
    """What ``Llama(model_path=..., chat_format=...)`` leaves: no chat_handler, a chat_format."""

    def __init__(self, chat_format: str | None) -> None:
        self.chat_handler = None
        self.chat_format = chat_format

    def create_chat_completion(self, **request: Any) -> Any:
        # llama-cpp-python's fixed signature has no parallel_tool_calls
        if "parallel_tool_calls" in request:
            raise TypeError("unexpected keyword argument 'parallel_tool_calls'")
        raise AssertionError("the registered handler should have been called directly")


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = []

    def complete(self: ToolChatHandler, *, llama: Any, **request: Any) -> Any:
        requests.append({"handler": self, **request})
        reply = {"role": "assistant", "content": "done"}
        if request.get("stream"):
            return iter([{"choices": [{"index": 0, "delta": reply, "finish_reason": "stop"}]}])
        return {"choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]}

    monkeypatch.setattr(ToolChatHandler, "__call__", complete)
    return requests


def test_create_chat_completion_finds_the_registered_handler(seen: list[dict[str, Any]]) -> None:
    registered = tooldialect.register("tooldialect-test")
    llm = Loaded("tooldialect-test")
    assert handler_of(llm) is registered
    tooldialect.create_chat_completion(
        llm, messages=[{"role": "user", "content": "hi"}], enable_thinking=False
    )
    assert seen[0]["handler"] is registered and seen[0]["enable_thinking"] is False


def test_agent_with_parallel_tool_calls_on_a_registered_format(
    seen: list[dict[str, Any]],
) -> None:
    tooldialect.register("tooldialect-test")
    result = Agent(Loaded("tooldialect-test"), parallel_tool_calls=False).run("hi")
    assert result.answer == "done" and seen[0]["parallel_tool_calls"] is False


def test_a_model_without_our_handler_is_refused_by_name() -> None:
    with pytest.raises(ToolSpecError, match="chat_format='chatml'"):
        tooldialect.create_chat_completion(Loaded("chatml"), messages=[])
