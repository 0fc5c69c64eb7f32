"""Marker templates (``<function={name}>``, ``functions.{name}:{index}``) as matchers on a growing
buffer.

A template is split once into literal and field segments. Literals are matched on their stripped
text with whitespace before them optional; a field runs up to the next literal, or, when nothing
literal follows, over name-like characters. Matching is written as a generator that yields ``None``
while the buffer is too short to decide, so the same code serves batch and streaming parsing.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Segment",
    "Source",
    "compile_template",
    "find_literal",
    "match_template",
    "probe_closer",
    "probe_literal",
    "skip_ws",
]

_FIELD_RE = re.compile(r"\{\{|\}\}|\{(\w+)\}")
_WS = re.compile(r"\s+")
_NAME_RUN = re.compile(r"[\w.\-:]+")
_NAME_OK = re.compile(r"[\w.\-:]+\Z")
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

    @property
    def core(self) -> str:
        return self.text.strip()


def compile_template(template: str) -> tuple[Segment, ...]:
    """Split ``template`` into segments (``{{``/``}}`` unescaped)."""
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
    return tuple(out)


Wait = Generator[None, None, int]


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
    p = yield from skip_ws(src, p)
    while True:
        buf = src.buf
        if buf.startswith(core, p):
            return p + len(core)
        rest = buf[p : p + len(core)]
        if len(rest) < len(core) and core.startswith(rest) and not src.final:
            yield None
            continue
        return -1


def probe_closer(src: Source, p: int, core: str) -> Wait:
    """``probe_literal`` for a marker closing a complete call (call close, tail, separator,
    section close): at the very end of the text a cut-off start of ``core`` counts as ``core``
    (max_tokens cut the marker, not the call) and is consumed up to the end."""
    q = yield from probe_literal(src, p, core)
    if q >= 0 or not src.final:
        return q
    q = yield from skip_ws(src, p)
    rest = src.buf[q:]
    return len(src.buf) if rest and core.startswith(rest) else -1


def find_literal(src: Source, p: int, core: str, *, limit: int | None) -> Wait:
    """Start of the first ``core`` at or after ``p``, or -1 (not within ``limit`` characters)."""
    start = p
    while True:
        buf = src.buf
        k = buf.find(core, start)
        if k >= 0:
            return k if limit is None or k - p <= limit else -1
        if src.final or (limit is not None and len(buf) - p > limit + len(core)):
            return -1
        start = max(p, len(buf) - len(core) + 1)
        yield None


def _valid(field: str, value: str) -> bool:
    if field == "name":
        return bool(_NAME_OK.match(value))
    if field == "index":
        return bool(_INDEX_OK.match(value))
    if field in ("id", "key"):
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


def match_template(
    src: Source, p: int, segments: tuple[Segment, ...]
) -> Generator[None, None, tuple[int, dict[str, str]]]:
    """Match ``segments`` at ``p``; returns (end, fields), end -1 on mismatch.

    ``{value}`` keeps its text raw (trimming is the caller's business); other fields are stripped
    and checked (a name is word characters, ``.``, ``-``, ``:``).
    """
    fields: dict[str, str] = {}
    for i, seg in enumerate(segments):
        if seg.field in fields:
            # a field written again (``</arg:{key}>``) must repeat what was read: a literal now
            seg = Segment(fields[seg.field])
        if not seg.field:
            if seg.core:
                p = yield from probe_literal(src, p, seg.core)
                if p < 0:
                    return -1, fields
            continue
        following = segments[i + 1] if i + 1 < len(segments) else None
        nxt = following.core if following is not None and not following.field else ""
        if nxt:
            nxt = _literal_after(segments, i, fields)  # with fields read before: ``</{key}>``
        if seg.field != "value":
            p = yield from skip_ws(src, p)
        if nxt:
            k = yield from find_literal(
                src, p, nxt, limit=None if seg.field == "value" else MAX_FIELD
            )
            if k < 0:
                return -1, fields
            value = src.buf[p:k]
            p = k
        else:
            while True:
                buf = src.buf
                m = _NAME_RUN.match(buf, p)
                end = m.end() if m else p
                if end < len(buf) or src.final:
                    break
                yield None
            value = buf[p:end]
            p = end
        if seg.field != "value":
            value = value.strip()
        if not _valid(seg.field, value):
            return -1, fields
        fields[seg.field] = value
    return p, fields
