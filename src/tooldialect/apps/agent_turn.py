"""One streamed model reply of an ``Agent`` step, reassembled: content, reasoning, calls.

Small models repeat one call in parallel (a hundred identical calls in one reply were seen):
``Turn.repeated`` says so as soon as a repeat is complete, and ``Turn.calls`` keeps each
distinct call once.

Whatever the model wrote, :meth:`Turn.message` is a message the next request accepts: a reply
cut at ``max_tokens`` inside a call (``Turn.cut``) keeps its text and none of its calls, and a
call whose arguments are not a JSON object is written with ``{}`` (its tool result quotes what
the model wrote). The model's own text reaches the transcript only in a form the request
validation of the next step takes, so a run never fails on its own history.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .agent_events import (
    AgentEvent,
    ArgumentsDelta,
    CallFinished,
    CallStarted,
    ReasoningDelta,
    TextDelta,
)
from .agent_policy import call_key
from .python_tool import ToolArgumentsError, decode_arguments

__all__ = ["Turn", "arguments_complete"]

CUT = "cut"
"""``CallFinished.error`` of a call in a reply cut at ``max_tokens`` inside a call (not run)."""


def arguments_complete(name: str, arguments: str) -> bool:
    """Whether ``arguments`` is a JSON object (or empty, which means ``{}``): what a request's
    history accepts, and what a call cut at ``max_tokens`` never is."""
    try:
        decode_arguments(name, arguments)
    except ToolArgumentsError:
        return False
    return True


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
        invalid carries ``invalid`` (why). A call without a name is left out."""
        seen: dict[str, int] = {}
        out = []
        for i in sorted(self._calls):
            if not self._calls[i]["name"]:
                continue  # no name: nothing to run, and a history refuses it
            key = call_key(self._calls[i]["name"], self._calls[i]["arguments"])
            seen[key] = seen.get(key, 0) + 1
            if self.max_identical is None or seen[key] <= self.max_identical:
                out.append(self._calls[i])
        return [
            {**c, "invalid": self._invalid[c["id"]]} if c["id"] in self._invalid else c for c in out
        ]

    @property
    def cut(self) -> dict[str, Any] | None:
        """The call a reply cut at ``max_tokens`` left unfinished (its arguments are not yet a
        JSON object), or ``None``. Such a reply ends the run with outcome ``length`` and none of
        its calls runs: the model did not finish deciding, and a cut call's arguments are not
        the ones it meant (``Agent.stream``). A reply cut after its calls were complete (in text
        that followed them) is not cut here: its calls run."""
        calls = self.calls
        if self.finish_reason != "length" or not calls:
            return None
        if not calls[-1]["arguments"].strip():
            return calls[-1]  # cut before its first argument: nothing shows it was done
        return next((c for c in calls if not arguments_complete(c["name"], c["arguments"])), None)

    def not_run(self) -> list[CallFinished]:
        """The events that close the calls of a reply cut inside a call: none of them ran."""
        cut_id = (self.cut or {}).get("id")
        done = []
        for call in self.calls:
            where = "inside this call" if call["id"] == cut_id else "inside a later call"
            done.append(
                CallFinished(
                    step=self.step,
                    id=call["id"],
                    name=call["name"],
                    arguments=call["arguments"],
                    result=f"Not run: the reply was cut at max_tokens {where}.",
                    error=CUT,
                )
            )
        return done

    def cut_reason(self) -> str:
        """``AgentResult.reason`` for a reply cut inside a call."""
        cut = self.cut or {"name": "?", "arguments": ""}
        written = cut["arguments"]
        shown = written if len(written) <= 80 else f"{written[:80]}..."
        return (
            f"the last reply was cut at max_tokens inside a call to {cut['name']!r} (its "
            f"arguments so far: {shown!r}); no call of that reply was run. Raise max_tokens, "
            "or ask for shorter arguments"
        )

    def message(self) -> dict[str, Any]:
        """The assistant message, shaped as the handler's own (so its reply memory matches),
        and always one the next request accepts: a reply cut inside a call keeps only its text
        (none of its calls ran, and several templates refuse a call without its results), and a
        call whose arguments are not a JSON object is written with ``{}`` (the history takes
        only objects; its tool result quotes the text the model wrote)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        calls = [] if self.cut is not None else self.calls
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["arguments"]
                        if arguments_complete(c["name"], c["arguments"])
                        else "{}",
                    },
                }
                for c in calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        return message
