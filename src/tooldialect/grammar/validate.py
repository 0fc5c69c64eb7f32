"""Parsed arguments checked against the *full* JSON Schema, after the grammar.

The grammar enforces most of a schema, but not all of it: what it leaves out is listed in
``SchemaConverter.loose`` (and in docs/structured-output.md), and a lenient parse may read text
the grammar never saw (a call written before the lazy grammar fired). ``check_call`` says whether
a parsed call's arguments are valid for its tool and, if not, where and why.

``jsonschema`` is used when it is installed (it is an optional dependency: the ``test`` extra
brings it through hypothesis-jsonschema), with its format checker; otherwise a small validator
here covers the keywords the compiler knows (types, enum/const, objects, arrays, strings,
numbers, combinators, local ``$ref``), without formats.

The front end runs ``check_call`` on every parsed call and reports or raises what it finds
(``frontend.validation``, the ``invalid_arguments`` option); ``InvalidArgumentsWarning`` is
for callers who check calls themselves and want a warning.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ..tool_defs import ToolDef

__all__ = ["InvalidArgumentsWarning", "SchemaViolation", "check_call", "validate_value"]


@dataclass(frozen=True)
class SchemaViolation:
    """One way a value fails its schema."""

    path: str
    """JSON pointer into the value (``""`` is the value itself)."""
    message: str
    keyword: str = ""
    """The schema keyword that failed (``type``, ``minimum``...; ``name``: no such tool)."""


class InvalidArgumentsWarning(UserWarning):
    """A parsed call whose arguments fail its tool's schema."""

    def __init__(self, name: str, problems: list[SchemaViolation]) -> None:
        text = "; ".join(f"{p.path or '/'}: {p.message}" for p in problems[:5])
        super().__init__(f"tool call {name!r} has arguments invalid for its schema: {text}")
        self.name = name
        self.problems = problems


def check_call(
    tools: Iterable[ToolDef], name: str, arguments: Mapping[str, Any]
) -> list[SchemaViolation]:
    """Violations of ``name``'s parameter schema by ``arguments`` (unknown tool: one violation)."""
    for tool in tools:
        if tool.name == name:
            return validate_value(tool.parameters, dict(arguments))
    return [SchemaViolation("", f"no tool named {name!r} was offered", "name")]


def validate_value(schema: Any, value: Any) -> list[SchemaViolation]:
    """Violations of ``schema`` by ``value``; ``[]`` when valid."""
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        return _Fallback(schema).check(schema, value, "")
    try:
        cls = jsonschema.validators.validator_for(schema, default=_default_draft(schema))
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
        return [
            SchemaViolation(
                "".join(f"/{p}" for p in e.absolute_path), e.message, str(e.validator or "")
            )
            for e in errors
        ]
    except Exception:  # a schema jsonschema cannot read (bad draft, unresolvable $ref)
        return _Fallback(schema).check(schema, value, "")


_DRAFT_2019_UP = ('"$defs"', '"prefixItems"', '"dependentRequired"', '"dependentSchemas"')


def _default_draft(schema: Any) -> Any:
    """The validator class for a schema without ``$schema``: draft 2020-12 when it uses a keyword
    of 2019 or later, else draft 7 (whose ``dependencies`` and ``definitions`` tools still use)."""
    import jsonschema

    text = json.dumps(schema, default=repr)
    if any(k in text for k in _DRAFT_2019_UP):
        return jsonschema.Draft202012Validator
    return jsonschema.Draft7Validator


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


class _Fallback:
    """A small JSON Schema validator for when ``jsonschema`` is absent (no formats)."""

    def __init__(self, document: Any) -> None:
        self.doc = document

    def deref(self, ref: str) -> Any:
        node = self.doc
        for raw in ref[1:].split("/")[1:] if ref.startswith("#/") else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return True
        return node

    def check(self, schema: Any, value: Any, path: str) -> list[SchemaViolation]:
        if schema is True or schema is None:
            return []
        if schema is False:
            return [SchemaViolation(path, "no value is allowed here", "false")]
        if not isinstance(schema, Mapping):
            return []
        out: list[SchemaViolation] = []
        if isinstance(schema.get("$ref"), str):
            out += self.check(self.deref(schema["$ref"]), value, path)
        out += self._generic(schema, value, path)
        if isinstance(value, dict):
            out += self._object(schema, value, path)
        elif isinstance(value, list):
            out += self._array(schema, value, path)
        elif isinstance(value, str):
            out += self._string(schema, value, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out += self._number(schema, value, path)
        return out

    def _generic(self, s: Mapping[str, Any], v: Any, path: str) -> list[SchemaViolation]:
        out = []
        typ = s.get("type")
        types = [typ] if isinstance(typ, str) else typ if isinstance(typ, list) else []
        if s.get("nullable") is True:
            types = [*types, "null"] if types else types
        if types and not any(_TYPES.get(t, lambda _: True)(v) for t in types):
            out.append(SchemaViolation(path, f"{v!r} is not of type {typ!r}", "type"))
        if "const" in s and not _same(v, s["const"]):
            out.append(SchemaViolation(path, f"{v!r} is not {s['const']!r}", "const"))
        if isinstance(s.get("enum"), list) and not any(_same(v, e) for e in s["enum"]):
            out.append(SchemaViolation(path, f"{v!r} is not one of {s['enum']!r}", "enum"))
        for sub in s.get("allOf") or []:
            out += self.check(sub, v, path)
        if isinstance(s.get("anyOf"), list) and not any(
            not self.check(b, v, path) for b in s["anyOf"]
        ):
            out.append(SchemaViolation(path, "matches none of anyOf", "anyOf"))
        if isinstance(s.get("oneOf"), list):
            n = sum(not self.check(b, v, path) for b in s["oneOf"])
            if n != 1:
                out.append(SchemaViolation(path, f"matches {n} branches of oneOf, not 1", "oneOf"))
        if "not" in s and not self.check(s["not"], v, path):
            out.append(SchemaViolation(path, "matches the schema in 'not'", "not"))
        if "if" in s:
            branch = s.get("then") if not self.check(s["if"], v, path) else s.get("else")
            out += self.check(branch, v, path)
        return out

    def _object(self, s: Mapping[str, Any], v: dict[str, Any], path: str) -> list[SchemaViolation]:
        out = []
        props = s.get("properties") or {}
        patterns = s.get("patternProperties") or {}
        for key in s.get("required") or []:
            if key not in v:
                out.append(SchemaViolation(path, f"{key!r} is a required property", "required"))
        for key, item in v.items():
            at = f"{path}/{key}"
            matched = key in props
            if matched:
                out += self.check(props[key], item, at)
            for pat, sub in patterns.items():
                if re.search(pat, key):
                    matched = True
                    out += self.check(sub, item, at)
            addl = s.get("additionalProperties", True)
            if not matched:
                if addl is False:
                    out.append(
                        SchemaViolation(
                            at, f"additional property {key!r} not allowed", "additionalProperties"
                        )
                    )
                else:
                    out += self.check(addl, item, at)
        out += self._dependencies(s, v, path)
        if len(v) < s.get("minProperties", 0):
            out.append(SchemaViolation(path, "too few properties", "minProperties"))
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            out.append(SchemaViolation(path, "too many properties", "maxProperties"))
        return out

    def _dependencies(
        self, s: Mapping[str, Any], v: dict[str, Any], path: str
    ) -> list[SchemaViolation]:
        out = []
        for key, need in {**(s.get("dependentRequired") or {}), **_deps(s)}.items():
            if key in v and isinstance(need, list):
                out += [
                    SchemaViolation(path, f"{key!r} needs {k!r}", "dependencies")
                    for k in need
                    if k not in v
                ]
            elif key in v:
                out += self.check(need, v, path)
        for key, sub in (s.get("dependentSchemas") or {}).items():
            if key in v:
                out += self.check(sub, v, path)
        return out

    def _array(self, s: Mapping[str, Any], v: list[Any], path: str) -> list[SchemaViolation]:
        out = []
        prefix = s.get("prefixItems")
        items = s.get("items", True)
        if isinstance(items, list):
            prefix, items = items, s.get("additionalItems", True)
        prefix = prefix or []
        for i, item in enumerate(v):
            sub = prefix[i] if i < len(prefix) else items
            out += self.check(sub, item, f"{path}/{i}")
        if len(v) < s.get("minItems", 0):
            out.append(SchemaViolation(path, "too few items", "minItems"))
        if "maxItems" in s and len(v) > s["maxItems"]:
            out.append(SchemaViolation(path, "too many items", "maxItems"))
        if s.get("uniqueItems") is True and any(
            _same(a, b) for i, a in enumerate(v) for b in v[i + 1 :]
        ):
            out.append(SchemaViolation(path, "items are not unique", "uniqueItems"))
        return out

    def _string(self, s: Mapping[str, Any], v: str, path: str) -> list[SchemaViolation]:
        out = []
        if len(v) < s.get("minLength", 0):
            out.append(SchemaViolation(path, "too short", "minLength"))
        if "maxLength" in s and len(v) > s["maxLength"]:
            out.append(SchemaViolation(path, "too long", "maxLength"))
        pat = s.get("pattern")
        if isinstance(pat, str):
            try:
                if re.search(pat, v) is None:
                    out.append(SchemaViolation(path, f"does not match {pat!r}", "pattern"))
            except re.error:
                pass
        return out

    def _number(self, s: Mapping[str, Any], v: float, path: str) -> list[SchemaViolation]:
        out = []
        checks: tuple[tuple[str, Callable[[float], bool]], ...] = (
            ("minimum", lambda b: v >= b),
            ("maximum", lambda b: v <= b),
            ("exclusiveMinimum", lambda b: v > b),
            ("exclusiveMaximum", lambda b: v < b),
        )
        for key, ok in checks:
            b = s.get(key)
            if isinstance(b, bool):  # draft 4: a flag on minimum/maximum
                base = s.get("minimum" if key == "exclusiveMinimum" else "maximum")
                if b and isinstance(base, (int, float)) and v == base:
                    out.append(SchemaViolation(path, f"{v!r} equals the exclusive bound", key))
            elif isinstance(b, (int, float)) and not ok(b):
                out.append(SchemaViolation(path, f"{v!r} fails {key} {b!r}", key))
        k = s.get("multipleOf")
        if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0:
            q = v / k
            if not math.isclose(q, round(q), rel_tol=0, abs_tol=1e-9):
                out.append(SchemaViolation(path, f"{v!r} is not a multiple of {k!r}", "multipleOf"))
        return out


def _deps(s: Mapping[str, Any]) -> dict[str, Any]:
    deps = s.get("dependencies")
    return dict(deps) if isinstance(deps, Mapping) else {}
