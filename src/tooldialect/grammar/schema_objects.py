"""Objects and arrays in a JSON Schema grammar.

Object keys come in the order ``properties`` declares them; required keys must appear, optional
ones may be skipped. ``additionalProperties`` defaults to *false* when ``properties`` is given
(tool arguments are closed) and to *true* when it is not; extra keys, when allowed, come after
the declared ones. Prefix items (``prefixItems`` / list ``items``) are all required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedSchemaError
from .gbnf import GbnfBuilder
from .schema_checks import ptr
from .schema_numbers import repeat

if TYPE_CHECKING:
    from .json_schema import SchemaConverter

__all__ = ["array_expr", "object_expr", "props_sequence"]


def object_expr(conv: SchemaConverter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        raise UnsupportedSchemaError(
            f"'properties' at {pointer!r} must be an object",
            pointer=ptr(pointer, "properties"),
        )
    required = schema.get("required") or []
    unknown = [r for r in required if r not in props]
    addl = schema.get("additionalProperties", None if "properties" in schema else True)
    if unknown and addl in (None, False):
        raise UnsupportedSchemaError(
            f"required keys {unknown!r} at {pointer!r} are not in 'properties'; declare them",
            pointer=ptr(pointer, "required"),
        )
    ws, sep, colon = c.pad(b), c.sep(b), c.colon(b)
    items = []
    for k, sub in props.items():
        value = conv.visit(sub, ptr(pointer, "properties", k), hint=f"{hint}-{k}")
        kv = b.add(f"{hint}-{k}-kv", f"{c.key(k)} {colon} {value}")
        items.append((kv, k in required))
    tail_rest = tail_first = ""
    if addl not in (None, False):
        value = conv.visit(
            addl if isinstance(addl, (Mapping, bool)) else True,
            ptr(pointer, "additionalProperties"),
            hint=f"{hint}-extra",
        )
        key = c.any_string(b) if c.name != "gemma4" else "[a-zA-Z_] [a-zA-Z0-9_]*"
        kv = b.add(f"{hint}-extra-kv", f"{key} {colon} {value}")
        tail_rest = f"({sep} {kv})*"
        tail_first = f"({kv} ({sep} {kv})*)?"
    seq = props_sequence(b, items, sep, hint=hint, tail_rest=tail_rest, tail_first=tail_first)
    return f"{c.text('{')} {ws} {seq} {ws} {c.text('}')}"


def array_expr(conv: SchemaConverter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    ws, sep = c.pad(b), c.sep(b)
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)
    if isinstance(items, list):
        prefix, items = items, schema.get("additionalItems", True)
    lo = int(schema.get("minItems", 0))
    hi = schema.get("maxItems")
    parts: list[str] = []
    if prefix:
        for i, sub in enumerate(prefix):
            parts.append(conv.visit(sub, ptr(pointer, "prefixItems", i), hint=f"{hint}-{i}"))
        lo = max(0, lo - len(prefix))
        hi = None if hi is None else max(0, int(hi) - len(prefix))
    head = f" {sep} ".join(parts)
    if items is False or hi == 0:
        body = head or '""'
    else:
        item = conv.visit(items, ptr(pointer, "items"), hint=f"{hint}-item")
        rep = repeat(
            f"({sep} {item})",
            max(0, lo - (0 if parts else 1)),
            None if hi is None else int(hi) - (0 if parts else 1),
        )
        body = f"{head} {rep}" if parts else f"{item} {rep}" if lo >= 1 else f"({item} {rep})?"
    return f"{c.text('[')} {ws} {body} {ws} {c.text(']')}"


def props_sequence(
    b: GbnfBuilder,
    items: list[tuple[str, bool]],
    sep: str,
    *,
    hint: str,
    tail_rest: str = "",
    tail_first: str = "",
) -> str:
    """Key/value items in order, ``(rule, required)``, joined by ``sep``; optional ones may be
    left out. ``tail_*`` continue the sequence after / instead of the declared items.
    Linear size."""
    rest = tail_rest
    first = tail_first
    for i in range(len(items) - 1, -1, -1):
        kv, req = items[i]
        after = f" {rest}" if rest else ""
        new_first = f"{kv}{after}" if req else f"{kv}{after} | {first or chr(34) * 2}"
        new_rest = f"{sep} {kv}{after}" if req else f"({sep} {kv})?{after}"
        first = b.add(f"{hint}-from{i}", new_first)
        rest = b.add(f"{hint}-after{i}", new_rest)
    return first or '""'
