"""One ``CallFormat``'s grammar rule: its envelope markers around each offered tool's body.

Shared by the tool grammars (``build``), their strict form (``strict_form``) and structured
output (``answer``), which all sit above it.
"""

from __future__ import annotations

from ..dialect.spec import CallFormat, DialectSpec
from ..tool_defs import ToolDef
from .bodies import body_rule
from .codec import ArgumentLayout
from .gbnf import GbnfBuilder
from .marker_rules import body_literal, marker_rule

__all__ = ["format_rule"]


def _after(marker: str, wrote: str) -> str:
    """What ``marker`` writes after its stripped text ``wrote`` (already in the prompt)."""
    return marker[marker.index(wrote) + len(wrote) :]


def format_rule(
    b: GbnfBuilder,
    spec: DialectSpec,
    fmt: CallFormat,
    tools: list[ToolDef],
    *,
    parallel: bool,
    hint: str,
    prefill: str = "",
    layout: ArgumentLayout = "free",
    exact: bool = False,
    indent: int | None = None,
) -> str:
    """``exact``: markers and body structure exactly as ``render_call`` writes them (forced
    grammars in the canonical layout; a lazy grammar's envelope stays free because its trigger
    replays the model's own text into it). ``indent``: an exact JSON envelope pretty-printed as
    ``json.dumps(indent=...)`` writes it (the arguments stay in ``layout``)."""
    body_key = repr(fmt.body)
    bodies = []
    for t in tools:
        key = ("body", body_key, t.name, exact, indent)
        if key not in b.memo:  # formats sharing a body (tagged and bare JSON) share its rules
            b.memo[key] = body_rule(
                b,
                spec,
                fmt.body,
                t,
                hint=f"{hint}-{t.name}",
                layout=layout,
                exact=exact,
                indent=indent,
            )
        bodies.append(b.memo[key])
    call_body = b.add(f"{hint}-body", " | ".join(bodies))
    call = b.add(
        f"{hint}-one",
        " ".join(
            p
            for p in (
                marker_rule(fmt.call_open, exact),
                call_body,
                marker_rule(fmt.call_close, exact),
            )
            if p
        ),
    )
    section_open = fmt.section_open
    first = call
    wrote = prefill.strip()
    if wrote and section_open.strip() == wrote:
        # the prompt already opened the section (exact: its trailing whitespace is still due)
        section_open = _after(section_open, wrote) if exact else ""
    elif wrote and not section_open and fmt.call_open.strip() == wrote:
        # the prompt already wrote the first call's opener
        rest = _after(fmt.call_open, wrote) if exact else ""
        first = b.add(
            f"{hint}-first",
            " ".join(
                p
                for p in (body_literal(rest, exact), call_body, marker_rule(fmt.call_close, exact))
                if p
            ),
        )
    calls = (
        f"{first} ({marker_rule(fmt.separator, exact) or chr(34) * 2} {call})*"
        if parallel
        else first
    )
    parts = (marker_rule(section_open, exact), calls, marker_rule(fmt.section_close, exact))
    return b.add(hint, " ".join(p for p in parts if p))
