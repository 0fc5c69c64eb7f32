"""One streamed model reply of an ``Agent`` step, reassembled: content, reasoning, calls.

Small models repeat one call in parallel (a hundred identical calls in one reply were seen):
``Turn.repeated`` says so as soon as a repeat is complete, and ``Turn.calls`` keeps each
distinct call once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .agent_events import AgentEvent, ArgumentsDelta, CallStarted, ReasoningDelta, TextDelta
from .agent_policy import call_key

__all__ = ["Turn"]


class Turn:
    """Reassembles one streamed reply and turns its deltas into events."""

    def __init__(self, step: int, *, max_identical: int | None = 1) -> None:
        self.step = step
        self.max_identical = max_identical
        """How often one call may appear in the reply (``None``: no limit)."""
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._invalid: dict[str, str] = {}
        """Call id -> why its arguments fail the schema (the reply's ``invalid_tool_calls``)."""
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.repeated = False
        """A call of this reply repeats an earlier one of the same reply (name and arguments)
        more often than ``max_identical`` allows."""

    def feed(self, chunk: Mapping[str, Any]) -> Iterator[AgentEvent]:
        if chunk.get("usage"):
            self.usage = dict(chunk["usage"])
        for choice in chunk.get("choices") or []:
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                self.reasoning.append(delta["reasoning_content"])
                yield ReasoningDelta(self.step, delta["reasoning_content"])
            if delta.get("content"):
                self.content.append(delta["content"])
                yield TextDelta(self.step, delta["content"])
            for part in delta.get("tool_calls") or []:
                yield from self._call_delta(part)
            for bad in delta.get("invalid_tool_calls") or []:
                self._invalid[str(bad.get("id"))] = str(
                    bad.get("error") or "invalid for its schema"
                )

    def _call_delta(self, part: Mapping[str, Any]) -> Iterator[AgentEvent]:
        if self.repeated:  # decoding stops at the repeat: a call begun after it is cut, not run
            return
        index = int(part.get("index", len(self._calls)))
        fn = part.get("function") or {}
        call = self._calls.get(index)
        if call is None:
            self._check_repeat()
            if self.repeated:
                return
            cid = part.get("id") or f"call_{self.step}_{index}"
            call = self._calls[index] = {"id": cid, "name": fn.get("name") or "", "arguments": ""}
            yield CallStarted(self.step, index, cid, call["name"])
        elif fn.get("name"):
            call["name"] += fn["name"]
        if fn.get("arguments"):
            call["arguments"] += fn["arguments"]
            yield ArgumentsDelta(self.step, index, call["id"], fn["arguments"])

    def _check_repeat(self) -> None:
        """A new call starts, so the latest one is complete: does it repeat an earlier one?"""
        if self.max_identical is None or len(self._calls) < 2:
            return
        keys = [call_key(c["name"], c["arguments"]) for _, c in sorted(self._calls.items())]
        self.repeated = self.repeated or keys.count(keys[-1]) > self.max_identical

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The calls in order, each distinct call at most ``max_identical`` times (small models
        repeat one call in parallel, sometimes a hundred times); one the front end reported
        invalid carries ``invalid`` (why)."""
        seen: dict[str, int] = {}
        out = []
        for i in sorted(self._calls):
            key = call_key(self._calls[i]["name"], self._calls[i]["arguments"])
            seen[key] = seen.get(key, 0) + 1
            if self.max_identical is None or seen[key] <= self.max_identical:
                out.append(self._calls[i])
        return [
            {**c, "invalid": self._invalid[c["id"]]} if c["id"] in self._invalid else c for c in out
        ]

    def message(self) -> dict[str, Any]:
        """The assistant message, shaped as the handler's own (so its reply memory matches)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in self.calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        return message
