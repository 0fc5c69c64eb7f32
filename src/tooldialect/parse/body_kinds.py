"""The body kinds the parser reads, in one place: per body class (``dialect/bodies.py``), how its
part of a ``FormatPlan`` is compiled, which reader reads a call's body, and which of the layouts
the parser reads besides a spec's own (``variants.py``) apply to it. The grammar's counterpart
is ``grammar/bodies``. Adding a body shape: its reader module, one ``register_body_kind`` line
below (or a call from the new module's owner), and its grammar. Nothing else in ``parse/``
branches on the body's class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dialect.spec import CallFormat, ElementBody, JsonBody, PythonBody, TaggedBody
from ..errors import DialectError
from .element_body import element_other_syntaxes, plan_element_body, read_element_call
from .json_body import json_name_key, plan_json_body, read_json_body
from .markers import Source
from .plan import BodyPlan, Context, FormatPlan
from .python_body import plan_python_body, read_python_body
from .reader_events import Reader
from .tagged_body import plan_tagged_body, read_tagged_body

__all__ = ["BodyKind", "body_kind", "plan_format", "read_body", "register_body_kind"]


def _common_syntaxes(body: object) -> tuple[object, ...]:
    return (JsonBody(), PythonBody())


def _not_in_prose(body: object) -> str | None:
    return None


@dataclass(frozen=True)
class BodyKind:
    """How the parser handles one body class."""

    plan: Callable[[CallFormat, Any], BodyPlan]
    """The body's part of the format's plan, compiled once per spec."""
    read: Callable[[Source, int, FormatPlan, Any, Context], Reader]
    """Reads one call's body at a position (after ``call_open``)."""
    other_syntaxes: Callable[[Any], tuple[object, ...]] = _common_syntaxes
    """Bodies of other call syntaxes read inside this body's call markers once its own reading
    fails (``variants.rebodied_formats``), in order. Models write a JSON call object or a Python
    call inside a marker that announced another body; the marker makes them safe to read."""
    json_objects: bool = False
    """A call is one JSON object: calls are also read as items of a JSON array
    (``variants.listed_formats``) and, read in another body's place, joined by ``;`` inside one
    call marker."""
    prose_name_key: Callable[[Any], str | None] = _not_in_prose
    """The key naming the tool where a markerless call of this body is read inside prose (whole,
    and only when it names an offered tool: ``variants.read_whole``); None where it is not."""
    bare_in_wrappers: bool = True
    """A call with no opener at all is read inside ``variants.WRAPPERS`` (a fenced JSON object is
    a call; a bare Python call only inside its list's ``[``)."""
    json_in_prose: bool = False
    """Models writing this body also write bare JSON calls joined by ``;`` inside prose (Qwen3.5
    under an XML template): read whole (``variants.joined_json_format``)."""


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


register_body_kind(
    JsonBody,
    BodyKind(
        plan_json_body,
        read_json_body,
        other_syntaxes=lambda body: (PythonBody(),),  # key variants are read by the JSON reader
        json_objects=True,
        prose_name_key=json_name_key,
    ),
)
register_body_kind(TaggedBody, BodyKind(plan_tagged_body, read_tagged_body))
register_body_kind(
    ElementBody,
    BodyKind(
        plan_element_body,
        read_element_call,
        other_syntaxes=element_other_syntaxes,
        json_in_prose=True,
    ),
)
register_body_kind(
    PythonBody,
    BodyKind(
        plan_python_body,
        read_python_body,
        other_syntaxes=lambda body: (JsonBody(),),
        bare_in_wrappers=False,
    ),
)
