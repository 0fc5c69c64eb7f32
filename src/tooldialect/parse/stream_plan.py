"""The scan plan of ``StreamParser``: which marker cores it looks for, per mode, and what each does.

A ``Plan`` is built once per spec (and cached): the call formats the readers try (the spec's own,
then the layouts the parser reads besides), and for content and reasoning mode a ``Scan`` of the
marker cores to look for (reasoning open/close, ``strip`` markers, call openers) with the action
each one triggers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..dialect.spec import DialectSpec
from .body_kinds import body_kind, plan_format
from .markers import split_literal
from .plan import FormatPlan
from .variants import (
    joined_json_format,
    listed_formats,
    rebodied_formats,
    unwrapped_formats,
    wrapped_formats,
)

__all__ = ["CALL", "CLOSE", "END", "OPEN", "STRIP", "Plan", "Scan", "plan_for"]

OPEN, CLOSE, STRIP, CALL, END = range(5)
"""Marker actions: open or close reasoning, strip, start a call reader, end the reply."""


@dataclass(frozen=True)
class Scan:
    """Markers looked for in one mode (content or reasoning)."""

    regex: re.Pattern[str] | None
    first: re.Pattern[str] | None
    actions: dict[str, tuple[int, tuple[int, ...]]]
    prefixes: frozenset[str]
    firsts: frozenset[str]
    longest: int

    @classmethod
    def build(cls, actions: dict[str, tuple[int, tuple[int, ...]]]) -> Scan:
        cores = sorted(actions, key=len, reverse=True)
        if not cores:
            return cls(None, None, {}, frozenset(), frozenset(), 0)
        firsts = frozenset(c[0] for c in cores)
        return cls(
            regex=re.compile("|".join(map(re.escape, cores))),
            first=re.compile("[" + "".join(re.escape(c) for c in sorted(firsts)) + "]"),
            actions=actions,
            prefixes=frozenset(c[:k] for c in cores for k in range(1, len(c))),
            firsts=firsts,
            longest=len(cores[0]),
        )

    def held(self, buf: str, pos: int) -> int:
        """Length of the longest suffix of ``buf[pos:]`` that may still grow into a marker."""
        n = len(buf)
        for k in range(min(self.longest - 1, n - pos), 0, -1):
            if buf[n - k] in self.firsts and buf[n - k :] in self.prefixes:
                return k
        return 0


@dataclass(frozen=True)
class Plan:
    formats: tuple[FormatPlan, ...]
    """The spec's formats, then the layouts the parser reads besides (``unwrapped_formats``,
    ``rebodied_formats``, markerless calls inside prose)."""
    content: Scan
    reasoning: Scan
    start: tuple[int, ...]
    has_reasoning: bool
    closes: re.Pattern[str] | None = None
    """Any reasoning close marker (to decide whether a call opener in reasoning is quoted)."""
    close_longest: int = 0
    whole: frozenset[int] = frozenset()
    """Formats read with ``read_whole`` (markerless calls inside prose)."""


_PLANS: dict[tuple[str, tuple[str, ...]], Plan] = {}


def plan_for(spec: DialectSpec, end_of_turn: tuple[str, ...] = ()) -> Plan:
    """The (cached) plan of ``spec``; ``end_of_turn``: marker texts that end the reply."""
    key = (spec.model_dump_json(), end_of_turn)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:
            _PLANS.clear()
        plan = _PLANS[key] = _build_plan(spec, end_of_turn)
    return plan


_Actions = dict[str, tuple[int, tuple[int, ...]]]


def _add_call(content: _Actions, core: str, i: int) -> None:
    """``core`` opens format ``i`` too (candidates are tried in order)."""
    _, prev = content.get(core, (CALL, ()))
    content[core] = (CALL, (*prev, i))


def _call_formats(
    spec: DialectSpec, content: _Actions
) -> tuple[list[FormatPlan], list[int], list[int], set[int]]:
    """``(formats, start, whole, written)``: the spec's formats, then the layouts the parser
    reads besides (their openers added to ``content``), the markerless ones looked for at the
    start of the reply, those read whole (calls inside prose), and the written layouts (not
    ``parse_only``) with their unwrapped variants."""
    # a markerless dialect (Llama 3 JSON): its markerless calls must name an offered tool
    markerless = not spec.primary.opener().strip()
    formats = [
        plan_format(f, known_names_only=markerless and not f.opener().strip()) for f in spec.formats
    ]
    start: list[int] = []
    bare = split_literal(spec.primary.opener()) in ((), ("[",))
    written = {i for i, f in enumerate(spec.formats) if not f.parse_only}
    for i, f in enumerate(spec.formats):
        # the scan looks for the opener's first piece; the reader matches the rest, whitespace
        # between pieces optional (``[TOOL_CALLS] [``)
        pieces = split_literal(f.opener())
        if f.at_start_only or not pieces:
            start.append(i)  # markerless layouts are only looked for at the start of the reply
            continue
        _add_call(content, pieces[0], i)
    for f in spec.formats:
        listed = listed_formats(f)
        # a bare dialect's calls (no opener but a list's ``[``) inside a wrapper
        wrapped = [w for g in (f, *listed) for w in wrapped_formats(g)] if bare else []
        unwrapped = unwrapped_formats(f)
        for v in unwrapped + rebodied_formats(f) + listed + wrapped:
            if not f.parse_only and v in unwrapped:
                written.add(len(formats))
            if v.at_start_only:
                start.append(len(formats))
            else:
                _add_call(content, split_literal(v.opener())[0], len(formats))
            formats.append(plan_format(v, known_names_only=markerless and v.at_start_only))
    whole: list[int] = []
    prose = list(spec.formats) if markerless else []
    if body_kind(spec.primary.body).json_in_prose:
        prose.append(joined_json_format())  # JSON calls under an XML template
    for f in prose:  # calls inside prose, held until complete
        if not f.opener().strip() and body_kind(f.body).prose_name_key(f.body):
            whole.append(len(formats))
            _add_call(content, "{", len(formats))
            formats.append(plan_format(f, known_names_only=True))
    return formats, start, whole, written


def _reasoning_markers(
    spec: DialectSpec, content: _Actions, reasoning: _Actions, written: set[int]
) -> list[str]:
    """Add the reasoning open and close markers (and call openers inside reasoning) to the
    scans; returns the close markers, longest first."""
    r = spec.reasoning
    if r is None or not (r.open.strip() and r.close.strip()):
        return []
    for marker in r.opens():
        if marker.strip():
            content[marker.strip()] = (OPEN, ())
    closes = sorted({c.strip() for c in r.closes() if c.strip()}, key=len, reverse=True)
    for marker in closes:
        reasoning[marker] = (CLOSE, ())
        content.setdefault(marker, (CLOSE, ()))  # text, unless calls ended a prompt's block
    for marker in r.opens():  # the opener again: dropped at the block's start, else text
        if marker.strip():
            reasoning.setdefault(marker.strip(), (OPEN, ()))
    if r.calls_end_unclosed:
        # openers of the written layouts (with or without their section wrapper) inside
        # reasoning: a call only if the block is never
        # closed (_scan). Parse-only variants' openers (``` fences, <response>) are common in
        # reasoning text, and would hold its stream back until the close.
        for core, (action, cands) in content.items():
            if action == CALL and written.intersection(cands) and core not in reasoning:
                reasoning[core] = (CALL, cands)
    return closes


def _add_doubled(actions: _Actions) -> None:
    """A marker whose first piece is a tag, written after a stray copy of that tag
    (``<|channel><|channel>thought``), is the marker: the stray tag goes with it."""
    for core, (action, cands) in list(actions.items()):
        if action == CALL:
            continue  # a call reader reads its opener itself
        tag = split_literal(core)[0]
        if len(tag) > 2 and tag[0] in "<[" and tag[-1] in ">]":
            actions.setdefault(tag + core, (action, cands))


def _build_plan(spec: DialectSpec, end_of_turn: tuple[str, ...]) -> Plan:
    content: _Actions = {}
    reasoning: _Actions = {}
    formats, start, whole, written = _call_formats(spec, content)
    for marker in end_of_turn:
        if marker.strip():
            content[marker.strip()] = reasoning[marker.strip()] = (END, ())
    for marker in spec.strip:
        if marker.strip():
            content.setdefault(marker.strip(), (STRIP, ()))
            reasoning.setdefault(marker.strip(), (STRIP, ()))
    r = spec.reasoning
    has_reasoning = r is not None and bool(r.open.strip() and r.close.strip())
    closes = _reasoning_markers(spec, content, reasoning, written)
    _add_doubled(content)
    _add_doubled(reasoning)
    return Plan(
        formats=tuple(formats),
        content=Scan.build(content),
        reasoning=Scan.build(reasoning),
        start=tuple(start),
        has_reasoning=has_reasoning,
        closes=re.compile("|".join(map(re.escape, closes))) if closes else None,
        close_longest=len(closes[0]) if closes else 0,
        whole=frozenset(whole),
    )
