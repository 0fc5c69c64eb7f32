"""Layouts the parser reads besides a spec's own formats: calls whose wrapper the model left out,
other call syntaxes inside the spec's markers, and markerless calls inside prose
(docs/parsing.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..dialect.spec import CallFormat, JsonBody
from .body_kinds import body_kind
from .calls import Context, FormatPlan, read_emission
from .jsonscan import JsonScanner
from .markers import Source, split_literal
from .reader_events import FAIL, OK, End, Event, Reader

__all__ = [
    "joined_json_format",
    "listed_formats",
    "read_whole",
    "reads_a_call",
    "rebodied_formats",
    "unwrapped_formats",
    "wrapped_formats",
]


def read_whole(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    """``read_emission`` for a markerless call inside prose: nothing is emitted until the emission
    is read; it counts only when every call in it parsed completely and names an offered tool
    (``plan.known_names_only``), else it fails and the text stays content."""
    body = plan.fmt.body
    name_key = body_kind(body).prose_name_key(body)
    if not name_key or not ctx.names:
        return p, FAIL
    head = _prose_head(name_key)
    while len(src.buf) - p < _PROSE_HEAD_SPAN and not src.final:
        m = _KEY_START.match(src.buf, p, p + _PROSE_HEAD_SPAN)
        if m is not None and m.end() < len(src.buf) and src.buf[m.end()] != '"':
            return p, FAIL  # "{" then not a key (most braces in prose): decided at once
        yield None
    # fail fast on braces that do not open a call; the window is fixed, so that streaming, which
    # decides once it holds the window, and batch decide alike
    if head.match(src.buf, p, p + _PROSE_HEAD_SPAN) is None:
        return p, FAIL
    events: list[Event] = []
    reader = read_emission(src, p, plan, ctx)
    while True:
        try:
            ev = next(reader)
        except StopIteration as stop:
            end, status = stop.value
            break
        if ev is None or isinstance(ev, JsonScanner):
            yield None  # held: the stream parser must not drive the scanner itself
        else:
            events.append(ev)
    if status != OK or any(isinstance(ev, End) and ev.cut for ev in events):
        return p, FAIL
    yield from events
    return end, OK


_PROSE_HEAD_SPAN = 48
_KEY_START = re.compile(r"\{\s*")


@lru_cache(maxsize=64)
def _prose_head(name_key: str) -> re.Pattern[str]:
    """``{"name":``, optionally after ``"type": "function",`` (Llama 3.x writes both)."""
    key = re.escape(json.dumps(name_key))
    return re.compile(r'\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?' + key + r"\s*:")


def unwrapped_formats(fmt: CallFormat) -> list[CallFormat]:
    """Layouts the parser also reads for ``fmt``: its calls without the section marker, and its
    body without section and call markers where the body's own head starts with a distinctive tag
    (``<function=``, ``<invoke``). Closers stay (read when present, tolerated when missing)."""
    out: list[CallFormat] = []
    plain = {"triggers": [], "at_start_only": False}
    if fmt.section_open.strip() and fmt.call_open.strip():
        out.append(fmt.model_copy(update={"section_open": "", **plain}))
    if fmt.section_open.strip() or fmt.call_open.strip():
        pieces = split_literal(CallFormat(body=fmt.body).opener())
        if pieces and _distinctive(pieces[0]):
            out.append(fmt.model_copy(update={"section_open": "", "call_open": "", **plain}))
    return out


def _distinctive(piece: str) -> bool:
    """A tag-like opener prose does not write by chance: ``<`` or ``[`` and a letter."""
    return len(piece) >= 3 and piece[0] in "<[" and any(c.isalpha() for c in piece)


def rebodied_formats(fmt: CallFormat) -> list[CallFormat]:
    """``fmt``'s envelope around the other call syntaxes its body kind names
    (``BodyKind.other_syntaxes``): a ``{"name", "arguments"}`` JSON object (several joined by
    ``;`` inside one call marker), a Python call ``name(k=v)``, the element head around a JSON
    arguments object (``<invoke name="f">{"k": 1}</invoke>``). Models write these inside a marker
    that announced another body (Qwen3-Coder's JSON in ``<tool_call>``, LFM2's JSON list); the
    marker makes them safe to read. Tried only after the spec's own formats fail."""
    if fmt.at_start_only or not (fmt.section_open.strip() or fmt.call_open.strip()):
        return []
    plain = {"triggers": [], "at_start_only": False}
    out: list[CallFormat] = []
    for body in body_kind(fmt.body).other_syntaxes(fmt.body):
        if body_kind(body).json_objects and fmt.call_open.strip():
            # JSON calls joined by ``;`` inside one call marker (Qwen3.5 under an XML template)
            joined = {
                "section_open": fmt.section_open + fmt.call_open,
                "section_close": fmt.call_close + fmt.section_close,
                "call_open": "",
                "call_close": "",
                "separator": "; ",
                "alt_separators": ["\n"],
            }
            out.append(fmt.model_copy(update={"body": body, **plain, **joined}))
        out.append(fmt.model_copy(update={"body": body, **plain}))
    return out


def listed_formats(fmt: CallFormat) -> list[CallFormat]:
    """A JSON array of call objects where ``fmt`` writes one JSON call per marker
    (``<tool_call>[{...}, {...}]</tool_call>``, a Llama 3 reply ``[{...}, {...}]``, a fenced
    ```` ```json ```` section of calls)."""
    if not body_kind(fmt.body).json_objects:
        return []
    plain = {"triggers": [], "call_open": "", "call_close": "", "separator": ","}
    if fmt.section_open.strip() or fmt.section_close.strip():
        # a section of calls that is not a list already (``[TOOL_CALLS][``, ``functools[``)
        if fmt.call_open.strip() or fmt.call_close.strip() or fmt.separator.strip() == ",":
            return []
        return [
            fmt.model_copy(
                update={
                    "section_open": fmt.section_open + "[",
                    "section_close": "]" + fmt.section_close,
                    **plain,
                }
            )
        ]
    if fmt.call_open.strip():
        return [
            fmt.model_copy(
                update={
                    "section_open": fmt.call_open + "[",
                    "section_close": "]" + fmt.call_close,
                    **plain,
                }
            )
        ]
    if fmt.at_start_only:
        return [fmt.model_copy(update={"section_open": "[", "section_close": "]", **plain})]
    return []


WRAPPERS = (
    ("```json", "```"),
    ("```python", "```"),
    ("```", "```"),
    ("[TOOL_CALLS]", ""),
    ("<tool_call>", "</tool_call>"),
)
"""Wrappers models put around a bare JSON call or list of calls (a Markdown fence, another
family's call marker); a wrapper that only holds calls goes with them."""


def wrapped_formats(fmt: CallFormat) -> list[CallFormat]:
    """``fmt``'s calls inside one of ``WRAPPERS``, where ``fmt`` has no opener of its own or only
    a list's ``[`` (Llama 3's bare JSON, a pythonic list): the wrapper is read as the section.
    Such calls count only when they name an offered tool."""
    pieces = split_literal(fmt.opener())
    if pieces not in ((), ("[",)) or (not pieces and not body_kind(fmt.body).bare_in_wrappers):
        return []
    update = {"triggers": [], "at_start_only": False, "parse_only": True}
    return [
        fmt.model_copy(
            update={
                "section_open": f"{opener}\n{fmt.section_open}",
                "section_close": f"{fmt.section_close}\n{closer}",
                "offered_names_only": True,
                **update,
            }
        )
        for opener, closer in WRAPPERS
    ]


def joined_json_format() -> CallFormat:
    """Bare JSON calls joined by ``;`` or newlines, read inside prose in a family whose calls
    are elements (Qwen3.5 and 3.6 models under an XML template): read whole, and only when every
    call names an offered tool (``read_whole``)."""
    return CallFormat(body=JsonBody(), separator="; ", alt_separators=["\n"])


@dataclass
class _Final:
    """The whole text, for a dry run of a call reader."""

    buf: str
    final: bool = True


def reads_a_call(buf: str, at: int, plans: Sequence[FormatPlan], ctx: Context) -> bool:
    """Whether a complete call (``OK``) reads at ``at`` of the whole text ``buf`` in the first
    of ``plans`` that does not fail (a dry run: nothing is emitted)."""
    scratch = _Final(buf)
    for plan in plans:
        reader = read_emission(scratch, at, plan, ctx)
        try:
            while True:
                ev = next(reader)
                if ev is None or isinstance(ev, JsonScanner):
                    return False  # a final source never waits: a safety net
        except StopIteration as stop:
            status = stop.value[1]
            if status != FAIL:
                return bool(status == OK)
    return False
