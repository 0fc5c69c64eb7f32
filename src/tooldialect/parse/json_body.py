"""The JSON-body reader (``body.kind == "json"``): ``{"name": ..., "arguments": {...}}`` with its
key variants, and the streaming of JSON arguments that tagged bodies share (see ``calls``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Generator
from dataclasses import dataclass

from ..dialect.spec import CallFormat, JsonBody
from .jsonscan import DONE, ERROR, NEED, JsonScanner
from .markers import Source, probe_literal, skip_ws
from .plan import BodyPlan, Context, FormatPlan
from .pydict import read_python_dict
from .reader_events import BROKEN, FAIL, OK, Args, Begin, End, Event, Reader, Wait, certain

__all__ = [
    "json_head_patterns",
    "json_name_key",
    "plan_json_body",
    "read_json_body",
    "stream_args",
]


_JSON_WS = r"\s*"  # what ``skip_ws`` skips between tokens
_PLAIN_NAME = r'[^"\\\x00-\x1f]*'  # a JSON string body that decodes to itself


def plan_json_body(fmt: CallFormat, body: JsonBody) -> BodyPlan:
    """A JSON body's head patterns (the rest is read generically)."""
    json_head, json_head_prefix = json_head_patterns(body)
    return BodyPlan(json_head=json_head, json_head_prefix=json_head_prefix, json_object=True)


def json_name_key(body: JsonBody) -> str | None:
    """The key naming the tool, by which a markerless call is told inside prose."""
    return body.name_key


def json_head_patterns(body: JsonBody) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """``(head, prefix)`` regexes for ``FormatPlan.json_head``; ``(None, None)`` where the body's
    head is not the plain name-then-arguments case (the token reader handles those)."""
    if body.name_key is None or body.extra or body.arguments_first or body.id_key:
        return None, None
    return _head_patterns(body.name_key, body.arguments_key)


@functools.lru_cache(maxsize=64)
def _head_patterns(name_key: str, arguments_key: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    # built once per key pair: a parser plan builds dozens of JSON layouts with the same keys
    # elements: (regex, literal or None); literals get partial alternatives in the prefix regex
    parts: list[tuple[str, str | None]] = [
        (_JSON_WS, None),
        ("{", "{"),
        (_JSON_WS, None),
        (json.dumps(name_key), json.dumps(name_key)),
        (_JSON_WS, None),
        (":", ":"),
        (_JSON_WS, None),
        ('"', '"'),
        (f"({_PLAIN_NAME})", None),
        ('"', '"'),
        (_JSON_WS, None),
        (",", ","),
        (_JSON_WS, None),
        (json.dumps(arguments_key), json.dumps(arguments_key)),
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


def run_scanner(src: Source, sc: JsonScanner) -> Generator[None, None, int]:
    """Drive ``sc`` over the growing text until it is DONE or ERROR (ERROR at the end)."""
    while True:
        st = sc.advance(src.buf, src.final)
        if st != NEED:
            return st
        if src.final:
            return ERROR
        yield None


def stream_args(
    src: Source, p: int, ctx: Context, closers: tuple[str, ...] = ()
) -> Generator[Event | Wait, None, tuple[int, bool]]:
    """Stream a JSON object's text from ``p``; returns (end, complete). Incomplete: healed, and
    ``end`` is the raw position of the last safe point; cut by truncation: the partial text as
    read, to the end. Broken right before one of ``closers`` (the object's closing braces
    missing before the call's closer): healed, and complete. Broken elsewhere before the end of
    the text (``Context.retract``): ``end`` is -1, the call is not one. It waits by yielding
    its scanner (``Wait``)."""
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
        if st == ERROR and _closer_at(src.buf, sc.pos, closers) and _heals_whole(src.buf, sc):
            # the object's closing braces are missing before the call's closer: healed, whole
            yield Args(sc.take_safe() + sc.heal())
            return sc.pos, True
        if st == ERROR and not src.final and _closer_may_start(src.buf, sc.pos, closers):
            # the text ends inside what may become that closer ("\n`" of "\n```"): the whole
            # text decides, so a chunk boundary must not (the scanner stays at ERROR)
            yield None
            continue
        # broken, unless only the end of the text cut it (``"\u00``, ``tru``): healed
        if st == ERROR and ctx.retract and not _cut_by_end(src, p):
            return -1, False
        if st == ERROR or src.final:
            yield Args(sc.take_safe() + sc.heal())
            return sc.safe_pos, False
        frag = sc.take_safe()
        if frag:
            yield Args(frag)
        yield sc  # the stream parser may drive the scanner itself until it is DONE or ERROR


def _cut_by_end(src: Source, p: int) -> bool:
    """Whether the JSON value at ``p`` would only need more text, had the text not ended."""
    return src.final and JsonScanner(p).advance(src.buf, False) == NEED


def _closer_at(buf: str, p: int, closers: tuple[str, ...]) -> bool:
    rest = buf[p:].lstrip()
    return any(c and rest.startswith(c) for c in closers)


def _heals_whole(buf: str, sc: JsonScanner) -> bool:
    """Whether healing at the last safe point drops no written key or value (only whitespace
    and separators): a member cut before the closer (``{"city"`` then the closer) would lose
    its words, so that text is no call and stays content."""
    return not buf[sc.safe_pos : sc.pos].strip(" \t\r\n,:")


def _closer_may_start(buf: str, p: int, closers: tuple[str, ...]) -> bool:
    """Whether the text after ``p`` (less whitespace) is a proper start of one of ``closers``."""
    rest = buf[p:].lstrip()
    return bool(rest) and any(len(rest) < len(c) and c.startswith(rest) for c in closers)


def args_from_string(text: str) -> str | None:
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


def end_event(src: Source, ctx: Context, complete: bool) -> End:
    return End(cut=not complete and ctx.truncated and src.final)


# Models swap these two names of the arguments key (Qwen writes "parameters", Llama "arguments").
ARGS_KEYS = frozenset(("arguments", "parameters"))

_MORE = -1
"""``_Call`` steps: the object goes on (another member follows)."""
_STOP = -2
"""``_Call`` steps: the object does not read on from here (``p`` says where)."""


@dataclass
class _Call:
    """What ``read_json_body`` has read of one JSON call so far."""

    plan: FormatPlan
    body: JsonBody
    ctx: Context
    name: str | None = None
    cid: str | None = None
    args_json: str | None = None
    committed: bool = False
    """``Begin`` was yielded: the arguments streamed."""
    first: bool = True
    """No member read yet."""

    @property
    def can_stream(self) -> bool:
        # the id must be in the first delta: with the id after the arguments, wait for the whole
        # body (and with the arguments before the name, for the name)
        body = self.body
        return not (body.id_key and not body.id_first) and not body.arguments_first

    def unknown(self, name: str) -> bool:
        """A markerless layout's call that names no offered tool."""
        ctx = self.ctx
        return self.plan.known_names_only and bool(ctx.schemas) and name not in ctx.schemas

    def is_args(self, key: str) -> bool:
        body = self.body
        if body.name_key is None:
            return self.name is None
        return key in ARGS_KEYS or key == body.arguments_key or key in body.arguments_aliases

    def after_args(self, src: Source, p: int) -> Generator[Event | Wait, None, tuple[int, int]]:
        """Streamed arguments ended at ``p``: the envelope's ``,`` goes on; its ``}`` or nothing
        (the closing brace is missing) ends the call."""
        q = yield from skip_ws(src, p)
        c = src.buf[q : q + 1]
        if c == ",":
            return q + 1, _MORE
        yield End()
        return (q + 1 if c == "}" else p), OK

    def stream(self, src: Source, p: int) -> Generator[Event | Wait, None, tuple[int, int]]:
        """Announce the call and stream its arguments object from ``p``."""
        assert self.name is not None
        self.committed = True
        yield Begin(self.name, self.cid, None)
        p, complete = yield from stream_args(src, p, self.ctx, self.plan.closers)
        if p < 0:
            yield End(void=True)
            return p, FAIL  # broken JSON arguments: not a call
        if not complete:
            yield end_event(src, self.ctx, complete)
            return p, BROKEN
        self.args_json = ""
        return (yield from self.after_args(src, p))

    def take_value(self, key: str, text: str, *, is_args: bool) -> bool:
        """A member's value read whole; False where it breaks the call."""
        body = self.body
        if key == body.name_key and self.name is None:
            value = json.loads(text)
            if not isinstance(value, str):
                return False
            self.name = value
        elif is_args and self.args_json is None:
            args = _arguments(text)
            if args is None:
                return False
            self.args_json = args
        elif key == body.id_key and self.cid is None:
            value = json.loads(text)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                self.cid = str(value)
        return True

    def close(self, p: int) -> Generator[Event, None, tuple[int, int]]:
        """The object's ``}`` read (``p`` after it)."""
        if self.committed:
            yield End()
            return p, OK
        if self.name is None or self.unknown(self.name):
            return p, FAIL
        args = self.args_json if self.args_json is not None else "{}"
        yield from certain(self.name, self.cid, None, args)
        return p, OK


def _arguments(text: str) -> str | None:
    """The arguments' JSON from a value read whole: an object, a string holding one, or null."""
    if text.startswith("{"):
        return text
    if text.startswith('"'):
        return args_from_string(json.loads(text))
    return "{}" if text == "null" else None


def _fast_head(src: Source, p: int, call: _Call) -> Generator[Event | Wait, None, tuple[int, int]]:
    """The common head (``{"name": "...", "arguments": ``) in one match: what the member reader
    would read, the same way. ``(p, _STOP)`` where it does not match."""
    head, prefix = call.plan.json_head, call.plan.json_head_prefix
    assert head is not None and prefix is not None
    while True:
        buf = src.buf
        m = head.match(buf, p)
        if m is not None:
            call.name, call.first = m.group(1), False
            if call.unknown(call.name):
                return p, FAIL
            return (yield from call.stream(src, m.end()))
        if src.final or prefix.fullmatch(buf, p) is None:
            return p, _STOP
        yield None


def _member(src: Source, p: int, call: _Call) -> Generator[Event | Wait, None, tuple[int, int]]:
    """One ``"key": value`` member at ``p`` and what follows it: ``_MORE`` after a ``,``, a
    status where the call ends, ``_STOP`` where it does not read on."""
    sc = JsonScanner(p)
    if (yield from run_scanner(src, sc)) != DONE:
        return p, _STOP
    key = json.loads(sc.take_all())
    q = yield from probe_literal(src, sc.pos, ":")
    if q < 0:
        return p, _STOP
    p = yield from skip_ws(src, q)
    is_args = call.is_args(key)
    if call.body.name_key is None and is_args:
        call.name = key
    can = is_args and call.can_stream and call.name is not None and not call.committed
    call.first = False
    if can and src.buf[p : p + 1] == "{":
        assert call.name is not None
        if call.unknown(call.name):
            return p, FAIL
        return (yield from call.stream(src, p))
    sc = JsonScanner(p)
    if (yield from run_scanner(src, sc)) != DONE:
        return p, _STOP
    p = sc.pos
    if not call.take_value(key, sc.take_all(), is_args=is_args):
        return p, _STOP
    q = yield from skip_ws(src, p)
    c = src.buf[q : q + 1]
    if c == ",":
        return q + 1, _MORE
    if c == "}":
        return (yield from call.close(q + 1))
    return p, _STOP


def read_json_body(src: Source, p: int, plan: FormatPlan, body: JsonBody, ctx: Context) -> Reader:
    call = _Call(plan=plan, body=body, ctx=ctx)
    brace = p
    status = _STOP
    if plan.json_head is not None:
        p, status = yield from _fast_head(src, p, call)
        if status not in (_MORE, _STOP):
            return p, status
    if not call.committed:
        p = yield from skip_ws(src, p)
        if src.buf[p : p + 1] != "{":
            return p, FAIL
        brace, p = p, p + 1
    while True:
        p = yield from skip_ws(src, p)
        c = src.buf[p : p + 1]
        if call.first and c == "'":  # a Python dict (Hermes 2 Pro)
            return (yield from read_python_dict(src, brace, plan, body, ctx, ARGS_KEYS))
        if call.first and c == "}":
            return p + 1, FAIL
        if c != '"':
            break
        p, status = yield from _member(src, p, call)
        if status != _MORE:
            break
    if status not in (_MORE, _STOP):
        return p, status
    if call.committed:
        yield End()
        return p, BROKEN
    return p, FAIL
