"""A model that plays back scripted replies to the agent, and a tool to call: the agent tests
(tests/test_agent*.py, tests/apps/, tests/mcp/) drive ``Agent`` with it, no GGUF."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from tooldialect import tool

Reply = dict[str, Any]
"""One scripted reply: its content, reasoning, calls (name, JSON arguments) and finish."""


def text(content: str, *, reasoning: str = "", finish: str = "stop") -> Reply:
    """A reply in words (and reasoning), no call."""
    return {"content": content, "reasoning": reasoning, "calls": [], "finish": finish}


def calls(*items: tuple[str, Any], content: str = "") -> Reply:
    """A reply of calls, each ``(name, arguments)``; arguments not a string are written as JSON."""
    made = [(n, a if isinstance(a, str) else json.dumps(a)) for n, a in items]
    return {"content": content, "reasoning": "", "calls": made, "finish": "tool_calls"}


class ScriptedLlama:
    """Plays back replies as OpenAI stream chunks, cut into small pieces; records requests."""

    def __init__(self, replies: list[Reply], *, stream: bool = True) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.stream = stream

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(copy.deepcopy(request))
        reply = self.replies.pop(0)
        usage = {
            "prompt_tokens": 10 * len(self.requests),
            "completion_tokens": 5,
            "total_tokens": 10 * len(self.requests) + 5,
            "prompt_tokens_details": {"cached_tokens": 10 * len(self.requests) - 4},
        }
        if not self.stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply["content"] or None}
            if reply["calls"]:
                message["tool_calls"] = [
                    {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                    for i, (n, a) in enumerate(reply["calls"])
                ]
            return {
                "choices": [{"index": 0, "message": message, "finish_reason": reply["finish"]}],
                "usage": usage,
            }
        return self._chunks(reply, usage)

    def _chunks(self, reply: Reply, usage: dict[str, Any]) -> Iterator[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant"})
        for i in range(0, len(reply["reasoning"]), 3):
            yield chunk({"reasoning_content": reply["reasoning"][i : i + 3]})
        for i in range(0, len(reply["content"]), 3):
            yield chunk({"content": reply["content"][i : i + 3]})
        for index, (name, args) in enumerate(reply["calls"]):
            cid = f"call_{len(self.requests)}_{index}"
            head = {"index": index, "id": cid, "type": "function"}
            yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
            for i in range(0, len(args), 4):
                part = {"index": index, "function": {"arguments": args[i : i + 4]}}
                yield chunk({"tool_calls": [part]})
        last = chunk({}, reply["finish"])
        last["usage"] = usage
        yield last


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
