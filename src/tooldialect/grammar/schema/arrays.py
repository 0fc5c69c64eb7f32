"""Arrays in a JSON Schema grammar.

* ``items``, ``prefixItems`` (and draft-4 list ``items`` / ``additionalItems``), ``minItems``,
  ``maxItems``. Prefix items are all required.
* ``uniqueItems`` is enforced when the items are finitely many scalars (``enum``, ``const``,
  ``boolean``; up to 6 values): one rule per set of values used so far. Otherwise it is loose
  (``SchemaConverter.loose``) and left to validation.
* ``contains``/``minContains``/``maxContains`` are loose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .converter_protocol import Converter
from .keywords import ptr
from .numeric import repeat

__all__ = ["array_expr"]

_MAX_UNIQUE = 6


def array_expr(conv: Converter, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
    c, b = conv.codec, conv.b
    ws = c.item_pad(b)
    opener, closer = c.brackets("array")
    for kw in ("contains", "minContains", "maxContains"):
        if kw in schema:
            conv.loosen(ptr(pointer, kw), f"{kw!r} is not enforced by the grammar")
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)
    if isinstance(items, list):
        prefix, items = items, schema.get("additionalItems", True)
    lo = int(schema.get("minItems", 0))
    hi = schema.get("maxItems")
    if schema.get("uniqueItems") is True:
        unique = _unique_items(conv, items, lo, hi, pointer, hint) if not prefix else None
        if unique is not None:
            return f"{opener} {ws} {unique} {ws} {closer}"
        conv.loosen(ptr(pointer, "uniqueItems"), "items may repeat (uniqueItems not enforced)")
    parts: list[str] = []
    if prefix:
        for i, sub in enumerate(prefix):
            parts.append(conv.visit(sub, ptr(pointer, "prefixItems", i), hint=f"{hint}-{i}"))
        lo = max(0, lo - len(prefix))
        hi = None if hi is None else max(0, int(hi) - len(prefix))
    item = None
    if not (items is False or hi == 0):
        item = conv.visit(items, ptr(pointer, "items"), hint=f"{hint}-item")
    alts = []
    for opening, sep, closing in c.item_bracketings(b):
        head = f" {sep} ".join(parts)
        if item is None:
            body = head or '""'
        else:
            rep = repeat(
                f"({sep} {item})",
                max(0, lo - (0 if parts else 1)),
                None if hi is None else int(hi) - (0 if parts else 1),
            )
            body = f"{head} {rep}" if parts else f"{item} {rep}" if lo >= 1 else f"({item} {rep})?"
        alts.append(f"{opener} {opening} {body} {closing} {closer}")
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def _finite_values(conv: Converter, items: Any, pointer: str) -> list[Any] | None:
    s = conv.resolve(items, pointer)
    if not isinstance(s, Mapping):
        return None
    if "const" in s:
        return [s["const"]]
    if isinstance(s.get("enum"), list):
        values = s["enum"]
    elif s.get("type") == "boolean":
        values = [True, False]
    else:
        return None
    if any(isinstance(v, (dict, list)) for v in values):
        return None
    unique: list[Any] = []
    for v in values:
        if not any(v == u and type(v) is type(u) for u in unique):
            unique.append(v)
    return unique


def _unique_items(
    conv: Converter, items: Any, lo: int, hi: Any, pointer: str, hint: str
) -> str | None:
    values = _finite_values(conv, items, ptr(pointer, "items"))
    if values is None or len(values) > _MAX_UNIQUE:
        return None
    c, b = conv.codec, conv.b
    sep = c.item_sep(b)
    top = len(values) if hi is None else min(len(values), int(hi))
    spelled = [c.const(v) for v in values]
    memo: dict[frozenset[int], str] = {}

    def state(used: frozenset[int]) -> str:
        if used in memo:
            return memo[used]
        alts = ['""'] if len(used) >= lo else []
        if len(used) < top:
            for i, text in enumerate(spelled):
                if i not in used:
                    lead = f"{sep} " if used else ""
                    alts.append(f"{lead}{text} {state(used | {i})}")
        memo[used] = b.add(f"{hint}-uniq", " | ".join(alts) or '""')
        return memo[used]

    if lo > len(values):
        return None
    return state(frozenset())
