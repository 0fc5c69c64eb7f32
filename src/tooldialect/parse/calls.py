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

import re
from collections.abc import Generator, Mapping
from typing import Any

from .body_kinds import read_body
from .markers import (
    Source,
    closes_after,
    probe_closer,
    probe_closers,
    probe_literal,
    skip_ws,
    split_literal,
    stop_before,
)
from .plan import Context, FormatPlan
from .pydict import python_object_end
from .reader_events import BROKEN, FAIL, OK, Args, Begin, End, Event, Reader, Text, Wait

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


def _read_call(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    q = yield from probe_literal(src, p, plan.call_open)
    for alt in plan.alts.get(plan.call_open, ()):
        if q >= 0:
            break
        q = yield from probe_literal(src, p, alt)
    if q < 0:
        return p, FAIL
    reader = read_body(src, q, plan, ctx)
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
    if not plan.json_object or not plan.separator:
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
