"""Variables templates read that a serving stack passes by convention, filled from ``tools``.

Some templates read more than ``messages`` and ``tools``: the stack they were written for passes
the function definitions under another name, or a helper that prints them. Each is filled only when
the template reads it (its undeclared variables) and the caller did not pass it:

* ``functions``: the tools' function definitions as one JSON string (FireFunction v2), ``"[]"``
  without tools;
* ``datetime``: today's date, ``YYYY-MM-DD`` (a date, not a time, so the prompt prefix the KV cache
  holds stays the same all day);
* ``generate_schema_from_functions``: a callable printing the definitions as a TypeScript
  namespace (the Functionary v2/v3 templates call it with ``tools``), as the stack that wrote those
  templates prints them: a comment with each description, ``type name = (_: {...}) => any;``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["conventional_variables", "is_helper", "typescript_schema"]


def conventional_variables(
    wanted: frozenset[str],
    tools: Sequence[Mapping[str, Any]] | None,
    given: Mapping[str, Any],
    *,
    today: Callable[[], str],
) -> dict[str, Any]:
    """The conventional variables among ``wanted`` that ``given`` lacks (see the module
    docstring). ``today`` gives the date as ``YYYY-MM-DD``."""
    out: dict[str, Any] = {}
    if "functions" in wanted and "functions" not in given:
        fns = [t.get("function", t) for t in tools or ()]
        out["functions"] = json.dumps(fns, ensure_ascii=False, indent=4)
    if "datetime" in wanted and "datetime" not in given:
        out["datetime"] = today()
    if "generate_schema_from_functions" in wanted and "generate_schema_from_functions" not in given:
        out["generate_schema_from_functions"] = typescript_schema
    return out


def is_helper(value: object) -> bool:
    """Whether ``value`` is one of the functions here that templates call: these reach the sandbox
    as they are (every other value a caller passes is copied as plain data)."""
    return value is typescript_schema


def typescript_schema(tools: object = None, namespace: str = "functions") -> str:
    """Function definitions (OpenAI tools or bare functions) as a TypeScript namespace."""
    lines = [
        "// Supported function definitions that should be called when necessary.",
        f"namespace {namespace} {{",
        "",
    ]
    for tool in tools if isinstance(tools, list | tuple) else ():
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            continue  # code_interpreter and other non-function tools print nothing here
        lines.append(f"// {fn.get('description') or ''}")
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        if not isinstance(props, Mapping):
            lines += [f"type {fn['name']} = () => any;", ""]
            continue
        required = params.get("required") if isinstance(params, Mapping) else None
        lines.append(f"type {fn['name']} = (_: {{")
        lines += _members(props, required if isinstance(required, list) else [])
        lines += ["}) => any;", ""]
    lines.append(f"}} // namespace {namespace}")
    return "\n".join(lines)


def _members(props: Mapping[str, Any], required: list[Any]) -> list[str]:
    lines: list[str] = []
    for name, schema in props.items():
        if isinstance(schema, Mapping) and schema.get("description"):
            lines.append(f"// {schema['description']}")
        optional = "" if name in required else "?"
        lines.append(f"{name}{optional}: {_type(schema)},")
    return lines


def _type(schema: object) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"]) or "any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type(s) for s in schema[key]) or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}) for k in kind) or "any"
    if kind == "array":
        item = _type(schema.get("items"))
        return f"({item})[]" if "|" in item else f"{item}[]"
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        required = schema.get("required")
        members = _members(schema["properties"], required if isinstance(required, list) else [])
        return "{\n" + "\n".join(members) + "\n}"
    return {"integer": "number", "null": "null"}.get(str(kind), str(kind)) if kind else "any"
