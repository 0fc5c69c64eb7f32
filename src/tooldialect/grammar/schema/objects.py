"""Objects in a JSON Schema grammar.

* Keys come in the order ``properties`` declares them, or in any order under the natural layout
  (``Codec.any_order``, up to ``MAX_ANY_ORDER`` keys); required keys must appear, optional ones
  may be skipped. Required keys that ``properties`` does not list come after the listed ones,
  with the schema ``patternProperties`` / ``additionalProperties`` gives them (any value when
  neither does).
* ``additionalProperties`` defaults to *false* when ``properties`` or ``patternProperties`` is
  given (tool arguments are closed) and to *true* when neither is; extra keys, when allowed, come
  after the declared ones and are never a declared key (``object_keys``).
* ``patternProperties``: extra keys matching a pattern take its schema. A key matching two
  patterns needs only one of their schemas, and a declared key that matches a pattern needs only
  its own: both are recorded as loose (``SchemaConverter.loose``).
* ``minProperties``/``maxProperties`` are enforced by counting members along the sequence.
* ``dependentRequired``, ``dependentSchemas`` and ``dependencies`` are enforced by compiling one
  object per case (the trigger key absent, or present with what it needs), up to 3 triggers.
* ``properties: {"k": false}`` forbids ``k`` (it is never written, and no extra key is ``k``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...errors import UnsupportedSchemaError
from ..gbnf import GbnfBuilder
from .converter_protocol import Converter
from .keywords import EmptySchemaError, ptr
from .object_keys import key_other_than
from .regex import regex_to_gbnf

__all__ = ["object_expr", "props_sequence"]

_MAX_TRIGGERS = 3
_MAX_COUNT = 32
MAX_ANY_ORDER = 5
"""The most properties an object takes in any order (``props_sequence``): one rule per subset,
so 32 at five, per layout."""


def object_expr(
    conv: Converter,
    schema: Mapping[str, Any],
    pointer: str,
    hint: str,
    *,
    null_keys: frozenset[str] = frozenset(),
) -> str:
    """``null_keys``: optional keys that also take ``null`` (a call's top-level arguments,
    ``grammar/optional_null.py``)."""
    variants = _dependency_variants(conv, schema, pointer)
    if variants is not None:
        alts = [conv.visit(v, pointer, hint=f"{hint}-case{i}") for i, v in enumerate(variants)]
        if not alts:
            raise UnsupportedSchemaError(
                f"the dependencies at {pointer!r} admit no object", pointer=pointer
            )
        return " | ".join(dict.fromkeys(alts))
    c, b = conv.codec, conv.b
    props, required, addl, patterns = _members(conv, schema, pointer)
    colon = c.colon(b)
    opener, closer = c.brackets("object")
    items = []
    for k, sub in props.items():
        if sub is False:
            if k in required:
                raise UnsupportedSchemaError(
                    f"key {k!r} at {pointer!r} is both required and forbidden", pointer=pointer
                )
            continue
        at = ptr(pointer, "properties", k) if k in (schema.get("properties") or {}) else pointer
        try:
            value = conv.visit(sub, at, hint=f"{hint}-{k}")
        except EmptySchemaError:
            if k in required:
                raise
            continue  # no value fits: the key is forbidden (and still no extra key)
        if k in null_keys and k not in required:
            value = b.add(f"{hint}-{k}-or-null", f"{value} | {c.scalar(b, 'null')}")
        kv = b.add(f"{hint}-{k}-kv", f"{c.key(k)} {colon} {value}")
        items.append((kv, k in required))
    extra = _extra_member(conv, pointer, hint, list(props), addl, patterns)
    lo, hi = _count_bounds(conv, schema, pointer, items, extra)
    alts = []
    for i, (opening, sep, closing) in enumerate(c.bracketings(b)):
        at = hint if i == 0 else f"{hint}-l{i}"  # one member sequence per layout
        if lo == 0 and hi is None:
            tail_rest = f"({sep} {extra})*" if extra else ""
            tail_first = f"({extra} ({sep} {extra})*)?" if extra else ""
            seq = props_sequence(
                b,
                items,
                sep,
                hint=at,
                tail_rest=tail_rest,
                tail_first=tail_first,
                any_order=c.any_order,
            )
        else:
            seq = _counted_sequence(b, items, sep, extra, lo, hi, hint=at)
        alts.append(f"{opener} {opening} {seq} {closing} {closer}")
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def _members(
    conv: Converter, schema: Mapping[str, Any], pointer: str
) -> tuple[dict[str, Any], list[str], Any, dict[str, Any]]:
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        raise UnsupportedSchemaError(
            f"'properties' at {pointer!r} must be an object", pointer=ptr(pointer, "properties")
        )
    patterns = schema.get("patternProperties") or {}
    if not isinstance(patterns, Mapping):
        raise UnsupportedSchemaError(
            f"'patternProperties' at {pointer!r} must be an object",
            pointer=ptr(pointer, "patternProperties"),
        )
    required = [r for r in (schema.get("required") or []) if isinstance(r, str)]
    declares = "properties" in schema or "patternProperties" in schema
    addl = schema.get("additionalProperties", None if declares else True)
    props = dict(props)
    for pat in patterns:
        for k in props:
            if _search(pat, k):
                conv.loosen(
                    ptr(pointer, "patternProperties", pat),
                    f"declared key {k!r} also matches this pattern: only its own schema applies",
                )
    for r in required:
        if r in props:
            continue
        matching = [s for p, s in patterns.items() if _search(p, r)]
        if matching:
            props[r] = matching[0] if len(matching) == 1 else {"allOf": matching}
        elif addl is None or addl is True:
            props[r] = True  # JSON Schema's default: any value
        elif addl is False:
            raise UnsupportedSchemaError(
                f"required key {r!r} at {ptr(pointer, 'required')!r} is neither in "
                "'properties' nor allowed by 'additionalProperties': false; declare it",
                pointer=ptr(pointer, "required"),
            )
        else:
            props[r] = addl
    return props, required, addl, dict(patterns)


def _search(pattern: Any, key: str) -> bool:
    try:
        return isinstance(pattern, str) and re.search(pattern, key) is not None
    except re.error:
        return False


def _extra_member(
    conv: Converter,
    pointer: str,
    hint: str,
    declared: list[str],
    addl: Any,
    patterns: Mapping[str, Any],
) -> str:
    """A rule for one extra ``key: value`` member, or ``""`` when none is allowed."""
    c, b = conv.codec, conv.b
    colon = c.colon(b)
    alts = []
    for i, (pat, sub) in enumerate(patterns.items()):
        at = ptr(pointer, "patternProperties", pat)
        if not isinstance(pat, str):
            continue
        content = regex_to_gbnf(pat, pointer=at, any_char=c.char(b), text=conv.content_text)
        key = c.quote_key(content)
        value = conv.visit(sub, at, hint=f"{hint}-pat{i}")
        alts.append(f"{key} {colon} {value}")
    if len(patterns) > 1:
        conv.loosen(
            ptr(pointer, "patternProperties"),
            "a key matching several patterns needs only one of their schemas",
        )
    if addl not in (None, False):
        if patterns:
            conv.loosen(
                ptr(pointer, "additionalProperties"),
                "an extra key that matches a pattern may take the additionalProperties schema",
            )
        value = conv.visit(
            addl if isinstance(addl, (Mapping, bool)) else True,
            ptr(pointer, "additionalProperties"),
            hint=f"{hint}-extra",
        )
        alts.append(f"{key_other_than(c, b, declared)} {colon} {value}")
    if not alts:
        return ""
    return b.add(f"{hint}-extra-kv", " | ".join(alts))


def _count_bounds(
    conv: Converter,
    schema: Mapping[str, Any],
    pointer: str,
    items: list[tuple[str, bool]],
    extra: str,
) -> tuple[int, int | None]:
    lo = schema.get("minProperties", 0)
    hi = schema.get("maxProperties")
    lo = lo if isinstance(lo, int) and not isinstance(lo, bool) else 0
    hi = hi if isinstance(hi, int) and not isinstance(hi, bool) else None
    n_req = sum(req for _, req in items)
    if lo <= n_req:
        lo = 0  # the required keys already make the minimum
    if hi is not None and not extra and hi >= len(items):
        hi = None  # never more members than that anyway
    if hi is not None and hi < n_req:
        raise UnsupportedSchemaError(
            f"'maxProperties' at {pointer!r} is below the {n_req} required keys",
            pointer=ptr(pointer, "maxProperties"),
        )
    cap = hi if hi is not None else lo
    if cap > _MAX_COUNT:
        conv.loosen(pointer, f"minProperties/maxProperties over {_MAX_COUNT} are not counted")
        return 0, None
    return lo, hi


def _counted_sequence(
    b: GbnfBuilder,
    items: list[tuple[str, bool]],
    sep: str,
    extra: str,
    lo: int,
    hi: int | None,
    *,
    hint: str,
) -> str:
    """Like ``props_sequence`` with between ``lo`` and ``hi`` members in all (extras included):
    one rule per (position, members so far), counts above the cap being alike."""
    cap = hi if hi is not None else lo
    n_items = len(items)
    req_after = [sum(r for _, r in items[i:]) for i in range(n_items + 1)]
    memo: dict[tuple[int, int], str | None] = {}

    def tail(n: int) -> str | None:
        need = max(0, lo - n)
        room = None if hi is None else hi - n
        if not extra or room == 0:
            return '""' if need == 0 else None
        if n == 0:
            first_hi = None if room is None else room - 1
            more = _repeat(f"({sep} {extra})", max(0, need - 1), first_hi)
            return f"({extra} {more})?" if need == 0 else f"{extra} {more}"
        return _repeat(f"({sep} {extra})", need, room)

    def state(i: int, n: int) -> str | None:
        key = (i, min(n, cap) if hi is None else n)
        if key in memo:
            return memo[key]
        if hi is not None and n + req_after[i] > hi:
            memo[key] = None
            return None
        if i == n_items:
            body = tail(n)
        else:
            kv, req = items[i]
            alts = []
            nxt = state(i + 1, n + 1) if hi is None or n + 1 <= hi else None
            if nxt is not None:
                alts.append(f"{sep} {kv} {nxt}" if n else f"{kv} {nxt}")
            if not req:
                skip = state(i + 1, n)
                if skip is not None:
                    alts.append(skip)
            body = " | ".join(alts) if alts else None
        memo[key] = None if body is None else b.add(f"{hint}-n{i}-{n}", body)
        return memo[key]

    first = state(0, 0)
    if first is None:
        raise UnsupportedSchemaError(f"no object satisfies the member counts of {hint!r}")
    return first


def _repeat(x: str, lo: int, hi: int | None) -> str:
    if hi is not None and hi <= 0:
        return '""'
    if hi is None:
        return f"{x}{{{lo},}}" if lo else f"{x}*"
    return f"{x}{{{lo},{hi}}}"


def _dependency_variants(
    conv: Converter, schema: Mapping[str, Any], pointer: str
) -> list[dict[str, Any]] | None:
    """The schema split into dependency-free cases, or None when it has no dependencies."""
    deps: dict[str, Any] = {}
    for kw in ("dependencies", "dependentRequired", "dependentSchemas"):
        value = schema.get(kw)
        if isinstance(value, Mapping):
            deps.update(value)
    if not deps:
        return None
    base = {
        k: v
        for k, v in schema.items()
        if k not in ("dependencies", "dependentRequired", "dependentSchemas")
    }
    base["type"] = "object"
    if len(deps) > _MAX_TRIGGERS:
        conv.loosen(pointer, f"more than {_MAX_TRIGGERS} dependencies are not enforced")
        return [base]
    cases = [base]
    for key, need in deps.items():
        nxt = []
        for case in cases:
            required = list(case.get("required") or [])
            if key not in required:
                props = dict(case.get("properties") or {})
                props[key] = False
                nxt.append({**case, "properties": props})
            if isinstance(need, list):
                extra = [k for k in need if isinstance(k, str)]
                nxt.append({**case, "required": list(dict.fromkeys([*required, key, *extra]))})
            elif need is not False:
                present = {**case, "required": list(dict.fromkeys([*required, key]))}
                nxt.append(present if need is True else {"allOf": [present, need]})
        cases = nxt
    return cases


def props_sequence(
    b: GbnfBuilder,
    items: list[tuple[str, bool]],
    sep: str,
    *,
    hint: str,
    tail_rest: str = "",
    tail_first: str = "",
    any_order: bool = False,
) -> str:
    """Key/value items, ``(rule, required)``, joined by ``sep``; optional ones may be left out.
    ``tail_*`` continue the sequence after / instead of the declared items.

    In the declared order (linear size), or with ``any_order`` in whatever order the model
    writes them, each at most once: one rule per set of items written so far, so only for up to
    ``MAX_ANY_ORDER`` items (the declared order beyond)."""
    if any_order and 1 < len(items) <= MAX_ANY_ORDER:
        return _any_order_sequence(
            b, items, sep, hint=hint, tail_rest=tail_rest, tail_first=tail_first
        )
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


def _any_order_sequence(
    b: GbnfBuilder,
    items: list[tuple[str, bool]],
    sep: str,
    *,
    hint: str,
    tail_rest: str,
    tail_first: str,
) -> str:
    required = sum(1 << i for i, (_, req) in enumerate(items) if req)
    memo: dict[int, str] = {}

    def after(written: int) -> str:
        """The rest of the sequence once the items in the bit set ``written`` are written."""
        if written not in memo:
            alts = [
                f"{sep} {kv} {after(written | 1 << i)}"
                for i, (kv, _) in enumerate(items)
                if not written >> i & 1
            ]
            if written & required == required:
                alts.append(tail_rest or '""')
            memo[written] = b.add(f"{hint}-set{written}", " | ".join(alts))
        return memo[written]

    alts = [f"{kv} {after(1 << i)}" for i, (kv, _) in enumerate(items)]
    if not required:
        alts.append(tail_first or '""')
    return b.add(f"{hint}-anyorder", " | ".join(alts))
