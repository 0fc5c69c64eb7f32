"""Combinators in a JSON Schema grammar: ``$ref``, ``allOf`` (merged), ``anyOf``/``oneOf``.

``$ref`` must point inside the document (``#/$defs/...``); recursion works. ``allOf`` is merged
when its parts do not conflict. ``oneOf`` is compiled as ``anyOf``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedSchemaError
from .schema_checks import ANNOTATIONS, pointer_into, ptr, real_pointer, refuse_unsupported

if TYPE_CHECKING:
    from .json_schema import SchemaConverter

__all__ = ["all_of_expr", "any_of_expr", "merge_all_of", "ref_expr"]


def ref_expr(conv: SchemaConverter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    ref = schema["$ref"]
    rest = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
    if rest:
        with real_pointer(pointer, parts=(ptr(pointer, "$ref"), pointer)):
            return conv.expr({"allOf": [{"$ref": ref}, rest]}, pointer, hint)
    key = ("ref", c.name, ref)
    if key not in b.memo:
        target = conv.deref(ref, ptr(pointer, "$ref"))
        name = b.name(str(ref).rsplit("/", 1)[-1] or "ref")
        b.memo[key] = name
        b.define(name, conv.expr(target, str(ref)[1:], hint))
    return b.memo[key]


def all_of_expr(conv: SchemaConverter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    with pointer_into(conv.doc, ptr(pointer, "allOf")):
        return conv.expr(merge_all_of(conv, schema, pointer), pointer, hint)


def any_of_expr(
    conv: SchemaConverter, schema: Mapping[str, Any], pointer: str, hint: str, kw: str
) -> str:
    branches = schema[kw]
    if not isinstance(branches, list) or not branches:
        raise UnsupportedSchemaError(
            f"{kw!r} at {pointer!r} must be a non-empty list", pointer=ptr(pointer, kw)
        )
    base = {k: v for k, v in schema.items() if k != kw and k not in ANNOTATIONS}
    alts = []
    for i, br in enumerate(branches):
        at = ptr(pointer, kw, i)
        if not base:
            alts.append(conv.visit(br, at, hint=f"{hint}-{i}"))
            continue
        with real_pointer(at, parts=(pointer, at)):
            alts.append(conv.visit({"allOf": [base, br]}, at, hint=f"{hint}-{i}"))
    return " | ".join(dict.fromkeys(alts))


def merge_all_of(conv: SchemaConverter, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    parts = schema["allOf"]
    if not isinstance(parts, list):
        raise UnsupportedSchemaError(
            f"'allOf' at {pointer!r} must be a list", pointer=ptr(pointer, "allOf")
        )
    for i, raw in enumerate(parts):
        part_pointer = ptr(pointer, "allOf", i)
        part = conv.resolve(raw, part_pointer)
        if part is True:
            continue
        if not isinstance(part, Mapping):
            raise UnsupportedSchemaError(
                f"allOf part {part!r} at {pointer!r} cannot be merged",
                pointer=ptr(pointer, "allOf", i),
            )
        if part is not raw and isinstance(raw, Mapping):  # a $ref: point into its target
            part_pointer = str(raw["$ref"])[1:]
        # Refuse here, where the pointer still names the keyword's real place in the schema.
        refuse_unsupported(part, part_pointer)
        direct = part  # keys merged up from a nested allOf live deeper: point at the part
        if "allOf" in part:
            part = merge_all_of(conv, part, part_pointer)
        for k, v in part.items():
            if k in ANNOTATIONS:
                continue
            if k == "properties" and isinstance(merged.get(k), Mapping):
                merged[k] = {**merged[k], **v}
            elif k == "required":
                merged[k] = list(dict.fromkeys([*merged.get(k, []), *v]))
            elif k in merged and merged[k] != v:
                raise UnsupportedSchemaError(
                    f"allOf parts at {pointer!r} conflict on {k!r} ({merged[k]!r} vs {v!r}); "
                    "merge them by hand",
                    pointer=ptr(part_pointer, k) if k in direct else part_pointer,
                )
            else:
                merged[k] = v
    return merged
