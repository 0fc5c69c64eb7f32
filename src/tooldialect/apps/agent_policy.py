"""What the agent decides before it runs a call: the loop breaker and the approval hook.

**Loop breaker.** Small models repeat calls, and a tool with side effects (an MCP tool that
writes, sends or buys) must not run ten times. A call is identified by its function name and its
arguments as JSON values (key order and whitespace do not count). It runs at most
``max_identical_calls`` times per run; a further identical call is not run, and the model gets
the earlier result with a note that says so. After ``loop_limit`` such refusals the run ends
with outcome ``loop``.

**Approval.** ``approve(call)`` sees each :class:`PendingCall` before it runs and returns
``True`` (or ``None``, or ``Allow()``) to run it, ``False`` or ``Deny("why")`` to refuse it (the
model is told, with the reason), or ``Allow(arguments={...})`` to run it with other arguments
(the model is told they were changed). :func:`ask_before` is a ready hook that asks on the
terminal and denies a call it must ask about when nobody can answer (stdin is not a terminal).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..errors import ToolSpecError
from ..frontend.steering import call_key as steering_call_key

__all__ = [
    "Allow",
    "ApprovalHook",
    "Decision",
    "Deny",
    "PendingCall",
    "RepeatGuard",
    "ask_before",
    "call_key",
    "decide",
]


@dataclass(frozen=True)
class PendingCall:
    """A call the model made, before it runs."""

    step: int
    """The model call it belongs to (1-based)."""
    id: str
    """The call id."""
    name: str
    """The function called."""
    arguments: str
    """The JSON arguments the model wrote."""

    @property
    def parsed(self) -> Any:
        """The arguments as JSON values (``None`` when they are not valid JSON)."""
        try:
            return json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError:
            return None


@dataclass(frozen=True)
class Allow:
    """Run the call; with ``arguments``, run it with these instead of the model's."""

    arguments: Mapping[str, Any] | str | None = None


@dataclass(frozen=True)
class Deny:
    """Do not run the call; ``reason`` is told to the model."""

    reason: str = ""


Decision = Allow | Deny | bool | None
"""What an approval hook returns."""

ApprovalHook = Callable[[PendingCall], Decision]
"""``approve(call) -> Decision``."""


def decide(hook: ApprovalHook | None, call: PendingCall) -> Allow | Deny:
    """The hook's answer as ``Allow`` or ``Deny``; a hook that raises denies (with its error)."""
    if hook is None:
        return Allow()
    try:
        answer = hook(call)
    except Exception as exc:  # a broken hook must not run a call nobody approved
        return Deny(f"the approval check failed ({type(exc).__name__}: {exc})")
    if answer is None or answer is True:
        return Allow()
    if answer is False:
        return Deny()
    if isinstance(answer, (Allow, Deny)):
        return answer
    raise ToolSpecError(
        f"the approval hook returned {answer!r} for {call.name!r}; return True, False, None, "
        "Allow(arguments=...) or Deny(reason)"
    )


def ask_before(
    when: Callable[[PendingCall], bool] = lambda call: True,
    *,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
) -> ApprovalHook:
    """An approval hook that asks ``[y/N]`` on the terminal before each call ``when`` selects (a
    tool with side effects: booking, sending, writing); other calls run. With nobody to answer
    (``stdin`` is not a terminal: piped, a service, a test) a selected call is **denied**, since
    approving by default would run side effects nobody saw."""

    def hook(call: PendingCall) -> Decision:
        if not when(call):
            return True
        source = stdin if stdin is not None else sys.stdin
        sink = out if out is not None else sys.stdout
        sink.write(f"\n   run {call.name}({call.arguments})? [y/N] ")
        sink.flush()
        if not source.isatty():
            sink.write("no (stdin is not a terminal: nobody can approve it)\n")
            return Deny("nobody could approve it (stdin is not a terminal)")
        answer = source.readline().strip().lower()
        return True if answer in ("y", "yes") else Deny("the user said no")

    return hook


def edited_arguments(allow: Allow) -> str | None:
    """The arguments an ``Allow`` replaces the model's with, as JSON text."""
    if allow.arguments is None:
        return None
    if isinstance(allow.arguments, str):
        return allow.arguments
    return json.dumps(dict(allow.arguments), ensure_ascii=False)


def call_key(name: str, arguments: str) -> str:
    """One call's identity: its name and its arguments as canonical JSON, as the front end's
    steering compares calls (``frontend.steering.call_key``); arguments that are no JSON
    object compare as written."""
    key = steering_call_key(name, arguments)
    return f"{name}\x00{key[1] if key is not None else arguments.strip()}"


@dataclass
class _Seen:
    count: int
    step: int
    id: str
    result: str | None  # None until the call of this turn has run


class RepeatGuard:
    """Counts identical calls in one run and refuses the ones past the limit."""

    def __init__(self, *, max_identical_calls: int | None, loop_limit: int | None) -> None:
        self.max_identical_calls = max_identical_calls
        self.loop_limit = loop_limit
        self.refused = 0
        """Calls not run because they repeated earlier ones."""
        self.last_refused: str | None = None
        """The name and arguments of the latest refused call."""
        self._seen: dict[str, _Seen] = {}

    def check(self, call: PendingCall) -> str | None:
        """``None`` when the call may run (it is counted now); otherwise the text the model gets
        instead."""
        if self.max_identical_calls is None:
            return None
        key = call_key(call.name, call.arguments)
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = _Seen(1, call.step, call.id, None)
            return None
        if seen.count < self.max_identical_calls:
            seen.count += 1
            seen.step, seen.id, seen.result = call.step, call.id, None
            return None
        self.refused += 1
        self.last_refused = f"{call.name}({call.arguments})"
        times = "once" if seen.count == 1 else f"{seen.count} times"
        if seen.result is None:
            earlier = f"Its result is the one of call {seen.id} of this turn."
        else:
            earlier = f"Its result was: {seen.result}"
        return (
            f"Not run: {call.name} was already called with exactly these arguments {times} in "
            f"this conversation (last in step {seen.step}), and repeating it changes nothing. "
            f"{earlier}\nUse that result, call with different arguments, or give your answer."
        )

    def record(self, call: PendingCall, result: str) -> None:
        """Keep the result of a call that :meth:`check` let through (ran, failed or denied)."""
        seen = self._seen.get(call_key(call.name, call.arguments))
        if seen is not None and seen.id == call.id:
            seen.result = result

    @property
    def tripped(self) -> bool:
        """The run must end: ``loop_limit`` repeats were refused."""
        return self.loop_limit is not None and self.refused >= self.loop_limit
