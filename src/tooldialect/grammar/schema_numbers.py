"""Numbers in a JSON Schema grammar: integers in exact decimal ranges, bounded numbers.

Integers honour ``minimum``/``maximum``/``exclusive*`` exactly with digit-range rules (linear in
the number of digits). Numbers honour the sign those bounds imply (``minimum >= 0`` forbids ``-``,
``maximum < 0`` requires it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import UnsupportedSchemaError
from .gbnf import literal
from .schema_checks import ptr

__all__ = ["FRAC_EXP", "INT", "integer_expr", "number_expr", "repeat", "uint_range"]

INT = '"-"? ("0" | [1-9] [0-9]{0,18})'
FRAC_EXP = '("." [0-9]{1,20})? ([eE] [-+]? [0-9]{1,3})?'


def integer_expr(schema: Mapping[str, Any], pointer: str) -> str:
    """Decimal integers within the schema's bounds."""
    lo, hi = _bounds(schema, pointer, integer=True)
    if lo is None and hi is None:
        return f"({INT})"
    if lo is not None and hi is not None and lo > hi:
        raise UnsupportedSchemaError(
            f"integer bounds at {pointer!r} admit no value ({lo} > {hi})", pointer=pointer
        )
    if lo is not None and lo >= 0:
        return f"({uint_range(lo, hi)})"
    if hi is not None and hi < 0:
        return f'"-" ({uint_range(-hi, None if lo is None else -lo)})'
    neg = '"-" [1-9] [0-9]{0,18}' if lo is None else f'"-" ({uint_range(1, -lo)})'
    return f"{neg} | {uint_range(0, hi)}"


def number_expr(schema: Mapping[str, Any], pointer: str) -> str:
    """JSON numbers with the sign the schema's bounds imply."""
    lo, hi = _bounds(schema, pointer, integer=False)
    unsigned = '("0" | [1-9] [0-9]{0,18})'
    if lo is not None and lo >= 0:
        return f"{unsigned} {FRAC_EXP}"
    if hi is not None and hi < 0:
        return f'"-" {unsigned} {FRAC_EXP}'
    return f"{INT} {FRAC_EXP}"


def _bounds(schema: Mapping[str, Any], pointer: str, *, integer: bool) -> tuple[Any, Any]:
    lo = hi = None
    for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        v = schema.get(key)
        if v is None or isinstance(v, bool):
            continue  # draft-4 boolean exclusive* flags are handled below
        if not isinstance(v, (int, float)):
            raise UnsupportedSchemaError(
                f"{key!r} at {pointer!r} must be a number, got {v!r}", pointer=ptr(pointer, key)
            )
        excl = (
            key.startswith("exclusive")
            or schema.get("exclusive" + key[0].upper() + key[1:]) is True
        )
        if key.endswith("inimum"):
            b = (math.floor(v) + 1 if excl else math.ceil(v)) if integer else v
            lo = b if lo is None else max(lo, b)
        else:
            b = (math.ceil(v) - 1 if excl else math.floor(v)) if integer else v
            hi = b if hi is None else min(hi, b)
    if not integer and lo is not None and schema.get("exclusiveMinimum") is not None and lo == 0:
        lo = 0  # sign constraint only
    return lo, hi


def repeat(x: str, lo: int, hi: int | None) -> str:
    """``x`` repeated ``lo`` to ``hi`` times (``None``: unbounded)."""
    if hi is None:
        return f"{x}{{{lo},}}" if lo > 1 else f"{x}+" if lo == 1 else f"{x}*"
    if hi <= 0:
        return '""'
    return f"{x}{{{lo},{hi}}}" if lo != hi else f"{x}{{{lo}}}"


def _same_len(a: str, z: str) -> str:
    if len(a) == 1:
        return literal(a) if a == z else f"[{a}-{z}]"
    if a[0] == z[0]:
        return f"{literal(a[0])} ({_same_len(a[1:], z[1:])})"
    k = len(a) - 1
    if a[1:] == "0" * k and z[1:] == "9" * k:
        return f"[{a[0]}-{z[0]}] [0-9]{{{k}}}"
    alts = [f"{literal(a[0])} ({_same_len(a[1:], '9' * k)})"]
    if int(a[0]) + 1 <= int(z[0]) - 1:
        alts.append(f"[{int(a[0]) + 1}-{int(z[0]) - 1}] [0-9]{{{k}}}")
    alts.append(f"{literal(z[0])} ({_same_len('0' * k, z[1:])})")
    return " | ".join(alts)


def uint_range(lo: int, hi: int | None) -> str:
    """Decimal integers (no sign, no leading zeros) in ``[lo, hi]``; ``hi=None`` is unbounded."""
    top = hi if hi is not None else 10 ** len(str(lo)) - 1
    alts = []
    for length in range(len(str(lo)), len(str(top)) + 1):
        a = max(lo, 10 ** (length - 1) if length > 1 else 0)
        z = min(top, 10**length - 1)
        if a <= z:
            alts.append(_same_len(str(a), str(z)))
    if hi is None:
        d = len(str(lo))
        alts.append(f"[1-9] [0-9]{{{d},18}}")
    return " | ".join(f"({a})" for a in alts)
