"""A lazy grammar's strict form: its formats with the exact envelope of a forced call.

A lazy grammar's envelope keeps free whitespace, because llama.cpp replays the model's own text
from the trigger into it. Its strict form (``ToolGrammar.strict_gbnf``) writes the same formats
as a forced call does (the canonical argument layout, markers exact), each starting with its
trigger text as the lazy one does; the in-process engine switches to it once a trigger fired
and llama.cpp accepts the capture there, so that fast-forward forces the envelope too
(``engine.in_process.strict_sampler``).
"""

from __future__ import annotations

from ..dialect.spec import DialectSpec
from ..tool_defs import ToolDef
from .bodies import strict_indents_for
from .codec import ArgumentLayout
from .formats import format_rule
from .gbnf import GbnfBuilder

__all__ = ["strict_call_rules"]


def strict_call_rules(
    spec: DialectSpec,
    tools: list[ToolDef],
    *,
    parallel: bool,
    layout: ArgumentLayout = "canonical",
) -> tuple[str, str] | None:
    """``(gbnf, root)`` of a lazy grammar's strict form: every format that has a trigger, in
    the lazy grammar's argument ``layout`` (canonical or natural) with the exact envelope of a
    forced call (in each layout its body kind registers, ``bodies.strict_indents_for``: a JSON
    body compact and indented), each starting with its trigger text as the lazy one does.
    ``None`` when no format has a trigger."""
    b = GbnfBuilder()
    root = b.name("strict")
    alts = []
    for i, fmt in enumerate(spec.formats):
        if not fmt.effective_triggers():
            continue
        # the capture starts at the trigger, after the first marker's leading whitespace
        first = "section_open" if fmt.section_open else "call_open"
        fmt = fmt.model_copy(update={first: getattr(fmt, first).lstrip()})
        for indent in strict_indents_for(fmt.body):
            alts.append(
                format_rule(
                    b,
                    spec,
                    fmt,
                    tools,
                    parallel=parallel,
                    hint=f"fmt{i}" if indent is None else f"fmt{i}-i{indent}",
                    layout=layout,
                    exact=True,
                    indent=indent,
                )
            )
    if not alts:
        return None
    b.define(root, " | ".join(alts))
    return b.render(root), root
