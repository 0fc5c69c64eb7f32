"""A whole element-body call written JSON-escaped: a literal ``\\n`` where the template writes a
newline and ``\\"`` inside values (``<tool_call>f\\n<arg_key>k</arg_key>\\n<arg_value>[{\\"id\\":
1}]</arg_value></tool_call>``, a model that escaped its own output). When the plain reading of an
element body does not reach the call's closer, the body up to that closer is unescaped and read
again. Element bodies emit nothing before they end, so holding their events changes nothing in
streaming."""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass

from ...dialect.spec import ElementBody
from ..jsonscan import JsonScanner
from ..markers import Source, find_literal, probe_closers, split_literal
from ..plan import Context, FormatPlan
from ..reader_events import FAIL, OK, Event, Reader
from .params import read_element_body

__all__ = ["read_element_call"]

_ESCAPE = re.compile(r'\\(["\\/nrt])')
_DECODE = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "r": "\r", "t": "\t"}


@dataclass
class _Whole:
    buf: str
    final: bool = True


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _DECODE[m.group(1)], text)


def _collect(reader: Reader) -> Generator[None, None, tuple[list[Event], int, int]]:
    """Run ``reader`` to its end, holding its events: ``(events, end, status)``."""
    events: list[Event] = []
    while True:
        try:
            ev = next(reader)
        except StopIteration as stop:
            end, status = stop.value
            return events, end, status
        if ev is None or isinstance(ev, JsonScanner):
            yield None
        else:
            events.append(ev)


def _closes(src: Source, end: int, plan: FormatPlan) -> Generator[None, None, bool]:
    """Whether the call's closer follows a body read to ``end`` (or the layout has none)."""
    if not plan.call_close:
        return True
    return (yield from probe_closers(src, end, plan.call_close, plan.alts)) >= 0


def read_element_call(
    src: Source, p: int, plan: FormatPlan, body: ElementBody, ctx: Context
) -> Reader:
    """``read_element_body``, read again unescaped where the plain reading stops short of the
    call's closer and the body holds JSON escapes."""
    events, end, status = yield from _collect(read_element_body(src, p, plan, body, ctx))
    if status != OK or not (yield from _closes(src, end, plan)):
        alt = yield from _read_escaped(src, p, plan, body, ctx)
        if alt is not None:
            events, end, status = alt
        elif ctx.truncated and src.final and _stray(src.buf[end:], plan):
            return p, FAIL  # cut by the token limit before the call's closer came: not a call
    yield from events
    return end, status


def _stray(rest: str, plan: FormatPlan) -> bool:
    """Whether ``rest``, after a body, is text that no closer nor next call explains."""
    marks = [plan.call_close, plan.tail, plan.section_close, plan.call_open, plan.section_open]
    if plan.head and not plan.head[0].field:
        marks.append(plan.head[0].core)  # a next call's head (``<function=``)
    return bool(rest.strip()) and not any(m and split_literal(m)[0] in rest for m in marks)


def _read_escaped(
    src: Source, p: int, plan: FormatPlan, body: ElementBody, ctx: Context
) -> Generator[None, None, tuple[list[Event], int, int] | None]:
    closer = plan.call_close or plan.tail
    if not closer:
        return None
    k = yield from find_literal(src, p, closer, limit=None)
    if k < 0:
        return None
    raw = src.buf[p:k]
    if "\\" not in raw or "\n" in raw.strip():
        return None  # no escapes, or real newlines inside: not an escaped call
    text = _unescape(raw)
    whole = _Whole(text + src.buf[k : k + len(closer)])
    events, end, status = yield from _collect(read_element_body(whole, 0, plan, body, ctx))
    if status != OK or end < len(text.rstrip()):
        return None
    return events, k + max(0, end - len(text)), status
