"""Numbers in a JSON Schema grammar: integers in exact decimal ranges, bounded numbers.

* Integers honour ``minimum``/``maximum``/``exclusive*`` exactly with digit-range rules (linear in
  the number of digits).
* Numbers with whole-number bounds are exact too: the integer part takes a digit range and the
  fraction is free, zero or non-zero as the bound at each end needs. A bounded number is written
  without an exponent. A bound with a fraction (``minimum: 0.5``) is widened to the whole numbers
  around it and recorded as loose (``SchemaConverter.loose``).
* ``multipleOf``: on integers, a whole ``k`` is enforced by a remainder automaton (k <= 50,
  unbounded or sign-bounded) or by listing the multiples (at most 64 in the range); on numbers,
  ``k = 10^-d`` limits the fraction to ``d`` digits and a whole ``k`` makes the value an integer
  multiple. Other cases are loose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import UnsupportedSchemaError
from ..gbnf import GbnfBuilder, literal
from .keywords import ptr

__all__ = ["FRAC_EXP", "INT", "integer_expr", "number_expr", "repeat", "uint_range"]

INT = '"-"? ("0" | [1-9] [0-9]{0,18})'
FRAC_EXP = '("." [0-9]{1,20})? ([eE] [-+]? [0-9]{1,3})?'


Loosen = Callable[[str, str], None]
_MAX_DFA = 50
_MAX_LISTED = 64


def integer_expr(schema: Mapping[str, Any], pointer: str, *, b: GbnfBuilder, loosen: Loosen) -> str:
    """Decimal integers within the schema's bounds (and multiples of its ``multipleOf``)."""
    lo, hi = _bounds(schema, pointer, integer=True)
    if lo is not None and hi is not None and lo > hi:
        raise UnsupportedSchemaError(
            f"integer bounds at {pointer!r} admit no value ({lo} > {hi})", pointer=pointer
        )
    k = _whole_multiple(schema, pointer, loosen)
    if k is not None:
        return _multiples(b, k, lo, hi, pointer, loosen)
    if lo is None and hi is None:
        return f"({INT})"
    if lo is not None and lo >= 0:
        return f"({uint_range(lo, hi)})"
    if hi is not None and hi < 0:
        return f'"-" ({uint_range(-hi, None if lo is None else -lo)})'
    neg = '"-" [1-9] [0-9]{0,18}' if lo is None else f'"-" ({uint_range(1, -lo)})'
    return f"{neg} | {uint_range(0, hi)}"


def _whole_multiple(schema: Mapping[str, Any], pointer: str, loosen: Loosen) -> int | None:
    k = schema.get("multipleOf")
    if k is None or isinstance(k, bool) or not isinstance(k, (int, float)) or k <= 0:
        return None
    if float(k).is_integer():
        return int(k) if k > 1 else None
    if (1 / k).is_integer():
        return None  # every integer is a multiple of 1/n
    loosen(ptr(pointer, "multipleOf"), f"multipleOf {k!r} on integers is not enforced")
    return None


def _multiples(
    b: GbnfBuilder, k: int, lo: int | None, hi: int | None, pointer: str, loosen: Loosen
) -> str:
    if lo is not None and hi is not None and (hi - lo) // k <= _MAX_LISTED:
        first = -(-lo // k) * k
        values = list(range(first, hi + 1, k))
        if not values:
            raise UnsupportedSchemaError(
                f"no multiple of {k} lies within the bounds at {pointer!r}", pointer=pointer
            )
        return " | ".join(f'"{v}"' for v in values)
    if k <= _MAX_DFA and (lo is None or lo in (0, 1)) and hi is None:
        pos = _multiple_dfa(b, k)
        if lo is None:
            return f'"0" | "-"? {pos}'
        return pos if lo == 1 else f'"0" | {pos}'
    loosen(ptr(pointer, "multipleOf"), f"multipleOf {k} with these bounds is not enforced")
    return integer_expr({"minimum": lo, "maximum": hi}, pointer, b=b, loosen=loosen)


def _multiple_dfa(b: GbnfBuilder, k: int) -> str:
    """Positive multiples of ``k`` (no leading zero): a remainder automaton over the digits."""
    key = ("multiple-of", k)
    if key in b.memo:
        return b.memo[key]
    names = [b.name(f"mult{k}-r{r}") for r in range(k)]

    def moves(r: int, digits: str) -> list[str]:
        by_next: dict[int, str] = {}
        for d in digits:
            n = (10 * r + int(d)) % k
            by_next[n] = by_next.get(n, "") + d
        return [f"[{ds}] {names[n]}" for n, ds in sorted(by_next.items())]

    for r in range(k):
        b.define(names[r], " | ".join(([] if r else ['""']) + moves(r, "0123456789")))
    b.memo[key] = b.add(f"mult{k}", " | ".join(moves(0, "123456789")))
    return b.memo[key]


def number_expr(schema: Mapping[str, Any], pointer: str, *, b: GbnfBuilder, loosen: Loosen) -> str:
    """JSON numbers within the schema's bounds (see the module's docstring)."""
    k = schema.get("multipleOf")
    digits = 20
    if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0:
        if float(k).is_integer():
            return integer_expr(schema, pointer, b=b, loosen=loosen)
        d = -math.log10(k)
        if abs(d - round(d)) < 1e-9 and 0 < round(d) <= 20:
            digits = round(d)
        else:
            loosen(ptr(pointer, "multipleOf"), f"multipleOf {k!r} on numbers is not enforced")
    lo, lo_x, hi, hi_x = _number_bounds(schema, pointer, loosen)
    frac = f'("." [0-9]{{1,{digits}}})?'
    if lo is None and hi is None:
        return f"{INT} {frac if digits < 20 else FRAC_EXP}"
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_x or hi_x))):
        raise UnsupportedSchemaError(
            f"number bounds at {pointer!r} admit no value", pointer=pointer
        )
    unsigned = '("0" | [1-9] [0-9]{0,18})'
    exp = frac if digits < 20 else FRAC_EXP
    if lo == 0 and not lo_x and hi is None:  # a sign bound: exponents cannot cross it
        return f"{unsigned} {exp}"
    if hi == 0 and not hi_x and lo is None:
        return f'"-" {unsigned} {exp} | "0" {frac}'
    alts = []
    if lo is None or lo < 0:  # negatives: -u with u in (max(0, -hi), -lo)
        u_lo, u_lo_x = (-hi, hi_x) if hi is not None and hi < 0 else (0, True)
        u_hi, u_hi_x = (None, False) if lo is None else (-lo, lo_x)
        alts.append(f'"-" ({_unsigned(u_lo, u_lo_x, u_hi, u_hi_x, digits)})')
    if hi is None or hi > 0 or (hi == 0 and not hi_x):
        p_lo, p_lo_x = (lo, lo_x) if lo is not None and lo >= 0 else (0, False)
        alts.append(f"({_unsigned(p_lo, p_lo_x, hi, hi_x, digits)})")
    return " | ".join(alts)


def _unsigned(lo: int, lo_x: bool, hi: int | None, hi_x: bool, digits: int) -> str:
    """Unsigned decimals ``n.f`` with ``lo <(=) n.f <(=) hi`` (whole-number bounds)."""
    any_frac = f'("." [0-9]{{1,{digits}}})?'
    zero_frac = f'("." "0"{{1,{digits}}})?'
    nonzero = " | ".join(f'"0"{{{i}}} [1-9] [0-9]{{0,{digits - 1 - i}}}' for i in range(digits))
    pieces = []
    start = lo + 1 if lo_x else lo
    end = None if hi is None else hi - 1
    if end is None or start <= end:
        pieces.append(f"({uint_range(start, end)}) {any_frac}")
    if lo_x and (hi is None or lo < hi):
        pieces.append(f'"{lo}" "." ({nonzero})')
    if hi is not None and not hi_x and (hi > lo or not lo_x):
        pieces.append(f'"{hi}" {zero_frac}')
    return " | ".join(pieces) or '""'


def _number_bounds(
    schema: Mapping[str, Any], pointer: str, loosen: Loosen
) -> tuple[int | None, bool, int | None, bool]:
    """Whole-number bounds with their exclusivity; fractional ones widened (and loose)."""
    lo: int | None = None
    hi: int | None = None
    lo_x = hi_x = False
    for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        v = schema.get(key)
        if v is None or isinstance(v, bool):
            continue
        if not isinstance(v, (int, float)):
            raise UnsupportedSchemaError(
                f"{key!r} at {pointer!r} must be a number, got {v!r}", pointer=ptr(pointer, key)
            )
        flag = "exclusive" + key[0].upper() + key[1:]
        excl = key.startswith("exclusive") or schema.get(flag) is True
        whole = float(v).is_integer()
        if not whole:
            loosen(ptr(pointer, key), f"{key} {v!r} is widened to a whole number")
        if key.endswith("inimum"):
            bound = math.floor(v) if not whole else int(v)
            if lo is None or bound > lo or (bound == lo and excl):
                lo, lo_x = bound, excl and whole
        else:
            bound = math.ceil(v) if not whole else int(v)
            if hi is None or bound < hi or (bound == hi and excl):
                hi, hi_x = bound, excl and whole
    return lo, lo_x, hi, hi_x


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
