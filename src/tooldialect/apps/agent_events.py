"""The agent's events and results: what ``Agent.stream`` yields and ``Agent.run`` returns.

Events are frozen dataclasses a notebook or a terminal can render as they come; ``AgentResult``
is the transcript with per-step usage and times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AgentEvent",
    "AgentResult",
    "AgentStep",
    "ArgumentsDelta",
    "CallFinished",
    "CallStarted",
    "FinalAnswer",
    "Outcome",
    "ReasoningDelta",
    "StepFinished",
    "StepStarted",
    "TextDelta",
]


# ---- events ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepStarted:
    """A model call is about to be made (a UI can open a new block)."""

    step: int
    """The model call (1-based)."""
    tools: tuple[str, ...] = ()
    """The tools offered in it (MCP servers may have changed theirs)."""


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's visible text."""

    step: int
    """The model call it belongs to (1-based)."""
    text: str
    """The new text."""


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning (``reasoning_content``)."""

    step: int
    """The model call it belongs to (1-based)."""
    text: str
    """The new reasoning text."""


@dataclass(frozen=True)
class CallStarted:
    """The model began a tool call: its id and full name are known."""

    step: int
    """The model call it belongs to (1-based)."""
    index: int
    """Position of the call within the turn."""
    id: str
    """The call id its result will answer."""
    name: str
    """The function called."""


@dataclass(frozen=True)
class ArgumentsDelta:
    """A fragment of a call's JSON arguments, as the model writes them."""

    step: int
    """The model call it belongs to (1-based)."""
    index: int
    """Position of the call within the turn."""
    id: str
    """The call id."""
    delta: str
    """The new argument text."""


REPR_TEXT = 60
"""Characters of a text field a repr shows (``on_event=print`` prints one line per event)."""


def _short(text: str | None, limit: int = REPR_TEXT) -> str:
    """``repr(text)``, cut to ``limit`` characters with the length left out said."""
    if text is None or len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}...(+{len(text) - limit} chars)"


@dataclass(frozen=True)
class CallFinished:
    """A tool call was run (or refused); ``error`` is set when it failed."""

    step: int
    """The model call it belongs to (1-based)."""
    id: str
    """The call id."""
    name: str
    """The function called."""
    arguments: str
    """The JSON arguments the model wrote."""
    result: str
    """The text sent back to the model (the error message when ``error`` is set)."""
    error: str | None = None
    """``unknown_tool``, ``invalid_arguments``, ``tool_error``, ``repeated_call`` (the loop
    breaker did not run it), ``denied`` (the approval hook refused it), ``cut`` (the reply was
    cut at ``max_tokens`` inside this or a later call: not run, and the run ends with outcome
    ``length``), or a code the tool's ``ToolResult`` set (MCP: ``timeout``, ``server_down``);
    ``None`` on success."""
    seconds: float = 0.0
    """Wall time of the function."""
    value: Any = None
    """What the function returned (a ``ToolResult`` keeps an MCP tool's images for you)."""
    requested_arguments: str | None = None
    """The model's own arguments, when the approval hook edited them (``arguments`` were run)."""

    def __repr__(self) -> str:
        # ``value`` (a raw MCP result can be kilobytes) is left out; long texts are cut
        parts = [
            f"step={self.step}",
            f"id={self.id!r}",
            f"name={self.name!r}",
            f"arguments={_short(self.arguments)}",
            f"result={_short(self.result)}",
        ]
        if self.error is not None:
            parts.append(f"error={self.error!r}")
        if self.requested_arguments is not None:
            parts.append(f"requested_arguments={_short(self.requested_arguments)}")
        parts.append(f"seconds={self.seconds:.2f}")
        return f"CallFinished({', '.join(parts)})"


@dataclass(frozen=True)
class StepFinished:
    """A model call and its tool calls are done."""

    step: AgentStep
    """What the step did."""


@dataclass(frozen=True)
class FinalAnswer:
    """The loop is over; ``result.outcome`` says why."""

    result: AgentResult
    """Everything the run produced."""


AgentEvent = (
    StepStarted
    | TextDelta
    | ReasoningDelta
    | CallStarted
    | ArgumentsDelta
    | CallFinished
    | StepFinished
    | FinalAnswer
)
"""Every event ``Agent.stream`` yields."""


# ---- results ---------------------------------------------------------------------------------


@dataclass
class AgentStep:
    """One model call and the tool calls it made."""

    number: int
    """1-based."""
    usage: dict[str, Any]
    """The response's OpenAI ``usage`` (with ``prompt_tokens_details.cached_tokens``)."""
    finish_reason: str | None
    """``tool_calls``, ``stop`` or ``length``."""
    model_seconds: float
    """Wall time of the model call."""
    tool_seconds: float = 0.0
    """Wall time spent running the turn's tools."""
    calls: list[CallFinished] = field(default_factory=list)
    """The turn's calls, in the model's order."""

    def __repr__(self) -> str:
        # the calls by name, the usage as two counts: the full records are fields to read
        calls = ", ".join(c.name + (f" ({c.error})" if c.error else "") for c in self.calls)
        return (
            f"AgentStep(number={self.number}, finish_reason={self.finish_reason!r}, "
            f"calls=[{calls}], prompt_tokens={self.usage.get('prompt_tokens', 0)}, "
            f"completion_tokens={self.usage.get('completion_tokens', 0)}, "
            f"model_seconds={self.model_seconds:.2f}, tool_seconds={self.tool_seconds:.2f})"
        )

    @property
    def decoded_prompt_tokens(self) -> int:
        """Prompt tokens the model had to decode (the rest came from the KV cache)."""
        details = self.usage.get("prompt_tokens_details") or {}
        return int(self.usage.get("prompt_tokens", 0)) - int(details.get("cached_tokens", 0))


Outcome = Literal["answer", "max_steps", "length", "loop"]


@dataclass
class AgentResult:
    """What a run produced."""

    outcome: Outcome
    """``answer``: the model answered without a call. ``max_steps``: the limit was reached with
    calls still coming (``answer`` is then ``None``). ``length``: the last reply hit
    ``max_tokens``; ``answer`` holds the cut text, or is ``None`` when the cut fell inside a call
    (none of that reply's calls ran; ``reason`` names the call). ``loop``: the model kept
    repeating calls that were already made (``Agent(loop_limit=...)``); ``reason`` says which."""
    answer: str | None
    """The final text."""
    messages: list[dict[str, Any]]
    """The whole transcript, OpenAI messages (system, user, assistant, tool...)."""
    steps: list[AgentStep]
    """One entry per model call."""
    reason: str | None = None
    """Why the run ended, in words, when it was not a plain answer."""

    def __repr__(self) -> str:
        # counts instead of the transcript (tool results included) and the steps
        return (
            f"AgentResult(outcome={self.outcome!r}, answer={_short(self.answer)}, "
            f"reason={_short(self.reason)}, steps={len(self.steps)}, "
            f"messages={len(self.messages)}, usage={self.usage})"
        )

    @property
    def usage(self) -> dict[str, int]:
        """Tokens summed over the steps."""
        total = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
        for s in self.steps:
            total["prompt_tokens"] += int(s.usage.get("prompt_tokens", 0))
            total["completion_tokens"] += int(s.usage.get("completion_tokens", 0))
            details = s.usage.get("prompt_tokens_details") or {}
            total["cached_tokens"] += int(details.get("cached_tokens", 0))
        return total
