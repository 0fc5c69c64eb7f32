"""Argument values written as text: schema-typed coercion, Python literals (a bare-key codec's
values are read by ``dialect/value_codecs/bare_key.py``).

Nothing here evaluates code: Python arguments go through ``ast.parse`` and a walk that accepts only
literal nodes.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "NAMED_CONSTANTS",
    "coerce_value",
    "fit_empty_containers",
    "fit_empty_value",
    "literal_value",
    "parse_python_kwargs",
    "schema_types",
    "untyped_value",
]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
    "string": (str,),
}


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """Follow a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) inside ``root``."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and depth < 32:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return {}
        node: Any = root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, Mapping) else None
        schema = node if node is not None else {}
        depth += 1
    return schema


def schema_types(schema: Any, root: Mapping[str, Any], depth: int = 0) -> set[str]:
    """JSON types a schema admits (``anyOf``/``oneOf``/``allOf``/``$ref``/``enum`` followed);
    empty when the schema says nothing about type."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or depth > 32:
        return set()
    out: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        out.add(t)
    elif isinstance(t, list):
        out.update(x for x in t if isinstance(x, str))
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            for sub in subs:
                out |= schema_types(sub, root, depth + 1)
    values = schema.get("enum")
    if "const" in schema:
        values = [schema["const"]]
    if isinstance(values, list):
        for v in values:
            out.update(name for name, types in _JSON_TYPES.items() if _is_type(v, types))
    if not out:
        if "properties" in schema:
            out.add("object")
        elif "items" in schema:
            out.add("array")
    return out


def fit_empty_containers(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with each empty object or array made the one the schema admits: a syntax
    whose objects and arrays share their brackets (Lua's ``{}``, PHP's ``[]``) cannot tell."""
    fitted = _fit({**args}, schema, schema)
    return fitted if isinstance(fitted, dict) else dict(args)


def fit_empty_value(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """One value as ``fit_empty_containers`` fits arguments (``root``: where ``$ref`` s
    point)."""
    return _fit(value, schema, root)


def _fit(value: Any, schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    if depth > 64:
        return value
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return value
    if value in ({}, []):
        types = schema_types(schema, root)
        if value == {} and "array" in types and "object" not in types:
            return []
        if value == [] and "object" in types and "array" not in types:
            return {}
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        return {k: _fit(v, props.get(k, extra), root, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_fit(v, schema["items"], root, depth + 1) for v in value]
    return value


def _is_type(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def coerce_value(
    raw: str,
    schema: Any,
    *,
    root: Mapping[str, Any] | None = None,
    is_string: str | None = None,
) -> Any:
    """Type a raw text value by its JSON Schema.

    Strings stay raw; other types are ``json.loads``-ed. A value that does not decode to an admitted
    type is kept as the raw string (a failed coercion never drops the call). ``is_string``
    (DSML's ``string="true"|"false"`` attribute) decides when given. With no type information the
    value declared without one is what it spells (``untyped_value``); an undeclared one (no
    schema: an unknown tool or key) stays text.
    """
    if is_string is not None:
        flag = is_string.strip().lower()
        if flag == "true":
            return raw
        if flag == "false":
            return _loads_or_raw(raw)
    types = schema_types(schema, root if root is not None else {})
    if not types:  # a declared value of any type; an undeclared one (no schema) stays text
        return untyped_value(raw) if isinstance(schema, Mapping) else raw
    if types == {"string"}:
        return raw
    text = raw.strip()
    try:
        value = json.loads(text)
    except ValueError:
        lowered = text.lower()
        if "boolean" in types and lowered in ("true", "false"):
            return lowered == "true"
        if "null" in types and lowered in ("none", "null"):
            return None
        value = _python_literal(text)  # {'k': 'v'}, ['a'], True, None: models write Python too
        if value is _NOT_LITERAL:
            return raw
    if any(_is_type(value, _JSON_TYPES[t]) for t in types if t in _JSON_TYPES):
        return value
    if "number" in types and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return raw


_SPELLED = {"null": None, "None": None, "true": True, "True": True, "false": False, "False": False}


def untyped_value(raw: str) -> Any:
    """A value whose schema gives no type, as templates write one (``str(value)`` or JSON): a
    whole ``null``/``None``, boolean, finite number or container (JSON or Python) is that value;
    other text, a quoted string included, stays the text as written."""
    text = raw.strip()
    if text in _SPELLED:
        return _SPELLED[text]
    try:
        value = json.loads(text)
    except ValueError:
        value = _python_literal(text) if text[:1] in ("[", "{") else _NOT_LITERAL
    if isinstance(value, float) and not math.isfinite(value):
        return raw  # NaN and Infinity are no JSON values
    return raw if value is _NOT_LITERAL or isinstance(value, str) else value


def _loads_or_raw(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        value = _python_literal(raw.strip())
        return raw if value is _NOT_LITERAL else value


_NOT_LITERAL: Any = object()


def literal_value(text: str) -> Any:
    """The JSON value of a Python (or JSON) literal, or ``None`` when ``text`` is not one (a
    literal ``None`` reads as ``None`` too: callers check the type they need)."""
    value = _python_literal(text.strip())
    return None if value is _NOT_LITERAL else value


def _python_literal(text: str) -> Any:
    """A Python literal (dict, list, string, number, ``True``/``None``) as a JSON value, or
    ``_NOT_LITERAL``. Parsed with ``ast``, never evaluated."""
    if not text or len(text) > 100_000:
        return _NOT_LITERAL
    try:
        return _literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, _NotLiteral):
        return _NOT_LITERAL


class _NotLiteral(Exception):
    pass


NAMED_CONSTANTS: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}
"""The bare words a value may be written as (Python's or JSON's spelling), and what they are."""


def _literal(node: ast.expr) -> Any:
    """A JSON value from a literal AST node; raises ``_NotLiteral`` for anything else."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise _NotLiteral
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise _NotLiteral
            key = _literal(k)
            if not isinstance(key, str):
                raise _NotLiteral
            out[key] = _literal(v)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _NotLiteral
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and node.id in NAMED_CONSTANTS:
        return NAMED_CONSTANTS[node.id]
    raise _NotLiteral


def parse_python_kwargs(inner: str) -> dict[str, Any] | None:
    """``k=v, ...`` (the inside of a Python call) as a dict, or ``None`` if it is not keyword
    arguments with literal values."""
    try:
        tree = ast.parse("_(" + inner + "\n)", mode="eval")
    except (SyntaxError, ValueError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args:
        return None
    out: dict[str, Any] = {}
    try:
        for kw in call.keywords:
            if kw.arg is None:
                return None
            out[kw.arg] = _literal(kw.value)
    except _NotLiteral:
        return None
    return out
