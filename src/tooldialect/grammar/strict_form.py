"""A lazy grammar's strict form: its formats with the exact envelope of a forced call.

A lazy grammar's envelope keeps free whitespace, because llama.cpp replays the model's own text
from the trigger into it. Its strict form (``ToolGrammar.strict_gbnf``) writes the same formats
as a forced call does (the canonical argument layout, markers exact), each starting with its
trigger text as the lazy one does; the in-process engine switches to it once a trigger fired
and llama.cpp accepts the capture there, so that fast-forward forces the envelope too
(``engine.in_process.strict_sampler``).
"""

from __future__ import annotations

from ..dialect.spec import DialectSpec, JsonBody
from ..tools import ToolDef
from .formats import format_rule
from .gbnf import GbnfBuilder

__all__ = ["STRICT_INDENTS", "strict_call_rules"]

STRICT_INDENTS: tuple[int | None, ...] = (None, 2, 4)
"""Layouts of a JSON call's envelope in a lazy grammar's strict form: ``json.dumps``'s compact
one (``{"name": "f", "arguments": {...}}``, as ``render_call`` writes it) and its ``indent=2`` /
``indent=4`` ones (``{\\n  "name": "f",\\n  "arguments": {...}\\n}``), which models write
under ``auto`` (Qwen2.5 in a fenced block). All are alternatives: the text the model writes
picks one, and from there the envelope is forced."""


def strict_call_rules(
    spec: DialectSpec, tools: list[ToolDef], *, parallel: bool
) -> tuple[str, str] | None:
    """``(gbnf, root)`` of a lazy grammar's strict form: every format that has a trigger, in
    the canonical argument layout with the exact envelope of a forced call (a JSON body in each
    of :data:`STRICT_INDENTS`), each starting with its trigger text as the lazy one does.
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
        indents = STRICT_INDENTS if isinstance(fmt.body, JsonBody) else (None,)
        for indent in indents:
            alts.append(
                format_rule(
                    b,
                    spec,
                    fmt,
                    tools,
                    parallel=parallel,
                    hint=f"fmt{i}" if indent is None else f"fmt{i}-i{indent}",
                    layout="canonical",
                    exact=True,
                    indent=indent,
                )
            )
    if not alts:
        return None
    b.define(root, " | ".join(alts))
    return b.render(root), root
