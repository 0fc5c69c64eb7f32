"""GBNF for the literal pieces of a call: markers, body templates with their ``{fields}``, ids
and indices. Shared by the envelope (``build.py``) and the body kinds (``bodies/``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..dialect.spec import DialectSpec, format_template
from .gbnf import literal, marker_edges, optional_edges

__all__ = [
    "INDEX_RULE",
    "body_literal",
    "id_rule",
    "marker_rule",
    "properties_of",
    "required_of",
    "template_rule",
]

_ID_RULES = {"openai": "[a-zA-Z0-9_-]{1,40}", "alnum9": "[a-zA-Z0-9]{9}", "numeric": "[0-9]{1,6}"}
INDEX_RULE = "[0-9]{1,4}"
_SENTINEL = re.compile("\x00([a-z_]+)\x00")
_FIELDS = ("name", "id", "index", "key", "is_string", "type", "value")


def body_literal(text: str, exact: bool) -> str:
    """A literal inside a call body: exactly as written (``exact``), or with its outer whitespace
    optional (parsers tolerate its absence)."""
    if not exact:
        return optional_edges(text)
    return literal(text) if text else ""


def marker_rule(text: str, exact: bool) -> str:
    """An envelope marker: exactly as written (``exact``), or with bounded free whitespace."""
    if not exact:
        return marker_edges(text)
    return literal(text) if text else ""


def template_rule(template: str, fields: Mapping[str, str], *, exact: bool = False) -> str:
    """GBNF for a marker template: literal chunks (outer whitespace optional unless ``exact``)
    and field exprs."""
    marked = format_template(template, **{f: f"\x00{f}\x00" for f in _FIELDS if f in fields})
    out = []
    pos = 0
    for m in _SENTINEL.finditer(marked):
        out.append(body_literal(marked[pos : m.start()], exact))
        out.append(fields[m.group(1)])
        pos = m.end()
    out.append(body_literal(marked[pos:], exact))
    return " ".join(p for p in out if p) or '""'


def id_rule(spec: DialectSpec) -> str:
    """What a call id the model writes looks like."""
    return _ID_RULES.get(spec.id_format, _ID_RULES["openai"])


def properties_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool schema's declared properties (none where it has none)."""
    props = schema.get("properties") or {}
    return props if isinstance(props, Mapping) else {}


def required_of(schema: Mapping[str, Any]) -> list[str]:
    """A tool schema's required keys."""
    req = schema.get("required") or []
    return list(req) if isinstance(req, list) else []
