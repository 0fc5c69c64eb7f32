"""What a body kind's grammar is given: one tool's call body to build."""

from __future__ import annotations

from dataclasses import dataclass

from ...dialect.spec import DialectSpec
from ...tool_defs import ToolDef
from ..codec import ArgumentLayout
from ..gbnf import GbnfBuilder, literal
from ..marker_rules import INDEX_RULE, id_rule

__all__ = ["BodyRequest"]


@dataclass(frozen=True)
class BodyRequest:
    """One tool's call body to build as a rule named ``hint``."""

    b: GbnfBuilder
    spec: DialectSpec
    tool: ToolDef
    hint: str
    layout: ArgumentLayout = "free"
    """Whitespace inside argument values (``codec.ArgumentLayout``)."""
    exact: bool = False
    """Structure exactly as ``render_call`` writes it."""
    indent: int | None = None
    """An exact JSON envelope pretty-printed with this indent."""

    def head_fields(self) -> dict[str, str]:
        """GBNF for the fields a head template may hold."""
        return {
            "name": literal(self.tool.name),
            "id": f"({id_rule(self.spec)})",
            "index": f"({INDEX_RULE})",
        }
