"""Marker templates (``<function={name}>``, ``functions.{name}:{index}``) as matchers on a growing
buffer.

A template is split once into literal and field segments. Literals are matched on their stripped
text with whitespace before them optional; a field runs up to the next literal, or, when nothing
literal follows, over name-like characters. Matching is written as a generator that yields
``None`` while the buffer is too short to decide, so the same code serves batch and streaming
parsing.

Whitespace is optional inside a literal too, wherever models are seen to put or drop it: at the
literal's own whitespace, next to a bracket or separator (``[TOOL_CALLS] [``, ``] </TOOLCALL>``)
and between two special-token-like tags (``<|tool_call_end|>\n<|tool_calls_section_end|>``).
``split_literal`` gives these *pieces*; matching a literal matches its pieces in turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

__all__ = [
    "Segment",
    "Source",
    "closes_after",
    "compile_template",
    "find_literal",
    "literal_regex",
    "match_template",
    "probe_closer",
    "probe_closers",
    "probe_literal",
    "skip_ws",
    "split_literal",
    "stop_before",
    "without_markers",
]

_FIELD_RE = re.compile(r"\{\{|\}\}|\{(\w+)\}")
_WS = re.compile(r"\s+")
_NAME_RUN = re.compile(r"[\w.\-:]+")
_NAME_OK = re.compile(r"[\w.\-:]+\Z")
_NAME_LOOSE = re.compile(r"[^\x00-\x1f<>{}\[\]()\"'=,;\\]+\Z")
_INDEX_OK = re.compile(r"\d+\Z")
# A name, id or key longer than this is not one: stop waiting for its terminator.
MAX_FIELD = 256


class Source(Protocol):
    """The growing text a generator reads: ``buf`` only grows at the end; ``final`` means it
    will not grow any more."""

    buf: str
    final: bool


@dataclass(frozen=True)
class Segment:
    """A literal (``field`` empty) or a ``{field}``; ``core`` is the stripped literal text."""

    text: str
    field: str = ""
    alts: tuple[str, ...] = ()
    """Stripped literal texts also accepted in place of ``core`` (``CallFormat.optional_markers``
    left out; ``""`` skips the literal)."""

    @property
    def core(self) -> str:
        return self.text.strip()


def without_markers(core: str, optional: Sequence[str]) -> tuple[str, ...]:
    """The stripped variants of ``core`` with optional marker texts left out, shortest last."""
    out: list[str] = []
    for marker in optional:
        if marker and marker in core:
            for base in [core, *out]:
                alt = base.replace(marker, "").strip()
                if alt != core and alt not in out:
                    out.append(alt)
    return tuple(out)


def compile_template(template: str, *, optional: Sequence[str] = ()) -> tuple[Segment, ...]:
    """Split ``template`` into segments (``{{``/``}}`` unescaped); literals containing an
    ``optional`` marker also match without it."""
    out: list[Segment] = []
    lit: list[str] = []
    last = 0
    for m in _FIELD_RE.finditer(template):
        lit.append(template[last : m.start()])
        last = m.end()
        if m.group(1) is None:
            lit.append(m.group(0)[0])
            continue
        if "".join(lit):
            out.append(Segment("".join(lit)))
        lit = []
        out.append(Segment("", m.group(1)))
    lit.append(template[last:])
    if "".join(lit):
        out.append(Segment("".join(lit)))
    if optional:
        out = [
            Segment(s.text, s.field, without_markers(s.core, optional)) if not s.field else s
            for s in out
        ]
    return tuple(out)


Wait = Generator[None, None, int]

# Tags (``<|x|>``, ``</x>``, ``[X]``), words, whitespace, single characters.
_TOKEN = re.compile(r"<[^<>\s]*>|\[/?[A-Za-z_]+\]|\w+|\s+|.", re.S)
_LOOSE = frozenset("[]{}(),;")
"""Brackets and separators: whitespace next to them inside a literal is optional."""


@lru_cache(maxsize=1024)
def stop_before(buf: str, i: int, stops: tuple[str, ...], *, final: bool) -> tuple[int, bool]:
    """``(k, hit)``: the first of ``stops`` in ``buf`` from ``i`` (``hit``), else, while the text
    still grows, where a stop cut short may begin at its end, else ``len(buf)``. Bounds a scan
    for a closer so that each opener's scan ends at the next opener: linear, not quadratic."""
    hits = [k for k in (buf.find(s, i) for s in stops) if k >= 0]
    if hits:
        return min(hits), True
    end = len(buf)
    if not final:
        for s in stops:
            for k in range(max(i, end - len(s) + 1), end):
                if s.startswith(buf[k:]):
                    end = min(end, k)
                    break
    return end, False


def split_literal(core: str) -> tuple[str, ...]:
    """The pieces of a literal between which whitespace is optional (see the module doc)."""
    pieces: list[str] = []
    cur = ""
    loose_prev = False
    for m in _TOKEN.finditer(core.strip()):
        t = m.group()
        if t.isspace():
            if cur:
                pieces.append(cur)
            cur, loose_prev = "", False
            continue
        loose = t in _LOOSE or (len(t) > 2 and t[0] in "<[" and t[-1] in ">]")
        if cur and (loose or loose_prev):
            pieces.append(cur)
            cur = ""
        cur += t
        loose_prev = loose
    if cur:
        pieces.append(cur)
    return tuple(pieces)


@lru_cache(maxsize=1024)
def literal_regex(core: str) -> str:
    """A regex (source) matching ``core`` with its optional whitespace."""
    return r"\s*".join(re.escape(piece) for piece in split_literal(core))


def skip_ws(src: Source, p: int) -> Wait:
    """Position of the first non-whitespace character at or after ``p`` (waits to see one)."""
    while True:
        buf = src.buf
        m = _WS.match(buf, p)
        if m:
            p = m.end()
        if p < len(buf) or src.final:
            return p
        yield None


def probe_literal(src: Source, p: int, core: str) -> Wait:
    """End of ``core`` if it follows ``p`` (after optional whitespace), else -1."""
    if not core:
        return p
    for piece in split_literal(core):
        p = yield from skip_ws(src, p)
        while True:
            buf = src.buf
            if buf.startswith(piece, p):
                p += len(piece)
                break
            rest = buf[p : p + len(piece)]
            if len(rest) < len(piece) and piece.startswith(rest) and not src.final:
                yield None
                continue
            return -1
    return p


def _cut_literal(buf: str, p: int, core: str) -> bool:
    """Whether ``buf[p:]`` is a non-empty start of ``core`` (with its optional whitespace) that
    the end of the text cut off."""
    pieces = split_literal(core)
    n = len(buf)
    for i, piece in enumerate(pieces):
        m = _WS.match(buf, p)
        if m:
            p = m.end()
        if p >= n:
            return i > 0
        if buf.startswith(piece, p):
            p += len(piece)
            continue
        return piece.startswith(buf[p:])
    return False


def probe_closer(src: Source, p: int, core: str) -> Wait:
    """``probe_literal`` for a marker closing a complete call (call close, tail, separator,
    section close): at the very end of the text a cut-off start of ``core`` counts as ``core``
    (max_tokens cut the marker, not the call) and is consumed up to the end."""
    q = yield from probe_literal(src, p, core)
    if q >= 0 or not src.final:
        return q
    return len(src.buf) if _cut_literal(src.buf, p, core) else -1


def probe_closers(src: Source, p: int, core: str, alts: Mapping[str, tuple[str, ...]]) -> Wait:
    """``probe_closer`` of ``core``, else of its variants ``alts[core]`` (optional markers left
    out)."""
    q = yield from probe_closer(src, p, core)
    for alt in alts.get(core, ()):
        if q >= 0:
            break
        q = yield from probe_closer(src, p, alt)
    return q


def closes_after(
    src: Source, p: int, closer: str, alts: Mapping[str, tuple[str, ...]]
) -> Generator[None, None, bool]:
    """Whether only ``closer`` (or, without a closer, the end of the text) follows ``p``."""
    if closer:
        return (yield from probe_closers(src, p, closer, alts)) >= 0
    t = yield from skip_ws(src, p)
    return src.final and t >= len(src.buf)


_NEXT: dict[str, tuple[str, int, int]] = {}
"""Literal -> ``(buf, a, k)``: ``k`` is its first occurrence in ``buf`` at or after ``a`` (-1:
none). An element value whose closer never comes would otherwise rescan to the end from every
opener (quadratic); reused only for the very same ``buf`` object."""


def _next(buf: str, literal: str, start: int) -> int:
    """``buf.find(literal, start)``, remembering the answer for later, larger ``start``."""
    seen = _NEXT.get(literal)
    fresh = seen is not None and seen[0] is buf and seen[1] <= start
    if seen is not None and fresh and (seen[2] < 0 or seen[2] >= start):
        return seen[2]
    k = buf.find(literal, start)
    _NEXT[literal] = (buf, start, k)
    return k


def find_literal(src: Source, p: int, core: str, *, limit: int | None) -> Wait:
    """Start of the first ``core`` at or after ``p``, or -1 (not within ``limit`` characters)."""
    pieces = split_literal(core)
    first = pieces[0] if pieces else core
    start = p
    # bounded by ``limit``: an unbounded find per opener would rescan to the end (quadratic)
    end = None if limit is None else p + limit + len(first)
    while True:
        buf = src.buf
        k = _next(buf, first, start) if end is None else buf.find(first, start, end)
        if k >= 0 and (limit is None or k - p <= limit):
            if len(pieces) < 2:
                return k
            q = yield from probe_literal(src, k, core)
            if q >= 0:
                return k
            start = k + 1
            continue
        if k >= 0 or src.final or (end is not None and len(buf) >= end):
            return -1
        start = max(p, len(buf) - len(first) + 1)
        yield None


def _valid(field: str, value: str, names: frozenset[str]) -> bool:
    if field == "name":
        # beyond name-like characters, an offered tool's name (inner spaces, punctuation)
        return bool(_NAME_OK.match(value)) or (value in names and bool(_NAME_LOOSE.match(value)))
    if field == "index":
        return bool(_INDEX_OK.match(value))
    if field in ("id", "key", "is_string", "type"):
        # attribute-like fields never span a tag or a line: a cut attribute is no parameter
        return bool(value) and not any(c in value for c in "<>\n")
    return True


def _literal_after(segments: tuple[Segment, ...], i: int, fields: dict[str, str]) -> str:
    """The literal text that ends field ``i``: the next literal segment, extended by fields
    already read and the literals after them (``</`` + key + ``>``), stripped."""
    out = ""
    for seg in segments[i + 1 :]:
        if seg.field and seg.field not in fields:
            break
        out += fields[seg.field] if seg.field else seg.text
    return out.strip()


def _match_literal(src: Source, p: int, seg: Segment) -> Wait:
    """End of the literal ``seg`` (or one of its ``alts``) at ``p``, else -1."""
    if not seg.core:
        return p
    q = yield from probe_literal(src, p, seg.core)
    for alt in seg.alts:
        if q >= 0:
            break
        q = yield from probe_literal(src, p, alt)
    return q


def _name_run(src: Source, p: int) -> Wait:
    """End of the name-like run at ``p`` (waits while it may still grow)."""
    while True:
        buf = src.buf
        m = _NAME_RUN.match(buf, p)
        end = m.end() if m else p
        if end < len(buf) or src.final:
            return end
        yield None


def _read_field(
    src: Source, p: int, segments: tuple[Segment, ...], i: int, fields: dict[str, str]
) -> Generator[None, None, tuple[int, str]]:
    """Field ``i``'s text from ``p`` and where it ends; (-1, "") when its terminator never
    comes."""
    seg = segments[i]
    following = segments[i + 1] if i + 1 < len(segments) else None
    nxt = following.core if following is not None and not following.field else ""
    if nxt:
        nxt = _literal_after(segments, i, fields)  # with fields read before: ``</{key}>``
    if seg.field != "value":
        p = yield from skip_ws(src, p)
    if not nxt:
        end = yield from _name_run(src, p)
        return end, src.buf[p:end]
    k = yield from find_literal(src, p, nxt, limit=None if seg.field == "value" else MAX_FIELD)
    if k < 0:
        return -1, ""
    return k, src.buf[p:k]


def _quoted(segments: tuple[Segment, ...], i: int) -> bool:
    """Whether field ``i`` is a quoted attribute value (``name="{name}"``)."""
    return i > 0 and not segments[i - 1].field and segments[i - 1].text.rstrip()[-1:] in "\"'"


def match_template(
    src: Source,
    p: int,
    segments: tuple[Segment, ...],
    *,
    names: frozenset[str] = frozenset(),
    unescape: Callable[[str], str] | None = None,
) -> Generator[None, None, tuple[int, dict[str, str]]]:
    """Match ``segments`` at ``p``; returns (end, fields), end -1 on mismatch.

    ``{value}`` keeps its text raw (trimming is the caller's business); other fields are stripped
    and checked (a name is word characters of any script, ``.``, ``-``, ``:``, or one of
    ``names``, the offered tools, which may hold spaces). ``unescape`` decodes fields written
    as quoted attribute values (the family's learnt escaping, ``name="a&amp;b"``); a field
    written again must repeat the text as written.
    """
    fields: dict[str, str] = {}
    written: dict[str, str] = {}
    for i, seg in enumerate(segments):
        if seg.field in written:
            # a field written again (``</arg:{key}>``) must repeat what was read: a literal now
            seg = Segment(written[seg.field])
        if not seg.field:
            p = yield from _match_literal(src, p, seg)
            if p < 0:
                return -1, fields
            continue
        p, value = yield from _read_field(src, p, segments, i, written)
        if p < 0:
            return -1, fields
        decoded = value
        if seg.field != "value":
            value = decoded = value.strip()
            if unescape is not None and _quoted(segments, i):
                decoded = unescape(value)
        if not _valid(seg.field, value, names) and not (
            decoded != value and _valid(seg.field, decoded, names)
        ):
            return -1, fields
        written[seg.field] = value
        fields[seg.field] = decoded
    return p, fields
