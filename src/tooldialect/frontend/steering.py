"""Steering a reply while it is decoded: the template's own call format, no call answered twice.

Two things a small model does under ``tool_choice="auto"`` that no grammar of one call can stop,
measured on Qwen2.5-Coder (docs/benchmarks.md, "Why auto wrote one call"):

* **It calls in a format the template never writes.** Free, Qwen2.5-Coder-1.5B starts a call as a
  fenced ```` ```json ```` block (p = 0.79 for the first token on BFCL's parallel cases; the
  template's ``<tool_call>`` 0.01), a format the parser reads leniently. After the block's close
  it ends the turn (p = 0.999), so it writes one call where the user asked for two. In the
  template's own format, the model itself chooses another call at the closer (``>\\n``) or the
  end (``>``): that is all ``"required"`` changed, and why it scored 18 points higher.
  So when a call starts in a variant format (the trigger captured text that does not begin with
  the primary format's opener), decoding goes back to where the call started and goes on under
  the primary format's forced grammar, calls as the template writes them, several allowed.
* **It repeats a call whose result is already in the conversation** (the loop every agent on a
  small model meets) or repeats a call within one reply. A finished call equal (name and
  arguments) to an answered one is taken back: decoding goes back to where it started, the
  model may not start a call there (a grammar bans the first character of every call opener),
  and it goes on lazily from the model's next choice, usually the answer. A repeat within the
  reply, or an answered call after a new one, ends the reply after the calls before it.

Engine-neutral: everything is text in, text out. Each rewind is a new ``Engine.run`` of the
prompt plus the text kept, which the engines' prompt caches serve from memory. Text that a rewind
could still take back is held (from where a trigger may be starting, and from the start of a
call not yet judged), so what is yielded is always a prefix of the final text: streaming equals
batch, as both read the same pieces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import regex

from ..engine.base import Generation, GenerationRequest, GenerationResult, GrammarLike, Triggers
from ..engine.trigger_watch import TriggerWatch, first_group, searchable_core
from ..grammar.codec import DEFAULT_ARGUMENT_LAYOUT, ArgumentLayout
from .response import reply_parser

if TYPE_CHECKING:
    from ..engine.base import Engine
    from .request import Request

__all__ = [
    "ANSWER",
    "MAX_REWINDS",
    "CallKey",
    "Steering",
    "answered_calls",
    "call_key",
    "last_question",
    "steer",
]

REMINDER = (
    "You already have that tool result above. Answer my question from the tool results, in "
    "words; call another tool only if a result you need is still missing."
)
"""Said (to the model only, never kept in the conversation) when it repeats an answered call:
Qwen2.5-Coder-0.5B, banned from writing a call after its result, writes the call as text (its
first token after the result is ``{"`` with p = 0.97); told this, it answers. The user's last
question follows (``My question: ...``): a small model reminded of "my question" without it
answers the reminder ("Yes, I have the tool result above.")."""

ANSWER = "Answer my question from the tool results above, in words."
"""Said (to the model only) when it ends its turn at once, with nothing, after tool results:
Qwen2.5-Coder-0.5B, shown its call as ``<tool_call>`` and the result, ends the turn with no
text at all; told this, it answers. The question follows, as after :data:`REMINDER`."""

QUESTION_CHARS = 600
"""How much of the user's last message a reminder repeats."""

MAX_REWINDS = 3
"""Rewinds per reply; past them a repeated call ends the reply where it started."""

CallKey = tuple[str, str]
"""``(name, canonical JSON of the arguments)``: what makes two calls the same call."""


def _canonical(value: Any) -> Any:
    """``value`` with integral floats as ints (``5.0`` and ``5`` are one argument)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def call_key(name: str, arguments: Any) -> CallKey | None:
    """The key of a call whose arguments are a JSON text or a mapping; ``None`` when they are
    not a JSON object (a cut call is nobody's repeat)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, Mapping):
        return None
    return name, json.dumps(_canonical(dict(arguments)), sort_keys=True, ensure_ascii=False)


def answered_calls(messages: Sequence[Mapping[str, Any]]) -> frozenset[CallKey]:
    """The calls of ``messages`` whose result a later ``role: "tool"`` message gives (by
    ``tool_call_id``, or by position where the messages carry no ids)."""
    answered: set[CallKey] = set()
    pending: list[tuple[str | None, CallKey]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            pending = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {} if isinstance(call, Mapping) else {}
                key = call_key(str(function.get("name")), function.get("arguments"))
                if key is not None:
                    pending.append((call.get("id"), key))
        elif role in ("tool", "function") and pending:
            wanted = message.get("tool_call_id")
            found = next((p for p in pending if wanted is not None and p[0] == wanted), None)
            found = found or pending[0]
            pending.remove(found)
            answered.add(found[1])
    return frozenset(answered)


@dataclass(frozen=True)
class Steering:
    """What to steer in one reply (``steering_for`` decides it per request)."""

    answered: frozenset[CallKey] = frozenset()
    """Calls whose results the conversation holds: never written again."""
    native: GrammarLike | None = None
    """The primary format's forced grammar, for a call begun in a variant format (``None``:
    calls stay in whatever format the model starts)."""
    primary_opener: str = ""
    """The primary format's opener: a capture that starts with it needs no steering."""
    ban: GrammarLike | None = None
    """A grammar of a reply start that is no call opener (``None``: no call can be banned, so a
    repeated first call ends the reply)."""
    may_ban: bool = True
    """The request allows a reply without a call (``auto``)."""
    reminded: Callable[[str], str] | None = None
    """The prompt again with the words given (:data:`REMINDER`, :data:`ANSWER`) as the user's
    last (``None``: nothing to remind of, no tool result in the conversation). Used once a
    reply: for the first answered call taken back, or a reply that ended with nothing."""


# ---- the steered generation ------------------------------------------------------------------


class _Watch:
    """Where a lazy trigger captured in one run's text (``engine.trigger_watch``, the rule the
    engines follow), and how far text may be final while none has: up to the first character
    from which a trigger's core still partly matches (``regex``'s partial matching)."""

    def __init__(self, triggers: Triggers, base: int) -> None:
        patterns = [*triggers.word_patterns, *triggers.patterns]
        self.base = base
        """Where the run's own text starts: the engine matches its triggers from there."""
        self.seen = 0
        self.trigger = TriggerWatch.create((), patterns)
        self.whole = patterns if self.trigger is None else []
        """Patterns the watch cannot search, matched whole (``None`` watch only)."""
        cores = [searchable_core(p) for p in patterns]
        self.cores = [(regex.compile(c[0].pattern), c[1]) for c in cores if c is not None]

    def check(self, whole: str) -> tuple[int | None, int]:
        """``(capture start or None, hold)`` in ``whole``, once per piece: where a trigger
        captured, and the first character a trigger may still capture (``len(whole)`` when
        none)."""
        text = whole[self.base :]
        new = len(text) - self.seen
        start = self._captured(text)
        self.seen = len(text)
        if start is not None:
            return start + self.base, start + self.base
        hold = len(text)
        for core, width in list(self.cores):
            if width is None:  # anchored at the start
                m = core.match(text, partial=True)
                if m is None:  # the text only grows: it never matches now
                    self.cores.remove((core, width))
                hold = 0 if m is not None else hold
            else:
                m = core.search(text, max(0, len(text) - new - width + 1), partial=True)
                hold = min(hold, m.start()) if m is not None else hold
        return None, hold + self.base

    def _captured(self, text: str) -> int | None:
        if self.trigger is not None:
            return self.trigger.start if self.trigger.feed(-1, text[self.seen :]) else None
        for pattern in self.whole:
            m = re.fullmatch(pattern, text)  # quadratic on long text: a rare pattern's cost
            start = first_group(m) if m is not None else None
            if start is not None:
                return start
        return None


@dataclass
class _Reply:
    """The reply's text as it stands, and what is known about its calls."""

    text: str = ""
    yielded: int = 0
    call_start: int | None = None
    """Where the reply's first call starts (a trigger captured there, or the forced start)."""
    judged: int = 0
    """The end of the last call found good: text before it is final."""
    ends: list[int] = field(default_factory=list)
    """The end of each call found good."""
    keys: list[CallKey | None] = field(default_factory=list)
    rewinds: int = 0
    """Calls taken back so far."""
    redirects: int = 0
    """Calls rewritten in the primary format so far."""
    reminded: bool = False
    kept_tokens: int = 0
    """Tokens of the text kept so far (what ``max_tokens`` bounds)."""


def steer(
    request: Request, job: GenerationRequest, engine: Engine, steering: Steering
) -> Generation:
    """``engine.run(job)``, steered as ``steering`` says (see the module docstring)."""
    result = GenerationResult()
    # the entries list exists before the first piece: a stream reads it as it grows
    entries = _Entries(result, wanted=job.logprobs is not None)
    return Generation(_steered(request, job, engine, steering, result, entries), result)


def _finished_calls(deltas: list[Any]) -> list[tuple[str, str]]:
    """``(name, arguments)`` of each call the deltas of one feed finish."""
    names: dict[int, str] = {}
    args: dict[int, list[str]] = {}
    for delta in deltas:
        for call in delta.get("tool_calls") or []:
            index = call["index"]
            function = call.get("function") or {}
            if "name" in function:
                names[index] = function["name"]
            args.setdefault(index, []).append(function.get("arguments") or "")
    return [(names.get(i, ""), "".join(args[i])) for i in sorted(args)]


def _steered(
    request: Request,
    job: GenerationRequest,
    engine: Engine,
    steering: Steering,
    result: GenerationResult,
    entries: _Entries,
) -> Iterator[str]:
    reply = _Reply()
    runs: list[GenerationResult] = []
    current, kind, head, left = job, "start", job.prompt, _tokens_left(job.max_tokens, 0)
    while True:
        base = len(reply.text)
        if current.grammar is not None and not current.grammar.lazy and kind != "ban":
            reply.call_start = base  # a forced grammar: the call starts at once
        gen = _start(engine, current, first=not runs)
        if gen is None:  # a rewound run the engine refused (a context the reminder overflows)
            kind = "end"
            break
        entries.begin(gen.result, base)
        action = yield from _run(request, steering, reply, gen, current, kind, entries)
        runs.append(action.result)
        entries.close(action.cut)
        reply.kept_tokens += _kept_tokens(action.result, len(reply.text) - base, action.cut - base)
        reply.text = reply.text[: action.cut]
        kind = action.kind
        # what was taken back does not count: max_tokens bounds the reply (the rewinds are
        # bounded by MAX_REWINDS)
        left = _tokens_left(job.max_tokens, reply.kept_tokens)
        if kind in ("done", "end") or left == 0:
            break
        reply.rewinds += kind in ("remind", "answer", "ban")
        reply.redirects += kind == "native"
        if kind in ("remind", "answer"):  # the model chooses again, reminded
            head, kind = _remind(steering, head, REMINDER if kind == "remind" else ANSWER)
            reply.reminded = True
        current = _next_job(job, steering, kind, prompt=head + reply.text, left=left)
        reply.call_start = None
    if len(reply.text) > reply.yielded:
        yield reply.text[reply.yielded :]
    _account(result, reply, runs, ended=kind == "end", cut=left == 0 and kind != "done")


class _Entries:
    """The logprob entries of the tokens that make the reply, kept as the text is: each run's
    entries up to where the reply was cut after it, appended to ``result.logprobs`` as text
    is yielded (a stream reads that list as it grows)."""

    def __init__(self, result: GenerationResult, *, wanted: bool) -> None:
        self.kept: list[dict[str, Any]] | None = [] if wanted else None
        result.logprobs = self.kept
        self.run: GenerationResult | None = None
        self.next = 0
        self.at = 0

    def begin(self, run: GenerationResult, base: int) -> None:
        self.run, self.next, self.at = run, 0, base

    def close(self, upto: int) -> None:
        """Keep the run's entries of tokens that end by ``upto``; the rest were taken back."""
        run = self.run
        if self.kept is None or run is None or run.logprobs is None:
            return
        while self.next < len(run.logprobs):
            end = self.at + len(str(run.logprobs[self.next].get("token", "")))
            if end > upto:
                break
            self.kept.append(run.logprobs[self.next])
            self.next, self.at = self.next + 1, end


def _kept_tokens(run: GenerationResult, length: int, kept: int) -> int:
    """Of a run's tokens, those of the ``kept`` characters of its ``length`` (in proportion
    where the run was cut inside: an engine-neutral estimate)."""
    if kept >= length:
        return run.completion_tokens
    if kept <= 0 or length <= 0:
        return 0
    return -(-run.completion_tokens * kept // length)


def _start(engine: Engine, job: GenerationRequest, *, first: bool) -> Generation | None:
    """``engine.run(job)``; a rewound run that cannot start ends the reply where it stands
    (``None``) instead of failing a reply already under way. The first run raises as usual."""
    from ..errors import ToolDialectError

    try:
        return engine.run(job)
    except ToolDialectError:
        if first:
            raise
        return None


def _remind(steering: Steering, head: str, words: str) -> tuple[str, str]:
    """``(prompt head, rewind kind)`` after a reminder of ``words``: the reminded prompt, or
    the ban on the same prompt where the template cannot render it."""
    from ..errors import ToolDialectError

    assert steering.reminded is not None
    try:
        return steering.reminded(words), "remind"
    except ToolDialectError:
        return head, "ban"


def _next_job(
    job: GenerationRequest, steering: Steering, kind: str, *, prompt: str, left: int | None
) -> GenerationRequest:
    """The generation that goes on after a rewind of ``kind``."""
    if kind == "native":
        return replace(
            job, prompt=prompt, grammar=steering.native, triggers=Triggers(), max_tokens=left
        )
    if kind == "ban":
        return replace(
            job, prompt=prompt, grammar=steering.ban, triggers=Triggers(), max_tokens=left
        )
    return replace(job, prompt=prompt, max_tokens=left)  # the request's own grammar


@dataclass(frozen=True)
class _Action:
    kind: str
    """``done`` (the run ended), ``end`` (the reply ends at ``cut``), or a rewind to ``cut``:
    ``native``, ``remind`` (the request's grammar on the reminded prompt), ``answer`` (the same
    on a prompt that asks for an answer), ``ban``, ``resume``."""
    cut: int
    result: GenerationResult


def _run(
    request: Request,
    steering: Steering,
    reply: _Reply,
    gen: Generation,
    job: GenerationRequest,
    kind: str,
    entries: _Entries,
) -> Generator[str, None, _Action]:
    """Decode one run into ``reply``, yielding what is final; say how it ended."""
    base = len(reply.text)
    parser = reply_parser(
        request, stream_arguments=False
    )  # a call's deltas come whole, once it ended
    parser.feed(reply.text)
    lazy = job.grammar is not None and job.grammar.lazy
    watch = _Watch(job.triggers, base) if lazy else None
    try:
        for piece in gen:
            reply.text += piece
            if kind == "ban":
                # the ban only has to choose a start that is no call: the request's grammar
                # comes back as soon as a non-blank character is written
                if reply.text[base:].strip():
                    return _Action("resume", len(reply.text), gen.result)
                continue
            waiting = watch is not None and reply.call_start is None
            start, hold = watch.check(reply.text) if waiting and watch else (None, len(reply.text))
            found = _look(steering, reply, parser.feed(piece), start)
            if found is not None:
                return _Action(found[0], found[1], gen.result)
            if reply.call_start is not None and _may_take_back(steering, reply):
                hold = max(reply.call_start, reply.judged)  # a call not yet judged waits
            if hold > reply.yielded:
                entries.close(hold)
                yield reply.text[reply.yielded : hold]
                reply.yielded = hold
    finally:
        gen.close()
    if kind != "ban":
        closed = parser.close(truncated=gen.result.finish_reason == "length")
        found = _judge(steering, reply, closed) or _nothing_said(steering, reply, gen.result)
        if found is not None:
            return _Action(found[0], found[1], gen.result)
    return _Action("done", len(reply.text), gen.result)


def _nothing_said(
    steering: Steering, reply: _Reply, run: GenerationResult
) -> tuple[str, int] | None:
    """A reply that ended by itself with nothing but blanks, where tool results wait for an
    answer: the model is reminded to answer (once a reply)."""
    if (
        reply.text.strip()
        or run.finish_reason != "stop"
        or steering.reminded is None
        or reply.reminded
        or not steering.may_ban
    ):
        return None
    return ("answer", reply.yielded)


def _may_take_back(steering: Steering, reply: _Reply) -> bool:
    """Whether the call being written could still be taken back (a repeat of one before it in
    the reply, or of an answered one): if not, it streams as it is written."""
    return bool(reply.keys) or (bool(steering.answered) and steering.may_ban)


def _look(
    steering: Steering, reply: _Reply, deltas: list[Any], start: int | None
) -> tuple[str, int] | None:
    """What to do after a piece (``start``: where a trigger just captured): ``None`` (go on),
    or ``(action, where the text is cut)``."""
    if start is not None:
        reply.call_start = start
        if _variant(steering, reply, start):
            return ("native", start)
    return _judge(steering, reply, deltas)


def _variant(steering: Steering, reply: _Reply, start: int) -> bool:
    """Whether a call captured at ``start`` is in a variant format that can still be rewritten
    in the primary one."""
    opener = steering.primary_opener.strip()
    captured = reply.text[start:].lstrip()[: len(opener)]
    return (
        steering.native is not None
        and bool(opener)
        and not opener.startswith(captured)
        and start >= reply.yielded
        and reply.redirects < MAX_REWINDS
    )


def _judge(steering: Steering, reply: _Reply, deltas: list[Any]) -> tuple[str, int] | None:
    """Check the calls these deltas finish: a repeat within the reply ends it after the calls
    before; an answered call is taken back (``_undo``), except a forced first call."""
    for name, arguments in _finished_calls(deltas):
        key = call_key(name, arguments)
        if key is not None and key in reply.keys:
            return ("end", reply.ends[-1])
        if key is not None and key in steering.answered and (steering.may_ban or reply.keys):
            return _undo(steering, reply, first=not reply.keys)
        reply.keys.append(key)
        reply.ends.append(len(reply.text))
        reply.judged = len(reply.text)
    return None


def _undo(steering: Steering, reply: _Reply, *, first: bool) -> tuple[str, int]:
    """Take back a repeated call: the reply's first call gives way to the model's next choice
    where a reply may go without one; a later one ends the reply after the calls before it."""
    if not first:
        return ("end", reply.ends[-1])
    start = reply.call_start if reply.call_start is not None else 0
    if steering.reminded is not None and not reply.reminded and start >= reply.yielded:
        return ("remind", start)
    if (
        steering.may_ban
        and steering.ban is not None
        and reply.rewinds < MAX_REWINDS
        and start >= reply.yielded
    ):
        return ("ban", start)
    return ("end", max(start, reply.yielded))


def _tokens_left(max_tokens: int | None, kept: int) -> int | None:
    """What the token limit leaves after ``kept`` tokens (``None``: no limit)."""
    if max_tokens is None or max_tokens <= 0:
        return None
    return max(0, max_tokens - kept)


def _account(
    result: GenerationResult,
    reply: _Reply,
    runs: list[GenerationResult],
    *,
    ended: bool,
    cut: bool,
) -> None:
    """Fill ``result`` for the whole reply: the first run's prompt, every run's tokens."""
    first, last = runs[0], runs[-1]
    result.text = reply.text
    result.finish_reason = "stop" if ended else "length" if cut else last.finish_reason
    result.prompt_tokens = first.prompt_tokens
    result.completion_tokens = sum(r.completion_tokens for r in runs)
    result.discarded_tokens = result.completion_tokens - reply.kept_tokens
    result.last_prompt_eval_tokens = first.last_prompt_eval_tokens
    result.stopped_by = None if ended else last.stopped_by
    result.stats = _joined_stats(runs)


def _joined_stats(runs: list[GenerationResult]) -> Any:
    """The engine's accounts of the runs as one, where its type can join them (``then``);
    else the first run's."""
    stats, decoded = runs[0].stats, runs[0].completion_tokens
    for run in runs[1:]:
        then = getattr(stats, "then", None)
        if then is None or run.stats is None:
            break
        stats, decoded = then(run.stats, tokens_before=decoded), decoded + run.completion_tokens
    return stats


# ---- what to steer, per request ----------------------------------------------------------------


def steering_for(
    request: Request,
    messages: Sequence[Mapping[str, Any]],
    *,
    layout: ArgumentLayout | None = DEFAULT_ARGUMENT_LAYOUT,
    reminded: Callable[[str], str] | None = None,
) -> Steering | None:
    """What to steer in the reply to ``request`` (``None``: nothing, the engine's own run).

    Only a tool-call grammar of the dialect is steered: not ``"none"``, not a ``response_format``
    answer (its grammar decides the call/answer choice), not a call opener the prompt wrote,
    not a caller's own grammar, not header-addressed messages."""
    from ..grammar.build import ToolGrammar, no_call_start

    spec = request.setup.spec
    grammar = request.grammar
    if (
        not isinstance(grammar, ToolGrammar)
        or not request.choice.reads_calls
        or request.answer_schema is not None
        or request.prefill
        or spec.messages is not None
    ):
        return None
    auto = request.choice.optional
    answered = answered_calls(messages)
    question = last_question(messages)
    if reminded is not None and question:
        said = reminded
        reminded = lambda words: said(f"{words} My question: {question}")  # noqa: E731
    return Steering(
        answered=answered,
        reminded=reminded if auto and answered else None,
        native=_native_grammar(request, layout) if auto and grammar.lazy else None,
        primary_opener=spec.primary.opener(),
        ban=no_call_start(spec),
        may_ban=auto,
    )


def last_question(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the user's last message (its first ``QUESTION_CHARS`` characters; ``""``
    when it holds no text)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, Mapping)]
            content = " ".join(p for p in parts if isinstance(p, str))
        return content.strip()[:QUESTION_CHARS] if isinstance(content, str) else ""
    return ""


def _native_grammar(request: Request, layout: ArgumentLayout | None) -> GrammarLike | None:
    """The forced grammar of the primary format for the request's tools, several calls as the
    request allows (``None`` where the dialect cannot force a call)."""
    from ..errors import ToolDialectError
    from .request import grammar_for

    if len(request.setup.spec.formats) < 2:
        return None  # no variant format to come back from
    required = request.choice.requiring()
    try:
        return grammar_for(
            request.setup, request.tools, required, request.parallel, False, "", layout=layout
        )
    except ToolDialectError:
        return None
