"""The body kinds the grammar builds, in one place: per body class (``dialect/bodies.py``), the
function that builds one tool's call body, and the envelope layouts a lazy grammar's strict form
offers for it (``strict_form``). The parser's counterpart is ``parse/body_kinds.py``.
Adding a body shape: its module here and one ``register_body_grammar`` line below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...dialect.spec import DialectSpec, ElementBody, JsonBody, PythonBody, TaggedBody
from ...errors import DialectError, UnsupportedSchemaError
from ...tool_defs import ToolDef
from ..codec import ArgumentLayout
from ..gbnf import GbnfBuilder
from .base import BodyRequest
from .element import element_body_rule
from .json_object import JSON_STRICT_INDENTS, json_body_rule
from .python_call import python_body_rule
from .tagged import tagged_body_rule

__all__ = ["BodyGrammar", "BodyRequest", "body_rule", "register_body_grammar", "strict_indents_for"]

BodyGrammar = Callable[[BodyRequest, Any], str]
"""Builds one tool's call body (``BodyRequest``) for a body of its class; returns the rule."""

_GRAMMARS: dict[type, tuple[BodyGrammar, tuple[int | None, ...]]] = {}


def register_body_grammar(
    body_class: type,
    grammar: BodyGrammar,
    *,
    strict_indents: tuple[int | None, ...] = (None,),
) -> None:
    """Build bodies of ``body_class`` with ``grammar``. ``strict_indents``: the layouts of its
    exact envelope that a lazy grammar's strict form offers as alternatives (``None``: as
    ``render_call`` writes it; an int: pretty-printed with that indent, ``BodyRequest.indent``)."""
    _GRAMMARS[body_class] = (grammar, strict_indents)


def _registered(body: Any) -> tuple[BodyGrammar, tuple[int | None, ...]]:
    found = _GRAMMARS.get(type(body))
    if found is None:
        raise DialectError(f"no grammar is registered for the body {type(body).__name__}")
    return found


def strict_indents_for(body: Any) -> tuple[int | None, ...]:
    """The envelope layouts of ``body``'s kind in a lazy grammar's strict form."""
    return _registered(body)[1]


def body_rule(
    b: GbnfBuilder,
    spec: DialectSpec,
    body: Any,
    tool: ToolDef,
    *,
    hint: str,
    layout: ArgumentLayout = "free",
    exact: bool = False,
    indent: int | None = None,
) -> str:
    """The rule of ``tool``'s call body; a schema it cannot compile is refused naming the tool
    (the error's pointer says where inside its parameters)."""
    grammar = _registered(body)[0]
    req = BodyRequest(b, spec, tool, hint, layout, exact, indent)
    try:
        return grammar(req, body)
    except UnsupportedSchemaError as exc:
        if str(exc).startswith("tool "):
            raise
        raise UnsupportedSchemaError(
            f"tool {tool.name!r}, parameters at {exc.pointer or '/'!r}: {exc}",
            pointer=exc.pointer,
        ) from None


register_body_grammar(JsonBody, json_body_rule, strict_indents=JSON_STRICT_INDENTS)
register_body_grammar(TaggedBody, tagged_body_rule)
register_body_grammar(ElementBody, element_body_rule)
register_body_grammar(PythonBody, python_body_rule)
