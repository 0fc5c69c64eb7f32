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
A certain call that breaks (malformed, or the text ends) is kept with its arguments healed from the
last safe point and returns ``BROKEN``; the text after that point becomes content.

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
    GEMMA4_QUOTE,
    CallFormat,
    DialectSpec,
    ElementBody,
    JsonBody,
    PythonBody,
    TaggedBody,
    format_template,
)
from .element_body import read_element_body
from .events import BROKEN, FAIL, OK, Args, Begin, End, Event, Reader, Wait, certain
from .jsonscan import DONE, ERROR, NEED, JsonScanner
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
from .pydict import read_python_dict
from .raw_args import read_raw_call
from .values import parse_gemma4_kwargs, parse_python_kwargs

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
            at = next((i for i, seg in enumerate(param) if seg.field == "value"), -1)
            if at > 0 and at + 1 < len(param) and not param[at + 1].field and param[at + 1].core:
                param_pre, param_post = param[:at], param[at + 1 :]
                ends = [param_post[0].core]
                if not param_pre[0].field and param_pre[0].core:
                    ends.append(param_pre[0].core)
                ends += [body.tail.strip(), fmt.call_close.strip(), fmt.section_close.strip()]
                # a new call beginning: this one's closers were cut (its text stays content)
                ends += [fmt.call_open.strip(), fmt.section_open.strip()]
                if head and not head[0].field:
                    ends.append(head[0].core)
                value_ends = tuple(dict.fromkeys(e for e in ends if e))
        if isinstance(body, PythonBody):
            head = compile_template(body.call_open, optional=optional)
            tail = body.call_close.strip()
        json_head = json_head_prefix = None
        if isinstance(body, JsonBody):
            json_head, json_head_prefix = _json_head_patterns(body)
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
        )


_JSON_WS = r"\s*"  # what ``skip_ws`` skips between tokens
_PLAIN_NAME = r'[^"\\\x00-\x1f]*'  # a JSON string body that decodes to itself


def _json_head_patterns(body: JsonBody) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """``(head, prefix)`` regexes for ``FormatPlan.json_head``; ``(None, None)`` where the body's
    head is not the plain name-then-arguments case (the token reader handles those)."""
    if body.name_key is None or body.extra or body.arguments_first:
        return None, None
    if body.id_key and not body.id_first:
        return None, None
    if body.id_key:  # id first (Command R7B): its value comes before the name
        return None, None
    # elements: (regex, literal or None); literals get partial alternatives in the prefix regex
    parts: list[tuple[str, str | None]] = [
        (_JSON_WS, None),
        ("{", "{"),
        (_JSON_WS, None),
        (json.dumps(body.name_key), json.dumps(body.name_key)),
        (_JSON_WS, None),
        (":", ":"),
        (_JSON_WS, None),
        ('"', '"'),
        (f"({_PLAIN_NAME})", None),
        ('"', '"'),
        (_JSON_WS, None),
        (",", ","),
        (_JSON_WS, None),
        (json.dumps(body.arguments_key), json.dumps(body.arguments_key)),
        (_JSON_WS, None),
        (":", ":"),
        (_JSON_WS, None),
    ]
    head = "".join(re.escape(lit) if lit is not None else rx for rx, lit in parts) + r"(?=\{)"
    rest = ""
    for rx, lit in reversed(parts):
        if lit is None:
            rest = f"{rx.replace('(', '(?:')}(?:{rest})?" if rest else rx.replace("(", "(?:")
            continue
        partial = "|".join(re.escape(lit[:k]) for k in range(len(lit) - 1, 0, -1))
        full = f"{re.escape(lit)}(?:{rest})?" if rest else re.escape(lit)
        rest = f"(?:{full}|{partial})" if partial else f"(?:{full})"
    return re.compile(head), re.compile(f"(?:{rest})?")


@dataclass
class Context:
    """What call readers need besides the text."""

    spec: DialectSpec
    schemas: Mapping[str, dict[str, Any]]
    truncated: bool = False
    """The text was cut by the token limit (set when the stream closes)."""
    names: frozenset[str] = field(init=False, default=frozenset())
    """The offered tools' names."""

    def __post_init__(self) -> None:
        self.names = frozenset(self.schemas)


def _run(src: Source, sc: JsonScanner) -> Generator[None, None, int]:
    while True:
        st = sc.advance(src.buf, src.final)
        if st != NEED:
            return st
        if src.final:
            return ERROR
        yield None


def _stream_args(
    src: Source, p: int, ctx: Context
) -> Generator[Event | Wait, None, tuple[int, bool]]:
    """Stream a JSON object's text from ``p``; returns (end, complete). Incomplete: healed, and
    ``end`` is the raw position of the last safe point; cut by truncation: the partial text as
    read, to the end. It waits by yielding its scanner (see ``Wait``)."""
    sc = JsonScanner(p)
    while True:
        cut = src.final and ctx.truncated  # the text ends because the token limit cut it
        st = sc.advance(src.buf, src.final and not cut)
        if st == DONE:
            rest = sc.take_all()
            if rest:
                yield Args(rest)
            return sc.pos, True
        if st == NEED and cut:  # the partial text as written, unread tail included
            rest = sc.take_safe() + sc.take_all() + src.buf[sc.pos :]
            if rest:
                yield Args(rest)
            return len(src.buf), False
        if st == ERROR or src.final:
            yield Args(sc.take_safe() + sc.heal())
            return sc.safe_pos, False
        frag = sc.take_safe()
        if frag:
            yield Args(frag)
        yield sc  # the stream parser may drive the scanner itself until it is DONE or ERROR


def _args_from_string(text: str) -> str | None:
    """JSON arguments written as a JSON string: the decoded text, if it is a JSON object."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = json.loads(text, strict=False)
        except ValueError:
            return None
        return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else None
    return text if isinstance(value, dict) else None


def _end(src: Source, ctx: Context, complete: bool) -> End:
    return End(cut=not complete and ctx.truncated and src.final)


# Models swap these two names of the arguments key (Qwen writes "parameters", Llama "arguments").
_ARGS_KEYS = frozenset(("arguments", "parameters"))


def _json_body(src: Source, p: int, plan: FormatPlan, body: JsonBody, ctx: Context) -> Reader:
    name: str | None = None
    cid: str | None = None
    args_json: str | None = None
    committed = False
    # the id must be in the first delta: with the id after the arguments, wait for the whole body
    # (and with the arguments before the name, for the name)
    can_stream = not (body.id_key and not body.id_first) and not body.arguments_first
    first = True
    head, prefix = plan.json_head, plan.json_head_prefix
    while head is not None and prefix is not None:
        # the common head in one match; what the token reader below would read, the same way
        buf = src.buf
        m = head.match(buf, p)
        if m is not None:
            name, committed, first = m.group(1), True, False
            if plan.known_names_only and ctx.schemas and name not in ctx.schemas:
                return p, FAIL
            yield Begin(name, cid, None)
            p, complete = yield from _stream_args(src, m.end(), ctx)
            if not complete:
                yield _end(src, ctx, complete)
                return p, BROKEN
            args_json = ""
            q = yield from skip_ws(src, p)
            c = src.buf[q : q + 1]
            if c == "}":
                yield End()
                return q + 1, OK
            if c != ",":
                yield End()
                return p, OK  # the envelope's closing brace is missing: the call is whole
            p = q + 1
            break
        if src.final or prefix.fullmatch(buf, p) is None:
            break
        yield None
    brace = p
    if not committed:
        p = yield from skip_ws(src, p)
        if p >= len(src.buf) or src.buf[p] != "{":
            return p, FAIL
        brace, p = p, p + 1
    while True:
        p = yield from skip_ws(src, p)
        buf = src.buf
        if first and not committed and buf[p : p + 1] == "'":  # a Python dict (Hermes 2 Pro)
            return (yield from read_python_dict(src, brace, plan, body, ctx, _ARGS_KEYS))
        if p < len(buf) and buf[p] == "}" and first:
            p += 1
            break
        if p >= len(buf) or buf[p] != '"':
            break
        sc = JsonScanner(p)
        if (yield from _run(src, sc)) != DONE:
            break
        key = json.loads(sc.take_all())
        q = yield from probe_literal(src, sc.pos, ":")
        if q < 0:
            break
        p = yield from skip_ws(src, q)
        buf = src.buf
        is_args = (
            (key in _ARGS_KEYS or key == body.arguments_key or key in body.arguments_aliases)
            if body.name_key
            else name is None
        )
        if body.name_key is None and is_args:
            name = key
        if is_args and can_stream and name is not None and not committed and buf[p : p + 1] == "{":
            if plan.known_names_only and ctx.schemas and name not in ctx.schemas:
                return p, FAIL
            committed = True
            yield Begin(name, cid, None)
            p, complete = yield from _stream_args(src, p, ctx)
            if not complete:
                yield _end(src, ctx, complete)
                return p, BROKEN
            args_json = ""
        else:
            sc = JsonScanner(p)
            if (yield from _run(src, sc)) != DONE:
                break
            text = sc.take_all()
            p = sc.pos
            if key == body.name_key and name is None:
                value = json.loads(text)
                if not isinstance(value, str):
                    break
                name = value
            elif is_args and args_json is None:
                if text.startswith("{"):
                    args_json = text
                elif text.startswith('"'):
                    args_json = _args_from_string(json.loads(text))
                    if args_json is None:
                        break
                elif text == "null":
                    args_json = "{}"
                else:
                    break
            elif key == body.id_key and cid is None:
                value = json.loads(text)
                if isinstance(value, (str, int)) and not isinstance(value, bool):
                    cid = str(value)
        q = yield from skip_ws(src, p)
        buf = src.buf
        first = False
        if buf[q : q + 1] == ",":
            p = q + 1
            continue
        if buf[q : q + 1] == "}":
            p = q + 1
            if committed:
                yield End()
                return p, OK
            if name is None:
                return p, FAIL
            if plan.known_names_only and ctx.schemas and name not in ctx.schemas:
                return p, FAIL
            yield from certain(name, cid, None, args_json if args_json is not None else "{}")
            return p, OK
        break
    if committed:
        yield End()
        return p, BROKEN
    return p, FAIL


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
    p, complete = yield from _stream_args(src, p, ctx)
    yield _end(src, ctx, complete)
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


def _python_body(src: Source, p: int, plan: FormatPlan, body: PythonBody, ctx: Context) -> Reader:
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0 or not plan.tail:
        return p, FAIL
    close = plan.tail
    gemma = body.value_codec == "gemma4"
    start = i = p
    depth = 0
    quote = ""
    # a next call's opener ends this one unclosed (so scans stay linear); one-character openers
    # such as "[" are value syntax, not markers
    openers = [split_literal(o)[0] for o in (plan.section_open, plan.call_open) if o]
    stops = tuple(o for o in openers if len(o) > 2)
    while True:
        buf = src.buf
        n = len(buf)
        lim, hit = stop_before(buf, i, stops, final=src.final) if stops else (n, False)
        while i < lim:
            if quote:
                if gemma:
                    k = buf.find(quote, i, lim)
                    if k < 0:
                        i = max(i, lim - len(quote) + 1)
                        break
                    i = k + len(quote)
                    quote = ""
                    continue
                c = buf[i]
                if c == "\\":
                    if i + 1 >= lim:
                        break
                    i += 2
                    continue
                if c == quote:
                    quote = ""
                i += 1
                continue
            if depth == 0 and buf.startswith(close, i):
                inner = buf[start:i]
                if gemma:
                    args = parse_gemma4_kwargs(
                        inner, assign=body.assign, separator=body.arg_separator
                    )
                elif body.assign.strip() == "=":
                    args = parse_python_kwargs(inner)
                else:
                    args = None
                if args is None:
                    return i, FAIL
                yield from certain(
                    fields["name"],
                    fields.get("id"),
                    fields.get("index"),
                    json.dumps(args, ensure_ascii=False),
                )
                return i + len(close), OK
            if depth == 0 and n - i < len(close) and close.startswith(buf[i:]) and not src.final:
                break
            c = buf[i]
            partial_quote = n - i < len(GEMMA4_QUOTE) and GEMMA4_QUOTE.startswith(buf[i:])
            if gemma and partial_quote and not src.final:
                break
            if gemma and buf.startswith(GEMMA4_QUOTE, i):
                quote = GEMMA4_QUOTE
                i += len(GEMMA4_QUOTE)
                continue
            if not gemma and c in "'\"":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    return i, FAIL
            i += 1
        if hit or src.final:
            return i, FAIL
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
        reader = _json_body(src, q, plan, body, ctx)
    elif isinstance(body, TaggedBody):
        reader = _tagged_body(src, q, plan, ctx)
    elif isinstance(body, ElementBody):
        reader = read_element_body(src, q, plan, body, ctx)
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


def read_emission(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    """Read section_open, calls joined by separators, section_close from ``p``.

    Returns (end, status): ``FAIL`` when no call was read (nothing was emitted), ``BROKEN`` when
    the last call broke after it became certain, else ``OK``.
    """
    q = yield from probe_literal(src, p, plan.section_open)
    if q < 0:
        return p, FAIL
    count = 0
    while True:
        r = q
        if count and (plan.separator or plan.alt_separators):
            r = yield from probe_literal(src, q, plan.separator)
            for alt in plan.alt_separators:
                if r >= 0:
                    break
                r = yield from probe_literal(src, q, alt)
            if r < 0:
                r = yield from probe_closer(src, q, plan.separator)
                if r >= 0:  # the separator's start ended the text: drop it
                    q = r
                break
        end, status = yield from _read_call(src, r, plan, ctx)
        if status == FAIL:
            if r != q and (yield from closes_after(src, r, plan.section_close, plan.alts)):
                q = r  # a trailing separator before the closer or the end of the text
            break
        count += 1
        q = end
        if status == BROKEN:
            return q, BROKEN
        if not ctx.spec.parallel_calls:
            break
    if not count:
        return p, FAIL
    r = yield from probe_closers(src, q, plan.section_close, plan.alts)
    return (r if r >= 0 else q), OK  # a missing section_close is tolerated
