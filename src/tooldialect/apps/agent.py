"""``Agent``: a small, complete tool loop on top of the handler.

Call the model; run every call of the turn (async tools concurrently); append the results as
``role: "tool"`` messages with the calls' ids; repeat until the model answers without a call or
``max_steps`` model calls have been made. A tool that raises, arguments that fail validation and
an unknown tool name go back to the model as tool results that say what went wrong; they never
end the loop. A reply cut at ``max_tokens`` inside a call ends the run with outcome ``length``
and runs none of its calls. Nothing a model writes makes a run raise: the transcript only ever
holds messages the next request accepts (``agent_turn``). ``stream()`` yields typed events a
notebook or a terminal can render live; ``run()`` returns the :class:`AgentResult` (transcript
as OpenAI messages, usage and time per step).

For long runs: a loop breaker (an identical call is not run again; repeated refusals end the run
with outcome ``loop``), an approval hook that may allow, deny or edit each call, and MCP servers
as a tool source (``mcp=``; see ``tooldialect.apps.mcp``).

It is not a framework: LangChain, pydantic-ai or the OpenAI Agents SDK work through the handler
(or ``tooldialect serve``) as they are. Each step re-sends the whole transcript; the handler
re-renders the earlier replies verbatim, so each step decodes only the new suffix.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from ..errors import MCPToolNameError, ToolSpecError
from ..frontend.options import REQUEST_KEYS, check_known_keys
from ..tool_defs import ToolChoice, normalize_tool_choice, normalize_tools
from .agent_events import (
    AgentEvent,
    AgentResult,
    AgentStep,
    ArgumentsDelta,
    CallFinished,
    CallStarted,
    FinalAnswer,
    Outcome,
    ReasoningDelta,
    StepFinished,
    StepStarted,
    TextDelta,
)
from .agent_policy import (
    Allow,
    ApprovalHook,
    Deny,
    PendingCall,
    RepeatGuard,
    decide,
    edited_arguments,
)
from .agent_turn import Turn
from .python_tool import (
    Tool,
    ToolArgumentsError,
    ToolResult,
    check_unique,
    result_text,
    run_to_completion,
)
from .tool_search import SEARCH_TOOL, DeferredTools, ToolSearch, search_settings

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AgentStep",
    "Allow",
    "ArgumentsDelta",
    "CallFinished",
    "CallStarted",
    "Deny",
    "FinalAnswer",
    "PendingCall",
    "ReasoningDelta",
    "StepFinished",
    "StepStarted",
    "TextDelta",
]

ANSWER_NOW = (
    "No more tool calls are possible. Answer my question now, in plain words, from the tool "
    "results above."
)
"""Sent (not kept in the transcript) with the step that must answer: the last one under
``answer_at_limit``, or the one after the loop breaker tripped."""

TOOL_ERROR_HINT = "If an argument was a guess, get the right value with another tool."
"""Said after a tool's error: a small model that guessed an argument otherwise gives up."""

AGENT_REQUEST_KEYS = REQUEST_KEYS - {"tools", "tool_choice", "stream", "functions", "function_call"}
"""The request fields an ``Agent`` passes through (it writes the others itself)."""


# ---- the loop --------------------------------------------------------------------------------


class Agent:
    """Run ``tools`` for ``llm`` until it answers.

    ``llm``: a ``llama_cpp.Llama`` whose chat handler is a ``ToolChatHandler`` (or that uses
    ``chat_format="tooldialect"``); anything with an OpenAI-shaped, streaming
    ``create_chat_completion`` works. ``tools``: ``Tool`` objects, or plain functions (made into
    tools with ``Tool.from_function``). ``mcp``: an ``MCPTools``, or what it takes (an
    ``mcpServers`` JSON path or object, server configs); the agent then starts the servers and
    stops them on :meth:`close` (use it as a context manager). An ``MCPTools`` you pass is
    started if needed and left for you to close. ``system``: a system message put first.
    ``max_steps``: model calls per run. ``tool_choice`` (the handler's forms: a mode, a tool's
    name, the Chat Completions objects) applies to the first step; as in the
    OpenAI Agents SDK it resets to ``"auto"`` after a step that called tools
    (``reset_tool_choice=False`` keeps it, which with ``"required"`` runs until ``max_steps``).
    ``answer_at_limit``: make the last allowed step (and the step after the loop breaker tripped)
    with ``tool_choice="none"``, so a model that keeps calling still answers from the results it
    has; the outcome stays ``max_steps`` (or ``loop``), with that text as the answer.
    ``max_identical_calls``: how often one call with the same arguments runs per run (``None``:
    no limit); ``loop_limit``: refused repeats after which the run ends with outcome ``loop``
    (``None``: never). ``approve``: a hook that sees each call first (see
    ``tooldialect.apps.agent_policy``). Other keywords (``temperature``, ``max_tokens``,
    ``parallel_tool_calls``, ``enable_thinking``...) go to every request; an unknown one is a
    ``ToolSpecError`` naming the nearest request field. ``tool_search``: offer one
    ``tool_search`` tool and only the tools it finds (``True``, or a ``ToolSearch``), all tools
    (``False``), or search when there are more than ``SEARCH_ABOVE`` tools (``None``); see
    ``tooldialect.apps.tool_search``.
    """

    def __init__(
        self,
        llm: Any,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        mcp: Any = None,
        system: str | None = None,
        max_steps: int = 8,
        tool_choice: Any = "auto",
        reset_tool_choice: bool = True,
        answer_at_limit: bool = False,
        max_identical_calls: int | None = 1,
        loop_limit: int | None = 3,
        approve: ApprovalHook | None = None,
        tool_search: bool | ToolSearch | None = None,
        **request_options: Any,
    ) -> None:
        if max_steps < 1:
            raise ToolSpecError(f"max_steps must be at least 1, got {max_steps!r}")
        if max_identical_calls is not None and max_identical_calls < 1:
            raise ToolSpecError(
                f"max_identical_calls must be at least 1 (or None), got {max_identical_calls!r}"
            )
        if loop_limit is not None and loop_limit < 1:
            raise ToolSpecError(f"loop_limit must be at least 1 (or None), got {loop_limit!r}")
        # the agent writes these itself; the rest must be request fields (a typo is refused)
        check_known_keys(request_options, where="Agent", known=AGENT_REQUEST_KEYS)
        made = [t if isinstance(t, Tool) else Tool.from_function(t) for t in tools]
        self._own_tools = check_unique(made)
        self.llm = llm
        self.system = system
        self.max_steps = max_steps
        self.tool_choice = tool_choice
        self.reset_tool_choice = reset_tool_choice
        self.answer_at_limit = answer_at_limit
        self.max_identical_calls = max_identical_calls
        self.loop_limit = loop_limit
        self.approve = approve
        self.tool_search = tool_search
        self.request_options = request_options
        self.mcp, self._owns_mcp = _start_mcp(mcp)
        """The ``MCPTools`` the agent draws tools from (``None`` without ``mcp=``)."""
        try:
            # a name clash between local and MCP tools fails here (``tools``), and a
            # ``tool_choice`` the handler would refuse (read once, as the handler reads it)
            self.choice: ToolChoice = normalize_tool_choice(
                tool_choice, normalize_tools(list(self.tools.values()))
            )
            """``tool_choice`` read: the first step's choice, and the tools it names are offered
            from the start under tool search."""
        except BaseException:
            self.close()
            raise

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools by name: the local ones and the MCP servers' current ones."""
        if self.mcp is None:
            return self._own_tools
        remote = self.mcp.tools()
        clash = sorted(set(self._own_tools) & {t.name for t in remote})
        if clash:
            raise MCPToolNameError(
                f"local tools and MCP tools share the names {clash}; rename the local ones or "
                "pass MCPTools(naming=...)"
            )
        return {**self._own_tools, **check_unique(remote)}

    def __repr__(self) -> str:
        return f"Agent(tools={sorted(self.tools)}, max_steps={self.max_steps})"

    def close(self) -> None:
        """Stop the MCP servers the agent started (safe to call twice)."""
        if self.mcp is not None and self._owns_mcp:
            self.mcp.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def run(
        self,
        prompt: str | Sequence[Mapping[str, Any]],
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> AgentResult:
        """Run to the end and return the result; ``on_event`` sees every event as it happens
        (see :meth:`stream`)."""
        for event in self.stream(prompt):
            if on_event is not None:
                on_event(event)
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
        choice = self.choice
        guard = RepeatGuard(
            max_identical_calls=self.max_identical_calls, loop_limit=self.loop_limit
        )
        deferred = self._deferred(self.tools, messages)
        for number in range(1, self.max_steps + 1):
            at_limit = number == self.max_steps and self.answer_at_limit and number > 1
            last = at_limit or guard.tripped
            if last:
                choice = ToolChoice(mode="none")
            every = self.tools
            # with tool search, only the tools found so far (the grammar follows the request)
            tools = _offered(deferred, every)
            yield StepStarted(number, tuple(tools))
            turn = Turn(number, max_identical=self.max_identical_calls)
            started = time.perf_counter()
            # the answer step says so: a small model shown its own calls writes another as text
            asked = [*messages, {"role": "user", "content": ANSWER_NOW}] if last else messages
            reply = self._complete(asked, choice, tools)
            for chunk in reply:
                yield from turn.feed(chunk)
                if turn.repeated:  # the same call again in one reply: a small model's loop
                    reply.close()  # stops decoding; the step keeps one of each call
                    break
            step = AgentStep(
                number=number,
                usage=turn.usage,
                finish_reason=turn.finish_reason,
                model_seconds=time.perf_counter() - started,
            )
            steps.append(step)
            messages.append(turn.message())  # always one the next request accepts
            if turn.cut is not None:  # a call cut at max_tokens never runs: the run ends here
                step.calls.extend(turn.not_run())
                yield from step.calls
                yield StepFinished(step)
                why = turn.cut_reason()
                yield FinalAnswer(AgentResult("length", None, messages, steps, reason=why))
                return
            if not turn.calls:
                yield StepFinished(step)
                outcome: Outcome = "length" if turn.finish_reason == "length" else "answer"
                outcome = "max_steps" if at_limit else outcome
                outcome = "loop" if guard.tripped else outcome
                reason = _reason(outcome, guard, number)
                text: str | None = "".join(turn.content)
                written = self._call_text(text or "", every)
                if written is not None:  # a call as text (tools not offered then) answers nothing
                    text, reason = None, written
                yield FinalAnswer(AgentResult(outcome, text, messages, steps, reason=reason))
                return
            started = time.perf_counter()
            tools = _offered(deferred, every, called=[c["name"] for c in turn.calls])
            for finished in self._run_calls(number, turn.calls, tools, guard):
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
                choice = ToolChoice(mode="auto")
            if guard.tripped and not (self.answer_at_limit and number < self.max_steps):
                reason = _reason("loop", guard, number)
                yield FinalAnswer(AgentResult("loop", None, messages, steps, reason=reason))
                return
        reason = _reason("max_steps", guard, self.max_steps)
        yield FinalAnswer(AgentResult("max_steps", None, messages, steps, reason=reason))

    # ---- pieces ------------------------------------------------------------------------------

    def _deferred(
        self, tools: Mapping[str, Tool], messages: list[dict[str, Any]]
    ) -> DeferredTools | None:
        """The run's offered set under tool search, or ``None`` when every tool is offered. The
        tools a continued conversation called, and a function ``tool_choice`` names, are offered
        from the start."""
        settings = search_settings(self.tool_search, tool_count=len(tools))
        if settings is None:
            return None
        pinned = [
            str((call.get("function") or {}).get("name"))
            for m in messages
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or []
        ]
        pinned += self.choice.names
        asked = [m.get("content") for m in messages if m.get("role") == "user"]
        context = asked[-1] if asked and isinstance(asked[-1], str) else ""
        return DeferredTools(settings, pinned=[n for n in pinned if n in tools], context=context)

    def _start(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(prompt, str):
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        else:
            messages = [dict(m) for m in prompt]
        if self.system is not None and not (messages and messages[0].get("role") == "system"):
            messages.insert(0, {"role": "system", "content": self.system})
        return messages

    def _complete(
        self, messages: list[dict[str, Any]], choice: ToolChoice, tools: Mapping[str, Tool]
    ) -> Generator[dict[str, Any], None, None]:
        """One streamed completion; the handler's extras go through when it is ours."""
        from ..handler import create_chat_completion, handler_of

        request: dict[str, Any] = {
            "messages": list(messages),  # the loop appends to its own list afterwards
            "stream": True,
            **self.request_options,
        }
        if tools:
            request["tools"] = [t.to_openai() for t in tools.values()]
            request["tool_choice"] = choice.to_openai()  # the form every client takes
        handler = handler_of(self.llm)
        if handler is not None:  # chat_handler= or chat_format= of register(): the same
            out: Any = create_chat_completion(self.llm, handler=handler, **request)
        else:
            out = self.llm.create_chat_completion(**request)
        if isinstance(out, Mapping):  # a client that ignored stream=True
            out = iter([_as_chunk(out)])
        yield from out

    def _call_text(self, text: str, tools: Mapping[str, Tool]) -> str | None:
        """Why ``text`` is no answer when it reads, in the model's dialect, as a call to one of
        the run's tools (written where calls were not allowed); else ``None``."""
        from ..handler import handler_of
        from ..parse import parse_output

        handler = handler_of(self.llm)
        offered = {**self._own_tools, **tools}
        if handler is None or not text.strip() or not offered:
            return None
        spec = handler.setup(self.llm).spec
        parsed = parse_output(text, spec, tools=[t.to_openai() for t in offered.values()])
        names = [c.name for c in parsed.tool_calls if c.name in offered]
        if not names:
            return None
        return (
            f"the model's last reply is a call to {names[0]} written as text where no call "
            "could run, not an answer"
        )

    def _run_calls(
        self,
        step: int,
        calls: list[dict[str, Any]],
        tools: Mapping[str, Tool],
        guard: RepeatGuard,
    ) -> list[CallFinished]:
        """Screen a turn's calls in order (repeats, approval), then run the rest: sync tools one
        after another, async ones concurrently. Results keep the model's order."""
        done: dict[int, CallFinished] = {}
        runnable: list[tuple[int, dict[str, Any]]] = []
        for index, call in enumerate(calls):
            screened = self._screen(step, call, tools, guard)
            if isinstance(screened, CallFinished):
                done[index] = screened
            else:
                runnable.append((index, screened))
        ran = self._execute(step, [c for _, c in runnable], tools)
        for (index, _), finished in zip(runnable, ran, strict=True):
            done[index] = finished
        for index, call in enumerate(calls):
            finished = done[index]
            if finished.error != "repeated_call":
                guard.record(
                    PendingCall(step, call["id"], call["name"], call["arguments"]), finished.result
                )
        return [done[i] for i in range(len(calls))]

    def _screen(
        self, step: int, call: dict[str, Any], tools: Mapping[str, Tool], guard: RepeatGuard
    ) -> dict[str, Any] | CallFinished:
        """The call to run (maybe with edited arguments), or the event for one not run."""
        pending = PendingCall(step, call["id"], call["name"], call["arguments"])
        if call["name"] not in tools:
            return _finished(step, call, time.perf_counter(), exc=_unknown(call, tools))
        if call.get("invalid"):
            # the front end found the arguments invalid for the tool's full schema: not run
            problems = ToolArgumentsError(
                f"invalid arguments for {call['name']!r}: {call['invalid']}"
            )
            return _finished(step, call, time.perf_counter(), exc=problems)
        refusal = guard.check(pending)
        if refusal is not None:
            return _refused(step, call, refusal, "repeated_call")
        verdict = decide(self.approve, pending)
        if isinstance(verdict, Deny):
            why = f": {verdict.reason}" if verdict.reason else ""
            text = (
                f"Not run: the user did not allow this call to {call['name']}{why}. Do not "
                "call it again with these arguments; go on without it or ask the user."
            )
            return _refused(step, call, text, "denied")
        edited = edited_arguments(verdict) if isinstance(verdict, Allow) else None
        if edited is not None and edited != call["arguments"]:
            return {**call, "arguments": edited, "requested": call["arguments"]}
        return call

    def _execute(
        self, step: int, calls: list[dict[str, Any]], tools: Mapping[str, Tool]
    ) -> list[CallFinished]:
        if not any(tools[c["name"]].is_async for c in calls):
            return [self._run_sync(step, c, tools) for c in calls]

        async def all_calls() -> list[CallFinished]:
            return list(await asyncio.gather(*(self._run_async(step, c, tools) for c in calls)))

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

    def _invoke(self, call: dict[str, Any], tools: Mapping[str, Tool]) -> Any:
        """Validate and call; the value may be an awaitable. Raises what went wrong."""
        found = tools[call["name"]]
        args, kwargs = found.validate(call["arguments"])
        return found.fn(*args, **kwargs)

    def _run_sync(self, step: int, call: dict[str, Any], tools: Mapping[str, Tool]) -> CallFinished:
        started = time.perf_counter()
        try:
            value = self._invoke(call, tools)
            if inspect.isawaitable(value):
                value = run_to_completion(value)
        except Exception as exc:
            return _finished(step, call, started, exc=exc)
        return _finished(step, call, started, value=value)

    async def _run_async(
        self, step: int, call: dict[str, Any], tools: Mapping[str, Tool]
    ) -> CallFinished:
        started = time.perf_counter()
        try:
            value = self._invoke(call, tools)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return _finished(step, call, started, exc=exc)
        return _finished(step, call, started, value=value)


def _offered(
    deferred: DeferredTools | None, tools: Mapping[str, Tool], *, called: Sequence[str] = ()
) -> Mapping[str, Tool]:
    """The tools to offer (and run): all of them, or under tool search the ones found so far
    and those ``called`` by name."""
    return tools if deferred is None else deferred.offer(tools, called=called)


def _start_mcp(mcp: Any) -> tuple[Any, bool]:
    """``(MCPTools or None, whether the agent owns it)``; servers are started here."""
    if mcp is None:
        return None, False
    from .mcp import MCPTools

    if isinstance(mcp, MCPTools):
        return mcp.start(), False
    return MCPTools(mcp).start(), True


def _unknown(call: dict[str, Any], tools: Mapping[str, Tool]) -> Exception:
    known = ", ".join(sorted(tools)) or "none"
    more = f"; {SEARCH_TOOL} finds others" if SEARCH_TOOL in tools else ""
    return _UnknownTool(f"there is no tool named {call['name']!r}. Available tools: {known}{more}")


def _refused(step: int, call: dict[str, Any], text: str, error: str) -> CallFinished:
    return CallFinished(
        step=step,
        id=call["id"],
        name=call["name"],
        arguments=call["arguments"],
        result=text,
        error=error,
    )


def _reason(outcome: Outcome, guard: RepeatGuard, steps: int) -> str | None:
    if outcome == "loop":
        return (
            f"stopped after {guard.refused} repeated calls were refused (the last: "
            f"{guard.last_refused}); the model kept asking for results it already had"
        )
    if outcome == "max_steps":
        return f"the step limit ({steps} model calls) was reached"
    if outcome == "length":
        return "the last reply was cut at max_tokens"
    return None


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
        if isinstance(value, ToolResult) and value.is_error:
            error = value.error or "tool_error"
        if call.get("requested") is not None:
            text = f"(Run with arguments changed by the user to {call['arguments']}.)\n{text}"
    elif isinstance(exc, _UnknownTool):
        text, error = f"Error: {exc}.", "unknown_tool"
    elif isinstance(exc, ToolArgumentsError):
        text = f"Error: {exc}. Call {name!r} again with valid arguments."
        error = "invalid_arguments"
    else:  # the tool itself failed; the model may recover when it sees why
        text = f"Error: {name} raised {type(exc).__name__}: {exc}. {TOOL_ERROR_HINT}"
        error = "tool_error"
    return CallFinished(
        step=step,
        id=call["id"],
        name=name,
        arguments=call["arguments"],
        result=text,
        error=error,
        seconds=time.perf_counter() - started,
        value=value,
        requested_arguments=call.get("requested"),
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
