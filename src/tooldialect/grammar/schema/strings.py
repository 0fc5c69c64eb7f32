"""Strings in a JSON Schema grammar: lengths, ``format`` and ``pattern``.

* ``format`` is enforced for ``date``, ``time`` and ``date-time`` (RFC 3339: days per month,
  29 February in leap years only; the offset, ``Z`` or ``+hh:mm``, is mandatory; ``T`` or a
  space between date and time), ``uuid``, ``email`` (a dot-atom local part, ``@``, domain
  labels or an IPv4 literal in brackets), ``ipv4``, ``hostname`` and ``uri`` (``scheme:`` then
  characters a URI may hold). Other formats are loose (``SchemaConverter.loose``): any string,
  checked after parsing where the validator knows the format.
* ``pattern`` compiles through ``regex.regex_to_gbnf``. A string schema with a ``pattern`` or a
  ``format`` *and* length bounds enforces the pattern/format; the lengths are then loose. A
  format no string within the bounds can have (``uuid``, 36 characters, with ``maxLength: 10``)
  is the loose one instead: the lengths are enforced (JSON Schema's ``format`` is an annotation
  unless asked otherwise, so such a value is valid, and the format's would not be).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...errors import UnsupportedSchemaError
from .keywords import ptr
from .numeric import repeat
from .regex import regex_to_gbnf

__all__ = ["FORMATS", "FORMAT_LENGTHS", "string_content"]

_DAY28 = '("0" [1-9] | "1" [0-9] | "2" [0-8])'
_MONTH_DAY = (
    f'("0" [13578] | "1" [02]) "-" ({_DAY28} | "29" | "30" | "31") | '
    f'("0" [469] | "11") "-" ({_DAY28} | "29" | "30") | "02-" {_DAY28}'
)
_LEAP_YEAR = (  # divisible by 4, centuries only when divisible by 400
    '[0-9] [0-9] ("0" [48] | [2468] [048] | [13579] [26]) | ([02468] [048] | [13579] [26]) "00"'
)
_DATE = f'([0-9]{{4}} "-" ({_MONTH_DAY}) | ({_LEAP_YEAR}) "-02-29")'
_OFFSET = '("Z" | "z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])'
_TIME = '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") ("." [0-9]{1,9})?'
_OCTET = '("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])'
_IPV4 = f'{_OCTET} "." {_OCTET} "." {_OCTET} "." {_OCTET}'
_LABEL = "[a-zA-Z0-9] ([a-zA-Z0-9-]{0,61} [a-zA-Z0-9])?"
_ATOM = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+"
FORMATS = {
    "date": _DATE,
    "time": f"{_TIME} {_OFFSET}",
    "date-time": f"({_DATE}) [Tt ] {_TIME} {_OFFSET}",
    "uuid": (
        '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" '
        "[0-9a-fA-F]{12}"
    ),
    "email": f'{_ATOM} ("." {_ATOM})* "@" ({_LABEL} ("." {_LABEL})* | "[" {_IPV4} "]")',
    "ipv4": _IPV4,
    "hostname": f'{_LABEL} ("." {_LABEL})*',
    # RFC 3986 characters only (no space, quote, backslash, angle brackets or braces)
    "uri": '[a-zA-Z] [a-zA-Z0-9+.-]* ":" [a-zA-Z0-9._~:/?#@!$&\'()*+,;=%-]*',
}
"""GBNF for each enforced format; the characters are all plain in every value syntax."""
FORMAT_LENGTHS: dict[str, tuple[int, int | None]] = {
    "date": (10, 10),
    "time": (9, 24),  # hh:mm:ss, up to 9 fraction digits, Z or +hh:mm
    "date-time": (20, 35),
    "uuid": (36, 36),
    "email": (3, None),
    "ipv4": (7, 15),
    "hostname": (1, None),
    "uri": (2, None),
}
"""The shortest and longest string each of ``FORMATS`` matches (``None``: unbounded)."""


def _fits(fmt: str, lo: int, hi: int | None) -> bool:
    """Whether some string of format ``fmt`` has a length in ``[lo, hi]``."""
    f_lo, f_hi = FORMAT_LENGTHS[fmt]
    return (hi is None or f_lo <= hi) and (f_hi is None or lo <= f_hi)


def string_content(
    schema: Mapping[str, Any],
    pointer: str,
    *,
    char: str,
    text: Callable[[str], str],
    loosen: Callable[[str, str], None],
) -> str | None:
    """Expression for constrained string content, or None for any string. ``char`` is one
    content character; ``text`` spells literal content as the value syntax writes it."""
    fmt = schema.get("format")
    lengths = "minLength" in schema or "maxLength" in schema
    if "pattern" in schema:
        pat = schema["pattern"]
        if not isinstance(pat, str):
            raise UnsupportedSchemaError(
                f"'pattern' at {pointer!r} must be a string", pointer=ptr(pointer, "pattern")
            )
        if fmt is not None:
            loosen(ptr(pointer, "format"), f"format {fmt!r} beside a pattern is not enforced")
        if lengths:
            loosen(pointer, "minLength/maxLength beside a pattern are not enforced")
        return regex_to_gbnf(pat, pointer=ptr(pointer, "pattern"), any_char=char, text=text)
    lo = int(schema.get("minLength", 0))
    hi = None if schema.get("maxLength") is None else int(schema["maxLength"])
    if isinstance(fmt, str) and fmt in FORMATS and _fits(fmt, lo, hi):
        if lengths:
            loosen(pointer, f"minLength/maxLength beside format {fmt!r} are not enforced")
        return f"({FORMATS[fmt]})"
    if fmt is not None:
        why = "no string within minLength/maxLength has it" if fmt in FORMATS else "by the grammar"
        loosen(ptr(pointer, "format"), f"format {fmt!r} is not enforced {why}")
    if lo == 0 and hi is None:
        return None
    return repeat(char, lo, hi)
