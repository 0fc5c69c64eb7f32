"""``Agent``: a small, complete tool loop on top of the handler.

Call the model; run every call of the turn (async tools concurrently); append the results as
``role: "tool"`` messages with the calls' ids; repeat until the model answers without a call or
``max_steps`` model calls have been made. A tool that raises, arguments that fail validation and
an unknown tool name go back to the model as tool results that say what went wrong; they never
end the loop. ``stream()`` yields typed events a notebook or a terminal can render live; ``run()``
returns the :class:`AgentResult` (transcript as OpenAI messages, usage and time per step).

It is not a framework: LangChain, pydantic-ai or the OpenAI Agents SDK work through the handler
(or ``tooldialect serve``) as they are. Each step re-sends the whole transcript; the handler
re-renders the earlier replies verbatim, so each step decodes only the new suffix.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ToolSpecError
from .function_tool import Tool, ToolArgumentsError, check_unique, result_text, run_to_completion

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AgentStep",
    "ArgumentsDelta",
    "CallFinished",
    "CallStarted",
    "FinalAnswer",
    "ReasoningDelta",
    "StepFinished",
    "TextDelta",
]


# ---- events ----------------------------------------------------------------------------------


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
    """``unknown_tool``, ``invalid_arguments`` or ``tool_error``; ``None`` on success."""
    seconds: float = 0.0
    """Wall time of the function."""


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
    TextDelta
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

    @property
    def decoded_prompt_tokens(self) -> int:
        """Prompt tokens the model had to decode (the rest came from the KV cache)."""
        details = self.usage.get("prompt_tokens_details") or {}
        return int(self.usage.get("prompt_tokens", 0)) - int(details.get("cached_tokens", 0))


Outcome = Literal["answer", "max_steps", "length"]


@dataclass
class AgentResult:
    """What a run produced."""

    outcome: Outcome
    """``answer``: the model answered without a call. ``max_steps``: the limit was reached with
    calls still coming (``answer`` is then ``None``). ``length``: the last reply hit
    ``max_tokens`` without a call; ``answer`` holds the cut text."""
    answer: str | None
    """The final text."""
    messages: list[dict[str, Any]]
    """The whole transcript, OpenAI messages (system, user, assistant, tool...)."""
    steps: list[AgentStep]
    """One entry per model call."""

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


# ---- the loop --------------------------------------------------------------------------------


class Agent:
    """Run ``tools`` for ``llm`` until it answers.

    ``llm``: a ``llama_cpp.Llama`` whose chat handler is a ``ToolChatHandler`` (or that uses
    ``chat_format="tooldialect"``); anything with an OpenAI-shaped, streaming
    ``create_chat_completion`` works. ``tools``: ``Tool`` objects, or plain functions (made into
    tools with ``Tool.from_function``). ``system``: a system message put first. ``max_steps``:
    model calls per run. ``tool_choice`` applies to the first step; as in the OpenAI Agents SDK it
    resets to ``"auto"`` after a step that called tools (``reset_tool_choice=False`` keeps it,
    which with ``"required"`` runs until ``max_steps``). ``answer_at_limit``: make the last
    allowed step with ``tool_choice="none"``, so a model that keeps calling (small models repeat
    calls) still answers from the results it has; the outcome stays ``max_steps``, with that text
    as the answer (the step re-decodes the prompt: without tools the template renders a different
    system turn). Other keywords (``temperature``,
    ``max_tokens``, ``parallel_tool_calls``, ``enable_thinking``...) go to every request.
    """

    def __init__(
        self,
        llm: Any,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system: str | None = None,
        max_steps: int = 8,
        tool_choice: Any = "auto",
        reset_tool_choice: bool = True,
        answer_at_limit: bool = False,
        **request_options: Any,
    ) -> None:
        if max_steps < 1:
            raise ToolSpecError(f"max_steps must be at least 1, got {max_steps!r}")
        made = [t if isinstance(t, Tool) else Tool.from_function(t) for t in tools]
        self.tools = check_unique(made)
        """The tools by name."""
        self.llm = llm
        self.system = system
        self.max_steps = max_steps
        self.tool_choice = tool_choice
        self.reset_tool_choice = reset_tool_choice
        self.answer_at_limit = answer_at_limit
        self.request_options = request_options

    def __repr__(self) -> str:
        return f"Agent(tools={sorted(self.tools)}, max_steps={self.max_steps})"

    def run(self, prompt: str | Sequence[Mapping[str, Any]]) -> AgentResult:
        """Run to the end and return the result (see :meth:`stream` for the events)."""
        for event in self.stream(prompt):
            if isinstance(event, FinalAnswer):
                return event.result
        raise AssertionError("Agent.stream ended without a FinalAnswer")  # pragma: no cover

    def stream(self, prompt: str | Sequence[Mapping[str, Any]]) -> Iterator[AgentEvent]:
        """Run, yielding events as they happen; the last one is a :class:`FinalAnswer`.

        ``prompt``: a user message, or a list of OpenAI messages (a previous
        ``result.messages`` plus a new user turn continues a conversation).
        """
        messages = self._start(prompt)
        steps: list[AgentStep] = []
        choice = self.tool_choice
        for number in range(1, self.max_steps + 1):
            last = number == self.max_steps and self.answer_at_limit and number > 1
            if last:
                choice = "none"
            turn = _Turn(number)
            started = time.perf_counter()
            for chunk in self._complete(messages, choice):
                yield from turn.feed(chunk)
            step = AgentStep(
                number=number,
                usage=turn.usage,
                finish_reason=turn.finish_reason,
                model_seconds=time.perf_counter() - started,
            )
            steps.append(step)
            messages.append(turn.message())
            if not turn.calls:
                yield StepFinished(step)
                outcome: Outcome = "length" if turn.finish_reason == "length" else "answer"
                outcome = "max_steps" if last else outcome
                result = AgentResult(outcome, "".join(turn.content), messages, steps)
                yield FinalAnswer(result)
                return
            started = time.perf_counter()
            for finished in self._run_calls(number, turn.calls):
                step.calls.append(finished)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": finished.id,
                        "name": finished.name,
                        "content": finished.result,
                    }
                )
                yield finished
            step.tool_seconds = time.perf_counter() - started
            yield StepFinished(step)
            if self.reset_tool_choice:
                choice = "auto"
        yield FinalAnswer(AgentResult("max_steps", None, messages, steps))

    # ---- pieces ------------------------------------------------------------------------------

    def _start(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(prompt, str):
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        else:
            messages = [dict(m) for m in prompt]
        if self.system is not None and not (messages and messages[0].get("role") == "system"):
            messages.insert(0, {"role": "system", "content": self.system})
        return messages

    def _complete(self, messages: list[dict[str, Any]], choice: Any) -> Iterator[dict[str, Any]]:
        """One streamed completion; the handler's extras go through when it is ours."""
        from ..handler import ToolChatHandler, create_chat_completion

        request: dict[str, Any] = {
            "messages": list(messages),  # the loop appends to its own list afterwards
            "stream": True,
            **self.request_options,
        }
        if self.tools:
            request["tools"] = [t.to_openai() for t in self.tools.values()]
            request["tool_choice"] = choice
        if isinstance(getattr(self.llm, "chat_handler", None), ToolChatHandler):
            out: Any = create_chat_completion(self.llm, **request)
        else:
            out = self.llm.create_chat_completion(**request)
        if isinstance(out, Mapping):  # a client that ignored stream=True
            out = iter([_as_chunk(out)])
        yield from out

    def _run_calls(self, step: int, calls: list[dict[str, Any]]) -> list[CallFinished]:
        """Run a turn's calls: sync tools one after another, async ones concurrently."""
        if not any(self._is_async(c) for c in calls):
            return [self._run_sync(step, c) for c in calls]

        async def all_calls() -> list[CallFinished]:
            return list(await asyncio.gather(*(self._run_async(step, c) for c in calls)))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(all_calls())
        # a loop already runs in this thread (Jupyter): use a private one in a worker thread
        box: list[list[CallFinished]] = []
        worker = threading.Thread(target=lambda: box.append(asyncio.run(all_calls())))
        worker.start()
        worker.join()
        return box[0]

    def _is_async(self, call: dict[str, Any]) -> bool:
        found = self.tools.get(call["name"])
        return found is not None and found.is_async

    def _invoke(self, call: dict[str, Any]) -> Any:
        """Validate and call; the value may be an awaitable. Raises what went wrong."""
        found = self.tools.get(call["name"])
        if found is None:
            known = ", ".join(sorted(self.tools)) or "none"
            raise _UnknownTool(f"there is no tool named {call['name']!r}. Available tools: {known}")
        args, kwargs = found.validate(call["arguments"])
        return found.fn(*args, **kwargs)

    def _run_sync(self, step: int, call: dict[str, Any]) -> CallFinished:
        started = time.perf_counter()
        try:
            value = self._invoke(call)
            if inspect.isawaitable(value):
                value = run_to_completion(value)
        except Exception as exc:
            return _finished(step, call, started, exc=exc)
        return _finished(step, call, started, value=value)

    async def _run_async(self, step: int, call: dict[str, Any]) -> CallFinished:
        started = time.perf_counter()
        try:
            value = self._invoke(call)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return _finished(step, call, started, exc=exc)
        return _finished(step, call, started, value=value)


class _UnknownTool(Exception):
    """The model called a function the agent does not have."""


def _finished(
    step: int,
    call: dict[str, Any],
    started: float,
    *,
    value: Any = None,
    exc: Exception | None = None,
) -> CallFinished:
    """The event for a call: the value's text, or the failure in words the model can act on."""
    name = call["name"]
    error: str | None = None
    if exc is None:
        text = result_text(value)
    elif isinstance(exc, _UnknownTool):
        text, error = f"Error: {exc}.", "unknown_tool"
    elif isinstance(exc, ToolArgumentsError):
        text = f"Error: {exc}. Call {name!r} again with valid arguments."
        error = "invalid_arguments"
    else:  # the tool itself failed; the model may recover when it sees why
        text, error = f"Error: {name} raised {type(exc).__name__}: {exc}", "tool_error"
    return CallFinished(
        step=step,
        id=call["id"],
        name=name,
        arguments=call["arguments"],
        result=text,
        error=error,
        seconds=time.perf_counter() - started,
    )


def _as_chunk(response: Mapping[str, Any]) -> dict[str, Any]:
    """A non-streamed response as one chunk (so one code path reads both)."""
    choice = response["choices"][0]
    message = dict(choice["message"])
    calls = [{"index": i, **c} for i, c in enumerate(message.pop("tool_calls", None) or [])]
    if calls:
        message["tool_calls"] = calls
    return {
        "choices": [{"index": 0, "delta": message, "finish_reason": choice.get("finish_reason")}],
        "usage": response.get("usage"),
    }


class _Turn:
    """Reassembles one streamed reply and turns its deltas into events."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}

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

    def _call_delta(self, part: Mapping[str, Any]) -> Iterator[AgentEvent]:
        index = int(part.get("index", len(self._calls)))
        fn = part.get("function") or {}
        call = self._calls.get(index)
        if call is None:
            cid = part.get("id") or f"call_{self.step}_{index}"
            call = self._calls[index] = {"id": cid, "name": fn.get("name") or "", "arguments": ""}
            yield CallStarted(self.step, index, cid, call["name"])
        elif fn.get("name"):
            call["name"] += fn["name"]
        if fn.get("arguments"):
            call["arguments"] += fn["arguments"]
            yield ArgumentsDelta(self.step, index, call["id"], fn["arguments"])

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [self._calls[i] for i in sorted(self._calls)]

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
