"""Combinators in a JSON Schema grammar: ``$ref``, ``allOf`` (merged), ``anyOf``/``oneOf``, ``not``.

* ``$ref`` must point inside the document (``#/$defs/...``, percent-encoded or not); recursion
  works, also through a ``$ref`` with sibling keywords or inside an ``allOf`` (each merged schema
  is one rule, reused when the same merge comes round again). ``$recursiveRef`` is a ``$ref``.
* ``allOf`` is merged: types intersect, ``properties`` merge key by key (a key in two parts must
  satisfy both), ``required`` unite, bounds take the tighter one, annotation keys (``title``,
  ``description``, ``x-...``) are ignored. Parts that conflict otherwise (two ``pattern``s, two
  ``format``s) keep the first part's value and are recorded as loose.
* ``oneOf`` is compiled as ``anyOf``; exclusivity is enforced only when the branches cannot
  overlap (different types, or disjoint ``const``/``enum`` values, also on one required
  property); otherwise it is loose.
* ``not`` is enforced for ``{"type": ...}``, ``{"required": [k]}``, ``{"anyOf": [{"required":
  [k]}, ...]}`` and ``{}``; other forms are loose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import UnsupportedSchemaError
from .converter_protocol import Converter
from .keywords import (
    EmptySchemaError,
    is_annotation,
    pointer_into,
    ptr,
    real_pointer,
    refuse_unsupported,
)

__all__ = ["all_of_expr", "any_of_expr", "apply_not", "merge_all_of", "ref_expr"]

_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_SUBSCHEMA = ("items", "additionalProperties", "additionalItems", "propertyNames", "contains")
_MAX_PRODUCT = 16


def ref_expr(conv: Converter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    ref = schema["$ref"]
    rest = {k: v for k, v in schema.items() if k != "$ref" and not is_annotation(k)}
    if rest:
        with real_pointer(pointer, parts=(ptr(pointer, "$ref"), pointer)):
            return conv.expr({"allOf": [{"$ref": ref}, rest]}, pointer, hint)
    # the same ``$ref`` text names another target in another tool's document
    key = ("ref", c.name, c.layout, b.document_key(conv.doc), ref)
    if key not in b.memo:
        conv.resolve(schema, pointer)  # refuses a cycle of bare $refs (it would be r ::= r)
        target = conv.deref(ref, ptr(pointer, "$ref"))
        name = b.name(str(ref).rsplit("/", 1)[-1] or "ref")
        b.memo[key] = name  # reserved first: the target may refer to itself (recursion)
        try:
            body = conv.expr(target, str(ref)[1:], hint)
        except BaseException:
            # a target that admits nothing (a dropped anyOf branch) or is refused must not
            # leave an empty rule behind: llama.cpp rejects it, and a second reference to the
            # same target would read it as "matches the empty text"
            del b.memo[key]
            b.rules.pop(name, None)
            raise
        b.define(name, body)
    return b.memo[key]


def all_of_expr(conv: Converter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    text = json.dumps(schema, sort_keys=True, default=repr)
    doc = b.document_key(conv.doc) if '"$ref"' in text else None  # refs read their document
    key = ("allOf", c.name, c.layout, doc, text)
    if key in b.memo:
        return b.memo[key]
    name = b.name(hint)
    b.memo[key] = name  # reserved first: the merge may come round to itself (recursion)
    try:
        with pointer_into(conv.doc, ptr(pointer, "allOf")):
            body = conv.expr(merge_all_of(conv, schema, pointer), pointer, hint)
    except BaseException:
        del b.memo[key]
        b.rules.pop(name, None)
        raise
    b.define(name, body)
    return name


def any_of_expr(
    conv: Converter, schema: Mapping[str, Any], pointer: str, hint: str, kw: str
) -> str:
    branches = schema[kw]
    if not isinstance(branches, list) or not branches:
        raise UnsupportedSchemaError(
            f"{kw!r} at {pointer!r} must be a non-empty list", pointer=ptr(pointer, kw)
        )
    if kw == "oneOf" and len(branches) > 1 and not _disjoint(conv, branches, pointer):
        conv.loosen(ptr(pointer, kw), "oneOf is compiled as anyOf: a value may match two branches")
    base = {k: v for k, v in schema.items() if k != kw and not is_annotation(k)}
    alts = []
    for i, br in enumerate(branches):
        at = ptr(pointer, kw, i)
        if br is False:
            continue
        try:
            if not base:
                alts.append(conv.visit(br, at, hint=f"{hint}-{i}"))
                continue
            with real_pointer(at, parts=(pointer, at)):
                alts.append(conv.visit({"allOf": [base, br]}, at, hint=f"{hint}-{i}"))
        except EmptySchemaError:
            continue  # a branch no value satisfies adds nothing to the union
    if not alts:
        raise EmptySchemaError(f"{kw!r} at {pointer!r} admits no value", pointer=pointer)
    return " | ".join(dict.fromkeys(alts))


def _kinds(conv: Converter, schema: Any, pointer: str) -> set[str] | None:
    """The JSON types a branch may have, or None when unknown."""
    s = conv.resolve(schema, pointer)
    if not isinstance(s, Mapping):
        return None
    values = [s["const"]] if "const" in s else s.get("enum")
    if isinstance(values, list):
        return {_type_of(v) for v in values}
    typ = s.get("type")
    types = [typ] if isinstance(typ, str) else typ if isinstance(typ, list) else None
    if types is None:
        return None
    out = set(types)
    if "number" in out:
        out.add("integer")
    return out


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _values(conv: Converter, schema: Any, pointer: str) -> list[str] | None:
    s = conv.resolve(schema, pointer)
    if not isinstance(s, Mapping):
        return None
    values = [s["const"]] if "const" in s else s.get("enum")
    if not isinstance(values, list):
        return None
    return [json.dumps(v, sort_keys=True) for v in values]


def _pairwise_disjoint(sets: list[set[str]]) -> bool:
    seen: set[str] = set()
    for s in sets:
        if seen & s:
            return False
        seen |= s
    return True


def _disjoint(conv: Converter, branches: list[Any], pointer: str) -> bool:
    kinds = [_kinds(conv, br, pointer) for br in branches]
    if all(k is not None for k in kinds) and _pairwise_disjoint([k for k in kinds if k]):
        return True
    values = [_values(conv, br, pointer) for br in branches]
    if all(v is not None for v in values) and _pairwise_disjoint([set(v or []) for v in values]):
        return True
    resolved = [conv.resolve(br, pointer) for br in branches]
    if not all(isinstance(r, Mapping) for r in resolved):
        return False
    shared = set.intersection(*(set(r.get("required") or []) for r in resolved))
    for key in shared:
        subs = [(r.get("properties") or {}).get(key) for r in resolved]
        found = [_values(conv, s, pointer) if s is not None else None for s in subs]
        if all(f is not None for f in found) and _pairwise_disjoint([set(f or []) for f in found]):
            return True
    return False


def apply_not(conv: Converter, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
    """``schema`` with its ``not`` folded into positive keywords (or dropped, as loose)."""
    rest = {k: v for k, v in schema.items() if k != "not"}
    neg = conv.resolve(schema["not"], ptr(pointer, "not"))
    at = ptr(pointer, "not")
    if neg is True or neg == {}:
        raise EmptySchemaError(f"'not' at {at!r} excludes every value", pointer=at)
    if not isinstance(neg, Mapping):
        return rest
    body = {k: v for k, v in neg.items() if not is_annotation(k)}
    if set(body) == {"type"}:
        return _without_types(conv, rest, body["type"], at)
    keys = _forbidden_keys(body)
    if keys is not None:
        props = dict(rest.get("properties") or {})
        for k in keys:
            props[k] = False
        return {**rest, "properties": props, "type": rest.get("type", "object")}
    conv.loosen(at, "this 'not' is not enforced by the grammar")
    return rest


def _without_types(conv: Converter, rest: dict[str, Any], excluded: Any, at: str) -> dict[str, Any]:
    out = {excluded} if isinstance(excluded, str) else set(excluded or [])
    if "number" in out:
        out.add("integer")
    typ = rest.get("type")
    have = [typ] if isinstance(typ, str) else list(typ) if isinstance(typ, list) else list(_TYPES)
    if "integer" in out and "number" in have and "number" not in out:
        conv.loosen(at, "'not integer' of a number is not enforced")
        return rest
    left = [t for t in have if t not in out]
    if not left:
        raise EmptySchemaError(f"'not' at {at!r} excludes every type", pointer=at)
    return {**rest, "type": left if len(left) > 1 else left[0]}


def _forbidden_keys(body: Mapping[str, Any]) -> list[str] | None:
    """Keys a ``not`` forbids: ``{"required": [k]}`` or ``{"anyOf": [{"required": [k]}, ...]}``."""
    if set(body) == {"required"} and isinstance(body["required"], list):
        return list(body["required"]) if len(body["required"]) == 1 else None
    if set(body) <= {"anyOf", "oneOf"} and len(body) == 1:
        keys = []
        for br in next(iter(body.values())):
            found = _forbidden_keys(br) if isinstance(br, Mapping) else None
            if found is None:
                return None
            keys += found
        return keys
    return None


def merge_all_of(conv: Converter, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
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
        if "$ref" in part:  # a $ref with siblings: its target is one more part
            ref_rest = {k: v for k, v in part.items() if k != "$ref"}
            target = conv.deref(part["$ref"], ptr(part_pointer, "$ref"))
            part = {"allOf": [target, ref_rest]} if target is not part else ref_rest
        if "allOf" in part:
            part = merge_all_of(conv, part, part_pointer)
        for k, v in part.items():
            if not is_annotation(k):
                _merge_key(conv, merged, k, v, part_pointer)
    return merged


def _merge_key(conv: Converter, merged: dict[str, Any], k: str, v: Any, at: str) -> None:
    if k not in merged or _strip({k: merged[k]}) == _strip({k: v}):
        merged.setdefault(k, v)
        return
    old = merged[k]
    if k == "type":
        merged[k] = _intersect_types(old, v, at)
    elif k in ("properties", "patternProperties") and isinstance(old, Mapping):
        props = dict(old)
        for name, sub in v.items():
            same = name not in props or _strip(props[name]) == _strip(sub)
            props[name] = (
                sub if name not in props else props[name] if same else {"allOf": [props[name], sub]}
            )
        merged[k] = props
    elif k == "required":
        merged[k] = list(dict.fromkeys([*old, *v]))
    elif k == "enum" and isinstance(old, list) and isinstance(v, list):
        merged[k] = [x for x in old if x in v]
        if not merged[k]:
            raise EmptySchemaError(f"allOf parts at {at!r} share no enum value", pointer=at)
    elif k in _LOWER and _numbers(old, v):
        merged[k] = max(old, v)
    elif k in _UPPER and _numbers(old, v):
        merged[k] = min(old, v)
    elif k in _SUBSCHEMA:
        merged[k] = (
            False
            if False in (old, v)
            else v
            if old is True
            else old
            if v is True
            else {"allOf": [old, v]}
        )
    elif k == "uniqueItems":
        merged[k] = bool(old) or bool(v)
    elif k in ("anyOf", "oneOf") and len(old) * len(v) <= _MAX_PRODUCT:
        merged[k] = [{"allOf": [x, y]} for x in old for y in v]
    else:
        conv.loosen(ptr(at, k), f"allOf parts conflict on {k!r}: only the first part's applies")


def _numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))


def _intersect_types(a: Any, b: Any, at: str) -> Any:
    def norm(t: Any) -> set[str]:
        return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set(_TYPES)

    x, y = norm(a), norm(b)
    both = x & y
    if ("number" in x and "integer" in y) or ("integer" in x and "number" in y):
        both.add("integer")
    if not both:
        raise EmptySchemaError(f"allOf parts at {at!r} share no type ({a!r}, {b!r})", pointer=at)
    order = [t for t in _TYPES if t in both]
    return order[0] if len(order) == 1 else order


_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_DATA = ("enum", "const", "required", "default", "examples")


def _strip(value: Any) -> Any:
    """A schema without annotation keys at any depth (for comparing allOf parts)."""
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if is_annotation(k):
            continue
        if k in _NAMED and isinstance(v, Mapping):
            out[k] = {name: _strip(sub) for name, sub in v.items()}
        else:
            out[k] = v if k in _DATA else _strip(v)
    return out
