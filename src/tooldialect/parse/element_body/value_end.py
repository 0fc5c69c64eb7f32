"""Where an element value ends: at its own closer, or, that closer missing, where the next
parameter, the body's tail or a call closer begins. A tag inside the value whose key the tool's
schema does not have is text, not the next parameter."""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator
from dataclasses import dataclass

from ...dialect.spec import format_template
from ..markers import Segment, Source, find_literal, match_template, split_literal
from ..plan import FormatPlan
from .value_text import CDATA_CLOSE, CDATA_OPEN

__all__ = [
    "cut_short",
    "delimited_end",
    "find_before",
    "is_indented",
    "line_end",
    "line_value_prefix",
    "value_end",
]


@dataclass
class _Snapshot:
    """A buffer read as it is now: still growing (``final`` false) or read to its end."""

    buf: str
    final: bool = False


def cut_short(buf: str, p: int, segments: tuple[Segment, ...]) -> bool:
    """Whether matching ``segments`` at ``p`` would have waited for more text had ``buf`` not
    ended: the text ended inside an element, rather than the element being absent."""
    gen = match_template(_Snapshot(buf), p, segments)
    try:
        next(gen)
    except StopIteration:
        return False
    return True


def _key_at(
    buf: str, p: int, segments: tuple[Segment, ...], unescape: Callable[[str], str] | None
) -> str | None:
    """The key of the parameter opening at ``p`` in text read so far, or None."""
    gen = match_template(_Snapshot(buf, final=True), p, segments, unescape=unescape)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        q, fields = stop.value
    return fields.get("key") if q >= 0 else None


def _closer(plan: FormatPlan, key: str, name: str) -> str:
    """The literal text after a value up to the next field, the key filled in (``</city>``
    where the closer names the key, ``</parameter>`` otherwise)."""
    out = ""
    for seg in plan.param_post:
        if seg.field and seg.field != "key":
            break
        out += key if seg.field else seg.text
    return format_template(out.strip(), name=name)


def _next_param(src: Source, p: int, end: int, plan: FormatPlan, keys: Collection[str]) -> int:
    """Start of the first parameter opening in ``src.buf[p:end]`` whose key is one of ``keys``
    (any key where ``keys`` is empty), or -1."""
    core = plan.param_pre[0].core
    k = find_before(src, p, end, core) if core else -1
    unescape = plan.key_unescape
    while k >= 0 and keys and _key_at(src.buf, k, plan.param_pre, unescape) not in keys:
        k = find_before(src, k + 1, end, core)
    return k


def value_end(
    src: Source,
    p: int,
    plan: FormatPlan,
    *,
    name: str,
    key: str,
    keys: Collection[str],
    nested: bool,
) -> Generator[None, None, tuple[int, bool]]:
    """Where the value of ``key`` starting at ``p`` ends: (position, whether its own closer
    follows), or (-1, False) when the text ends inside it.

    The value ends at its closer unless the next parameter (one of ``keys``, the tool's) begins
    first: then the closer is missing, and the value ends at the first of the body's tail, the
    call or section closer and that next parameter. A value holding a closer's text
    (``x</tool_call>``) before its own closer keeps it; a ``nested`` value (child elements)
    ends at its closer."""
    closer = _closer(plan, key, name) or format_template(plan.value_ends[0], name=name)
    others = [format_template(e, name=name) for e in plan.value_ends[1:]]
    start = p
    while not src.final and CDATA_OPEN.startswith(src.buf[p:].lstrip()):
        yield None  # too short to tell whether a CDATA section opens here
    if src.buf[p:].lstrip().startswith(CDATA_OPEN):
        # a CDATA section may hold the closer's text: the value ends after the section
        k = yield from find_literal(src, p, CDATA_CLOSE, limit=None)
        start = k + len(CDATA_CLOSE) if k >= 0 else p
    c = yield from find_literal(src, start, closer, limit=None)
    limit = c if c >= 0 else len(src.buf)
    nxt = -1 if nested and c >= 0 else _next_param(src, start, limit, plan, keys)
    if c >= 0 and nxt < 0:
        return c, True
    stop = nxt if nxt >= 0 else limit
    ends = [k for k in (find_before(src, start, stop, e) for e in others) if k >= 0]
    if nxt >= 0:
        ends.append(nxt)
    if ends:
        return min(ends), False
    return -1, False


def _opens_param(
    buf: str, p: int, plan: FormatPlan, keys: Collection[str], *, final: bool
) -> bool | None:
    """Whether a parameter of one of ``keys`` (any key where empty) opens at ``p``; None where
    the text read so far ends before that can be told."""
    unescape = plan.key_unescape
    gen = match_template(_Snapshot(buf, final=final), p, plan.param_pre, unescape=unescape)
    try:
        next(gen)
    except StopIteration as stop:
        q, fields = stop.value
        return q >= 0 and (not keys or fields.get("key") in keys)
    return None


def delimited_end(
    src: Source, p: int, plan: FormatPlan, *, name: str, separator: str, keys: Collection[str]
) -> Generator[None, None, int]:
    """Where a value starting at ``p`` ends in a body whose parameters are joined by
    ``separator`` (``ElementBody.param_separator``): at the first separator followed by a
    parameter of one of ``keys``, else at the body's tail, a call or section closer or a next
    call's opener (the end of the text once it is final). A separator inside the value
    (``a ;; b``) that no parameter follows is text. The position is where the separator or
    closer begins."""
    needle = separator.strip() or separator
    ends = [format_template(e, name=name) for e in plan.value_ends]
    # where each search resumes once the text grows: what was read is decided (streams stay
    # linear in a long value)
    sep_from, end_from = p, [p] * len(ends)
    while True:
        buf = src.buf
        pairs = zip(end_from, ends, strict=True)
        found = [k for k in (find_before(src, f, len(buf), e) for f, e in pairs) if k >= 0]
        stop = min(found, default=-1)
        limit = stop if stop >= 0 else len(buf)
        k = buf.find(needle, sep_from, limit)
        opens: bool | None = False
        while k >= 0:
            opens = _opens_param(buf, k + len(needle), plan, keys, final=src.final)
            if opens is not False:
                break
            k = buf.find(needle, k + 1, limit)
        if opens:
            return k
        if opens is None:
            sep_from = k
            yield None  # a separator near the end of the text: wait to see what follows it
            continue
        if stop >= 0 or src.final:
            return limit
        sep_from = max(p, len(buf) - len(needle) + 1)
        end_from = [_resume(buf, f, e) for f, e in zip(end_from, ends, strict=True)]
        yield None


def _resume(buf: str, start: int, core: str) -> int:
    """Where a search for ``core`` that found none in ``buf[start:]`` resumes once the text
    grows: at its last start of the literal's first piece (the rest may still follow), or
    where a first piece cut by the end of the text may begin."""
    pieces = split_literal(core)
    last = buf.rfind(pieces[0], start)
    cut = max(start, len(buf) - len(pieces[0]) + 1)
    pending = last >= 0 and "".join(pieces).startswith("".join(buf[last:].split()))
    return min(last, cut) if pending else cut


def find_before(src: Source, p: int, end: int, core: str) -> int:
    """Start of the first ``core`` (with its optional whitespace) in ``src.buf[p:end]``, or -1;
    the text there is all read."""
    pieces = split_literal(core)
    buf = src.buf
    k = buf.find(pieces[0], p, end)
    while k >= 0:
        q = k + len(pieces[0])
        for piece in pieces[1:]:
            while q < len(buf) and buf[q].isspace():
                q += 1
            if not buf.startswith(piece, q):
                break
            q += len(piece)
        else:
            return k
        k = buf.find(pieces[0], k + 1, end)
    return -1


def is_indented(buf: str, p: int) -> bool:
    """Whether the line holding ``p`` starts with indentation before it."""
    line = buf.rfind("\n", 0, p) + 1
    return line < p and not buf[line:p].strip() and buf[line] in " \t"


def line_value_prefix(param: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The param template before ``{value}`` where only a line break follows the value
    (``{key} = {value}\\n``): the value runs to the end of its line. ``()`` otherwise."""
    at = next((i for i, seg in enumerate(param) if seg.field == "value"), -1)
    after = param[at + 1 :]
    if at <= 0 or any(seg.field or seg.core for seg in after):
        return ()
    return param[:at] if any("\n" in seg.text for seg in after) else ()


def line_end(src: Source, p: int, stops: tuple[str, ...]) -> Generator[None, None, int]:
    """The end of the line at ``p``, or an earlier closer in ``stops``; the end of the text
    once it is final."""
    while True:
        buf = src.buf
        ends = [k for k in (buf.find(s, p) for s in (*stops, "\n") if s) if k >= 0]
        if ends:
            return min(ends)
        if src.final:
            return len(buf)
        yield None
