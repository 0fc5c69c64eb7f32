"""Checks a derived spec must pass before it is returned: it reproduces the template's own renders.

``render_call`` must write the probe call as the template does (modulo whitespace), two calls too
where the template renders them; no sentinel may have ended up as literal marker text; the parser
must read the template's render back, and ``render_call`` output with arguments of every JSON
type must round-trip.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...errors import DialectError
from .. import ports
from ..spec import DialectSpec, ElementBody, JsonBody, PythonBody
from ..value_codecs import value_codec
from .probe_renderer import ProbeRenderer
from .probes import (
    PLAIN,
    PROBE_ARGS,
    PROBE_IDS,
    PROBE_NAME,
    PROBE_RICH_ARGS,
    RICH_TOOLS,
    SYSTEM,
    TOOLS,
    USER,
    Probe,
    assistant_turn,
    call_region,
    probe_call,
    probes,
    render_probe,
    strip_empty_reasoning,
)

__all__ = ["ProbeMiss", "reads_no_probe_call", "validate"]

# ---------------------------------------------------------------------------------------------
# Validation


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _call_id_for(spec: DialectSpec, index: int) -> str | None:
    if spec.id_template:
        return None  # the template writes ids of its own (``call-{index}``), not the caller's
    body = spec.primary.body
    writes_id = (isinstance(body, JsonBody) and body.id_key is not None) or "{id}" in getattr(
        body, "head", ""
    )
    if writes_id and spec.id_format != "numeric":
        return PROBE_IDS[index]
    return None


def validate(spec: DialectSpec, probe: Probe, *, reader: ports.CallReader) -> bool:
    """The spec reproduces the template's render of the probe call and reads (``reader``: its
    parser) that render and its own output back."""
    if _leaks_probe(spec):
        return False
    try:
        mine = spec.render_call(PROBE_NAME, PROBE_ARGS, call_id=_call_id_for(spec, 0))
    except (DialectError, ValueError, TypeError, KeyError):
        return False
    theirs = call_region(probe, probe.one).text
    mine, theirs = _unquoted(spec, mine, theirs)
    if not _written(mine, theirs, spec.primary.optional_markers):
        return False
    return (
        _reads_own_render(spec, call_region(probe, probe.one).text, reader)
        and _reproduces_two_calls(spec, probe)
        and _round_trips(spec, reader)
    )


def _written(mine: str, theirs: str, optional: list[str]) -> bool:
    """Whether the template's render holds ``mine`` (modulo whitespace), or ``mine`` less the
    markers the layout may leave out (a section closer a lone call's render omits)."""
    if _squash(mine) in _squash(theirs):
        return True
    for marker in optional:
        mine = mine.replace(marker, "")
    return bool(optional) and _squash(mine) in _squash(theirs)


def _reproduces_two_calls(spec: DialectSpec, probe: Probe) -> bool:
    """Where the template renders two calls, the spec writes them as it does: text that changes
    from call to call (an index outside the body, ``<call id="0">``) cannot hide in a marker."""
    if not spec.parallel_calls:
        return True
    two = render_probe(
        probe.renderer, probe.shape, assistant_turn(calls=[probe_call(0), probe_call(1)])
    )
    if two is None:
        return True
    theirs = strip_empty_reasoning(call_region(probe, two).text, spec.reasoning)
    calls = [(PROBE_NAME, PROBE_ARGS, _call_id_for(spec, i)) for i in range(2)]
    try:
        mine = spec.render_calls(calls)
    except (DialectError, ValueError, TypeError, KeyError):
        return False
    mine, theirs = _unquoted(spec, mine, theirs)
    return _squash(mine) in _squash(theirs)


def _unquoted(spec: DialectSpec, mine: str, theirs: str) -> tuple[str, str]:
    """A Python-style call compared with its string quotes dropped: templates write either
    quote, every value as a string (``n="42"``) or none quoted (``str(value)``), while the model
    writes literals; the parser must still read the template's own render."""
    body = spec.primary.body
    if not isinstance(body, PythonBody):
        return mine, theirs
    for quote in value_codec(body.value_codec).string_quotes(body.string_quote):
        mine, theirs = mine.replace(quote, ""), theirs.replace(quote, "")
    return mine, theirs


_SENTINELS = (PROBE_NAME, *PROBE_IDS, *PROBE_ARGS, "zzword", USER, SYSTEM, PLAIN)


def _leaks_probe(spec: DialectSpec) -> bool:
    """Whether a sentinel (the probe's name, ids, keys or values) ended up as literal marker text:
    the template wrote it somewhere no spec field can stand for it (a whole ``tool_calls`` list
    dumped as JSON, with each id outside the call's own object), so the spec would never match."""
    fmt = spec.primary
    body = fmt.body.model_dump()
    texts = [fmt.section_open, fmt.section_close, fmt.call_open, fmt.call_close, fmt.separator]
    texts += [v for v in body.values() if isinstance(v, str)]
    texts += [json.dumps(body.get("extra", {}))]
    return any(s in t for s in _SENTINELS for t in texts)


def _reads_own_render(spec: DialectSpec, theirs: str, reader: ports.CallReader) -> bool:
    """The parser built from ``spec`` reads the template's own render of the probe call (as the
    template writes it, which may differ from ``render_call`` in spacing or quoting)."""
    got = reader(theirs, spec, tools=TOOLS)
    return got is not None and got.calls == [(PROBE_NAME, PROBE_ARGS)]


def _round_trips(spec: DialectSpec, reader: ports.CallReader) -> bool:
    """``render_call`` output, arguments of every JSON type, parses back to the probe call."""
    text = spec.render_call(PROBE_NAME, PROBE_RICH_ARGS, call_id=_call_id_for(spec, 0))
    got = reader(text, spec, tools=RICH_TOOLS)
    body = spec.primary.body
    omitted = isinstance(body, ElementBody) and body.omit_none
    want = {k: v for k, v in PROBE_RICH_ARGS.items() if not (omitted and v is None)}
    if isinstance(body, PythonBody):  # a syntax without null leaves ``None`` out
        want = value_codec(body.value_codec).written(want, quote=body.string_quote)
    return got is not None and got.calls == [(PROBE_NAME, want)]


@dataclass(frozen=True)
class ProbeMiss:
    """The probe call a spec reads nothing from: its conversation shape and the call's text."""

    shape: int
    text: str

    def describe(self) -> str:
        """Which probe failed, for ``Detection.reason``."""
        return (
            f"reads no call from the template's render of the probe call "
            f"(conversation shape {self.shape}): {self.text[:120]!r}"
        )


def reads_no_probe_call(
    spec: DialectSpec,
    template_source: str,
    *,
    reader: ports.CallReader,
    bos_token: str = "",
    eos_token: str = "",
) -> ProbeMiss | None:
    """Where ``spec`` reads no call at all from the template's render of the probe call, which
    probe that was; ``None`` when it reads one (rightly or not) or no probe call renders."""
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return None
    for probe in probes(renderer):
        text = call_region(probe, probe.one).text
        got = reader(text, spec, tools=TOOLS)
        return ProbeMiss(probe.shape, text) if got is not None and not got.calls else None
    return None
