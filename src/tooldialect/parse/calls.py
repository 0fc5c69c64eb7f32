"""Generators that read one emission of calls (section, calls, separators) from a growing buffer.

Every reader is a generator over a ``Source``: it yields ``None`` while it cannot decide yet, and
yields events as a call becomes certain (streaming JSON arguments wait by yielding their
``JsonScanner``, see ``Wait``):

* ``Begin(name, id, index)`` once a call is certain (it is never retracted),
* ``Args(fragment)`` argument text (concatenated: the call's ``arguments_json``),
* ``End()`` when the call is finished.

A call is *certain* when its name is read and its JSON arguments object has begun (json and
tagged bodies; the arguments then stream as they arrive), or when the whole body is read (element
and python bodies, JSON arguments written as a string, and JSON bodies whose ``id_key`` comes after
the arguments). A call that fails before it is certain returns ``FAIL`` and its text stays content.
A certain call whose JSON arguments break before the end of the text is no call
(``Context.retract``, the default): its reader yields ``End(void=True)`` and fails, and the
stream parser, which held the call's deltas, drops it. Where arguments stream early (``retract``
off), or where the text ends inside the arguments, a certain call that breaks is kept with its
arguments healed from the last safe point and returns ``BROKEN``; the text after that point
becomes content.

Truncation (``Context.truncated``: generation hit ``max_tokens``) never completes a call: a call
cut off before it was certain fails, so its text stays content; a certain call whose JSON
arguments were cut keeps them as the partial text written (not healed) and ends with
``End(cut=True)``; an element body whose closing marker is missing at the end is not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialect.spec import (
    TOKEN_QUOTE,
    CallFormat,
    DialectSpec,
    ElementBody,
    JsonBody,
    PythonBody,
    TaggedBody,
    format_template,
)
from ..dialect.value_codecs import value_codec
from .escaped import read_element_call
from .events import BROKEN, FAIL, OK, Args, Begin, End, Event, Reader, Text, Wait, certain
from .json_body import end_event, json_head_patterns, read_json_body, stream_args
from .markers import (
    Segment,
    Source,
    closes_after,
    compile_template,
    match_template,
    probe_closer,
    probe_closers,
    probe_literal,
    skip_ws,
    split_literal,
    stop_before,
    without_markers,
)
from .pycall import KwargsSyntax, More, ScanMemo, read_kwargs, retype_strings
from .pydict import python_object_end
from .raw_args import read_raw_call

__all__ = [
    "BROKEN",
    "FAIL",
    "OK",
    "Args",
    "Begin",
    "Context",
    "End",
    "Event",
    "FormatPlan",
    "Reader",
    "Wait",
    "read_emission",
]


@dataclass(frozen=True)
class FormatPlan:
    """One ``CallFormat`` with its templates compiled and markers stripped, built once per spec."""

    fmt: CallFormat
    section_open: str
    section_close: str
    call_open: str
    call_close: str
    separator: str
    head: tuple[Segment, ...]
    param: tuple[Segment, ...]
    tail: str
    args_open: str
    args_close: str
    json_head: re.Pattern[str] | None = None
    """JSON bodies: ``{"name": "...", "arguments": `` up to the ``{`` of the arguments, in one match
    (the common case of ``_json_body``, which reads it token by token otherwise)."""
    json_head_prefix: re.Pattern[str] | None = None
    """Full-matches every text that may still grow into a ``json_head`` match."""
    alts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Envelope cores (``call_open``, ``section_close``, ``call_close``, ``tail``,
    ``args_close``) to their variants without ``CallFormat.optional_markers``."""
    alt_separators: tuple[str, ...] = ()
    """Stripped ``CallFormat.alt_separators``."""
    param_pre: tuple[Segment, ...] = ()
    """Element bodies: the param template up to its ``{value}`` (empty when it has none)."""
    param_post: tuple[Segment, ...] = ()
    """Element bodies: the param template after its ``{value}``, its closer first."""
    value_ends: tuple[str, ...] = ()
    """Element bodies: literals that may end a value: its own closer (first), else, the closer
    being missing, the next parameter, the body's tail, the call or section closer, or the
    opener of a next call."""
    known_names_only: bool = False
    """A markerless layout of a markerless dialect: a call counts only when it names an offered
    tool (when tools are known)."""
    closers: tuple[str, ...] = ()
    """Closers that may follow a call's arguments (``args_close``, ``tail``, ``call_close``,
    ``section_close``): JSON arguments that break right before one only miss their braces."""

    @classmethod
    def build(cls, fmt: CallFormat, *, known_names_only: bool = False) -> FormatPlan:
        body = fmt.body
        head: tuple[Segment, ...] = ()
        param: tuple[Segment, ...] = ()
        tail = args_open = args_close = ""
        optional = fmt.optional_markers
        if isinstance(body, (TaggedBody, ElementBody)):
            head = compile_template(body.head, optional=optional)
            tail = body.tail.strip()
        if isinstance(body, TaggedBody):
            args_open, args_close = body.args_open.strip(), body.args_close.strip()
        param_pre: tuple[Segment, ...] = ()
        param_post: tuple[Segment, ...] = ()
        value_ends: tuple[str, ...] = ()
        if isinstance(body, ElementBody):
            param = compile_template(body.param, optional=optional)
            param_pre, param_post, value_ends = _element_ends(fmt, body, param, head)
        if isinstance(body, PythonBody):
            head = compile_template(body.call_open, optional=optional)
            tail = body.call_close.strip()
        json_head = json_head_prefix = None
        if isinstance(body, JsonBody):
            json_head, json_head_prefix = json_head_patterns(body)
        closers = (fmt.call_open, fmt.section_close, fmt.call_close, tail, args_close)
        alts = {c.strip(): without_markers(c.strip(), optional) for c in closers if c.strip()}
        return cls(
            fmt=fmt,
            alts={k: v for k, v in alts.items() if v},
            alt_separators=tuple(dict.fromkeys(s.strip() for s in fmt.alt_separators)),
            json_head=json_head,
            json_head_prefix=json_head_prefix,
            section_open=fmt.section_open.strip(),
            section_close=fmt.section_close.strip(),
            call_open=fmt.call_open.strip(),
            call_close=fmt.call_close.strip(),
            separator=fmt.separator.strip(),
            head=head,
            param=param,
            tail=tail,
            args_open=args_open,
            args_close=args_close,
            param_pre=param_pre,
            param_post=param_post,
            value_ends=value_ends,
            known_names_only=known_names_only,
            closers=tuple(
                dict.fromkeys(
                    c
                    for c in (args_close, tail, fmt.call_close.strip(), fmt.section_close.strip())
                    if c
                )
            ),
        )


def _element_ends(
    fmt: CallFormat, body: ElementBody, param: tuple[Segment, ...], head: tuple[Segment, ...]
) -> tuple[tuple[Segment, ...], tuple[Segment, ...], tuple[str, ...]]:
    """An element body's param template split at ``{value}`` (``param_pre``, ``param_post``) and
    the literals that may end a value (``FormatPlan.value_ends``); empty where the value is
    read otherwise (to the end of its line)."""
    at = next((i for i, seg in enumerate(param) if seg.field == "value"), -1)
    closed = at > 0 and at + 1 < len(param) and not param[at + 1].field and param[at + 1].core
    # ``{key}: {value}`` joined by a separator: a value ends at the separator before a next
    # parameter, or at a closer (element_scan.delimited_end)
    delimited = at > 0 and at + 1 == len(param) and bool(body.param_separator)
    if not (closed or delimited):
        return (), (), ()
    param_pre, param_post = param[:at], param[at + 1 :]
    ends = []
    if closed:
        ends.append(param_post[0].core)
        if not param_pre[0].field and param_pre[0].core:
            ends.append(param_pre[0].core)
    ends += [body.tail.strip(), fmt.call_close.strip(), fmt.section_close.strip()]
    # a new call beginning: this one's closers were cut (its text stays content)
    ends += [fmt.call_open.strip(), fmt.section_open.strip()]
    if head and not head[0].field:
        ends.append(head[0].core)
    return param_pre, param_post, tuple(dict.fromkeys(e for e in ends if e))


@dataclass
class Context:
    """What call readers need besides the text."""

    spec: DialectSpec
    schemas: Mapping[str, dict[str, Any]]
    truncated: bool = False
    """The text was cut by the token limit (set when the stream closes)."""
    retract: bool = True
    """A call whose JSON arguments break before the end of the text is not a call (its
    announcement is held until it ends); off where arguments stream as they arrive
    (``StreamParser(stream_arguments=True)``): such a call is then kept, healed."""
    names: frozenset[str] = field(init=False, default=frozenset())
    """The offered tools' names."""

    def __post_init__(self) -> None:
        self.names = frozenset(self.schemas)


def _tagged_body(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0:
        return p, FAIL
    q = yield from probe_literal(src, p, plan.args_open)
    if q < 0 and plan.args_open.startswith("```"):
        q = yield from _probe_fence(src, p)  # a fence with another info string, or none
    if q < 0:
        q = p  # the arguments' opener is missing: the "{" below decides
    p = yield from skip_ws(src, q)
    if src.buf[p : p + 1] != "{":
        return (yield from read_raw_call(src, q, plan, ctx, fields))
    yield Begin(fields["name"], fields.get("id"), fields.get("index"))
    p, complete = yield from stream_args(src, p, ctx, plan.closers)
    if p < 0:
        yield End(void=True)
        return p, FAIL  # broken JSON arguments: not a call
    yield end_event(src, ctx, complete)
    if not complete:
        return p, BROKEN
    # closing literals after complete arguments are tolerated when missing
    for core in (plan.args_close, format_template(plan.tail, name=fields["name"])):
        q = yield from probe_closers(src, p, core, plan.alts)
        if q < 0:
            return p, OK
        p = q
    return p, OK


_FENCE = re.compile(r"\s*```[\w.+-]*")


def _probe_fence(src: Source, p: int) -> Generator[None, None, int]:
    """End of a code fence opener (```, ```json, ```python) at ``p``, else -1."""
    while True:
        m = _FENCE.match(src.buf, p)
        if m is None:
            if src.final or not "```".startswith(src.buf[p:].lstrip()):
                return -1
        elif m.end() < len(src.buf) or src.final:
            return m.end()
        yield None


_GO, _WAIT, _BAD = -1, -2, -3
"""``_CallScan`` results: read on, wait for more text, not a call."""


@dataclass
class _CallScan:
    """Where a whole-call codec's closer comes, outside ``string_quote`` strings and
    brackets."""

    close: str
    i: int
    depth: int = 0
    quote: str = ""
    string_quote: str = TOKEN_QUOTE
    """The token around strings."""

    def run(self, buf: str, lim: int, final: bool) -> int:
        """Scan ``buf`` up to ``lim``: the closer's position, ``_WAIT`` or ``_BAD``."""
        close = self.close
        while self.i < lim:
            if self.quote:
                k = buf.find(self.quote, self.i, lim)
                if k < 0:
                    self.i = max(self.i, lim - len(self.quote) + 1)
                    return _WAIT
                self.i = k + len(self.quote)
                self.quote = ""
                continue
            i = self.i
            if self.depth == 0:
                if buf.startswith(close, i):
                    return i
                if not final and len(buf) - i < len(close) and close.startswith(buf[i:]):
                    return _WAIT
            st = self._token(buf, final)
            if st != _GO:
                return st
        return _WAIT

    def _token(self, buf: str, final: bool) -> int:
        i = self.i
        sq = self.string_quote
        if not final and len(buf) - i < len(sq) and sq.startswith(buf[i:]):
            return _WAIT
        if buf.startswith(sq, i):
            self.quote = sq
            self.i = i + len(sq)
            return _GO
        c = buf[i]
        if c in "([{":
            self.depth += 1
        elif c in ")]}":
            self.depth -= 1
            if self.depth < 0:
                return _BAD
        self.i = i + 1
        return _GO


def _stops(plan: FormatPlan) -> tuple[str, ...]:
    """A next call's opener ends this one unclosed (so scans stay linear); one-character openers
    such as "[" are value syntax, not markers."""
    openers = [split_literal(o)[0] for o in (plan.section_open, plan.call_open) if o]
    return tuple(o for o in openers if len(o) > 2)


def _python_kwargs(
    src: Source, p: int, plan: FormatPlan, body: PythonBody, ctx: Context, fields: dict[str, str]
) -> Reader:
    """Python-valued arguments, read by the tolerant scanner (``pycall``): read again as text
    arrives that may decide them, resuming its searches (``memo``)."""
    schema = ctx.schemas.get(fields["name"], {})
    separator = body.arg_separator.strip() or body.arg_separator
    followers = [plan.section_close, plan.call_close]
    if plan.separator.strip() != separator:  # one alike is followed by a next call (pycall)
        followers.append(plan.separator.strip())
    followers += [a for c in (plan.section_close, plan.call_close) for a in plan.alts.get(c, ())]
    stops, seen, needs = _stops(plan), p, ""
    memo = ScanMemo()
    while True:
        buf = src.buf
        lim, hit = stop_before(buf, p, stops, final=src.final) if stops else (len(buf), False)
        final = src.final or hit
        if final or not needs or any(c in buf[seen:lim] for c in needs):
            syntax = KwargsSyntax(
                assign=body.assign.strip() or body.assign,
                separator=separator,
                close=plan.tail,
                followers=tuple(f for f in followers if f),
                cut=ctx.truncated,  # known once the text is final
                call_open=body.call_open.partition("{name}")[2].strip() or "(",
            )
            got = read_kwargs(
                buf if lim == len(buf) else buf[:lim],
                p,
                syntax,
                final=final,
                schema=schema if isinstance(schema, Mapping) else {},
                memo=memo,
            )
            if got is None:
                return p, FAIL
            if not isinstance(got, More):
                end, args = got
                args_json = json.dumps(args, ensure_ascii=False)
                yield from certain(fields["name"], fields.get("id"), fields.get("index"), args_json)
                return end, OK
            seen, needs = lim, got.needs
        yield None


def _python_body(src: Source, p: int, plan: FormatPlan, body: PythonBody, ctx: Context) -> Reader:
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0 or not plan.tail:
        return p, FAIL
    codec = value_codec(body.value_codec)
    if codec.incremental:
        return (yield from _python_kwargs(src, p, plan, body, ctx, fields))
    scan = _CallScan(plan.tail, p, string_quote=body.string_quote)
    stops = _stops(plan)
    while True:
        buf = src.buf
        lim, hit = stop_before(buf, scan.i, stops, final=src.final) if stops else (len(buf), False)
        k = scan.run(buf, lim, src.final)
        if k == _BAD:
            return scan.i, FAIL
        if k >= 0:
            args = codec.decode_arguments(
                buf[p:k], assign=body.assign, separator=body.arg_separator, quote=body.string_quote
            )
            if args is None:
                return k, FAIL
            schema = ctx.schemas.get(fields["name"], {})
            args = retype_strings(args, schema if isinstance(schema, Mapping) else {})
            args_json = json.dumps(args, ensure_ascii=False)
            yield from certain(fields["name"], fields.get("id"), fields.get("index"), args_json)
            return k + len(plan.tail), OK
        if hit or src.final:
            return scan.i, FAIL
        yield None


def _read_call(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    q = yield from probe_literal(src, p, plan.call_open)
    for alt in plan.alts.get(plan.call_open, ()):
        if q >= 0:
            break
        q = yield from probe_literal(src, p, alt)
    if q < 0:
        return p, FAIL
    body = plan.fmt.body
    if isinstance(body, JsonBody):
        reader = read_json_body(src, q, plan, body, ctx)
    elif isinstance(body, TaggedBody):
        reader = _tagged_body(src, q, plan, ctx)
    elif isinstance(body, ElementBody):
        reader = read_element_call(src, q, plan, body, ctx)
    else:
        reader = _python_body(src, q, plan, body, ctx)
    if plan.fmt.offered_names_only and ctx.schemas:
        reader = _offered_only(reader, ctx.schemas)
    end, status = yield from reader
    if status != OK:
        return end, status
    q = yield from probe_closers(src, end, plan.call_close, plan.alts)
    return (q if q >= 0 else end), OK  # a missing call_close (EOS cut it) is tolerated


def _offered_only(reader: Reader, names: Mapping[str, Any]) -> Reader:
    """``reader``, failing (before anything is emitted) when its call names no offered tool."""
    try:
        ev = next(reader)
        while not isinstance(ev, Begin):  # only waits come before a call is certain
            yield ev
            ev = next(reader)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    if ev.name not in names:
        reader.close()
        return 0, FAIL
    yield ev
    return (yield from reader)


def _bad_entry(src: Source, p: int, plan: FormatPlan) -> Generator[None, None, int]:
    """End of the object at ``p`` (after whitespace) that failed to read as a call, in a list of
    JSON calls, when a separator or the list's closer follows it; else -1."""
    if not isinstance(plan.fmt.body, JsonBody) or not plan.separator:
        return -1
    p = yield from skip_ws(src, p)
    if src.buf[p : p + 1] != "{":
        return -1
    # the next call's opener ends the search, so that each opener's scan ends at the next one
    openers = [split_literal(o)[0] for o in (plan.section_open, plan.call_open) if o]
    stops = tuple(o for o in openers if len(o) > 2)
    while True:
        buf = src.buf
        lim, hit = stop_before(buf, p, stops, final=src.final) if stops else (len(buf), False)
        end = python_object_end(buf, p, lim)
        if end is None and not hit and not src.final:
            yield None
            continue
        break
    if end is None or end < 0:
        return -1
    q = yield from probe_literal(src, end, plan.separator)
    if q < 0 and not (yield from closes_after(src, end, plan.section_close, plan.alts)):
        return -1
    return end


def _separator(src: Source, q: int, plan: FormatPlan) -> Generator[None, None, tuple[int, int]]:
    """``(r, q)``: where the next call starts after the separator at ``q`` (-1: none follows),
    and ``q`` moved over a separator cut short by the end of the text."""
    r = yield from probe_literal(src, q, plan.separator)
    for alt in plan.alt_separators:
        if r >= 0:
            break
        r = yield from probe_literal(src, q, alt)
    if r < 0:
        r = yield from probe_closer(src, q, plan.separator)
        if r >= 0:  # the separator's start ended the text: drop it
            q = r
        return -1, q
    return r, q


def _closing_marker(separator: str) -> bool:
    """A separator that is one closing marker (``</x>``, ``<|/x|>``, ``<end_x>``, ``<|x_end|>``)."""
    return bool(_CLOSING_MARKER.fullmatch(separator))


_CLOSING_MARKER = re.compile(r"<\|?/[^<>\s]+>|<\|?(?:end|close)[_|][^<>\s]*>|<\|?[^<>\s]*_end\|?>")


def read_emission(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    """Read section_open, calls joined by separators, section_close from ``p``.

    Returns (end, status): ``FAIL`` when no call was read (nothing was emitted), ``BROKEN`` when
    the last call broke after it became certain, else ``OK``. In a list of JSON calls, an entry
    that is no call is skipped: its text is content (``Text``), the calls after it are read.
    """
    q = yield from probe_literal(src, p, plan.section_open)
    if q < 0:
        return p, FAIL
    count = 0
    skipped: list[str] = []
    while True:
        r = q
        if (count or skipped) and (plan.separator or plan.alt_separators):
            r, q = yield from _separator(src, q, plan)
            if r < 0:
                break
        end, status = yield from _read_call(src, r, plan, ctx)
        if status == FAIL:
            if r != q and (
                _closing_marker(plan.separator)
                or (yield from closes_after(src, r, plan.section_close, plan.alts))
            ):
                # a trailing separator before the closer or the end of the text; a marker
                # separator after the last call is its closer (``<end_function_call>`` that a
                # template writes after every call but derives as what joins them)
                q = r
                break
            skip = (yield from _bad_entry(src, r, plan)) if plan.section_open else -1
            if skip < 0:
                break
            skipped.append(src.buf[r:skip].strip())
            q = skip
            continue
        if skipped and count:
            for text in skipped:  # broken entries before this call: content
                yield Text(text)
            skipped.clear()
        count += 1
        q = end
        if status == BROKEN:
            return q, BROKEN
        if not ctx.spec.parallel_calls:
            break
    if not count:
        return p, FAIL
    for text in skipped:
        yield Text(text)
    r = yield from probe_closers(src, q, plan.section_close, plan.alts)
    return (r if r >= 0 else q), OK  # a missing section_close is tolerated
