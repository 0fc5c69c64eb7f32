"""The body kinds the parser reads, in one place: per body class (``dialect/bodies.py``), how its
part of a ``FormatPlan`` is compiled and which reader reads a call's body. The grammar's
counterpart is ``grammar/bodies``. Adding a body shape: its reader module, one
``register_body_kind`` line below (or a call from the new module's owner), and its grammar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dialect.spec import CallFormat, ElementBody, JsonBody, PythonBody, TaggedBody
from ..errors import DialectError
from .element_body import plan_element_body, read_element_call
from .events import Reader
from .json_body import plan_json_body, read_json_body
from .markers import Source
from .plan import BodyPlan, Context, FormatPlan
from .python_body import plan_python_body, read_python_body
from .tagged_body import plan_tagged_body, read_tagged_body

__all__ = ["BodyKind", "body_kind", "plan_format", "read_body", "register_body_kind"]


@dataclass(frozen=True)
class BodyKind:
    """How the parser handles one body class."""

    plan: Callable[[CallFormat, Any], BodyPlan]
    """The body's part of the format's plan, compiled once per spec."""
    read: Callable[[Source, int, FormatPlan, Any, Context], Reader]
    """Reads one call's body at a position (after ``call_open``)."""


_KINDS: dict[type, BodyKind] = {}


def register_body_kind(body_class: type, kind: BodyKind) -> None:
    """Make the parser read bodies of ``body_class`` with ``kind``."""
    _KINDS[body_class] = kind


def body_kind(body: object) -> BodyKind:
    """The registered kind of ``body``."""
    kind = _KINDS.get(type(body))
    if kind is None:
        raise DialectError(f"no parser is registered for the body {type(body).__name__}")
    return kind


def plan_format(fmt: CallFormat, *, known_names_only: bool = False) -> FormatPlan:
    """``fmt`` compiled for the readers."""
    body = body_kind(fmt.body).plan(fmt, fmt.body)
    return FormatPlan.assemble(fmt, body, known_names_only=known_names_only)


def read_body(src: Source, p: int, plan: FormatPlan, ctx: Context) -> Reader:
    """The reader of one call's body at ``p``."""
    body = plan.fmt.body
    return body_kind(body).read(src, p, plan, body, ctx)


register_body_kind(JsonBody, BodyKind(plan_json_body, read_json_body))
register_body_kind(TaggedBody, BodyKind(plan_tagged_body, read_tagged_body))
register_body_kind(ElementBody, BodyKind(plan_element_body, read_element_call))
register_body_kind(PythonBody, BodyKind(plan_python_body, read_python_body))
