"""Strings in a JSON Schema grammar: lengths, ``format`` and ``pattern``.

``format`` date, time, date-time and uuid are enforced (other formats are annotations);
``pattern`` compiles through ``regex.regex_to_gbnf``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UnsupportedSchemaError
from .regex import regex_to_gbnf
from .schema_checks import ptr
from .schema_numbers import repeat

__all__ = ["FORMATS", "string_content"]

FORMATS = {
    "date": '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
    "time": (
        '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? '
        '("Z" | "z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])?'
    ),
    "uuid": (
        '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" '
        "[0-9a-fA-F]{12}"
    ),
}
FORMATS["date-time"] = f"({FORMATS['date']}) [Tt ] ({FORMATS['time']})"


def string_content(
    schema: Mapping[str, Any], pointer: str, *, char: str, text: Callable[[str], str]
) -> str | None:
    """Expression for constrained string content, or None for any string. ``char`` is one
    content character; ``text`` spells literal content as the value syntax writes it."""
    if "pattern" in schema:
        pat = schema["pattern"]
        if not isinstance(pat, str):
            raise UnsupportedSchemaError(
                f"'pattern' at {pointer!r} must be a string", pointer=ptr(pointer, "pattern")
            )
        return regex_to_gbnf(pat, pointer=ptr(pointer, "pattern"), any_char=char, text=text)
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        return f"({FORMATS[fmt]})"
    lo = int(schema.get("minLength", 0))
    hi = schema.get("maxLength")
    if lo == 0 and hi is None:
        return None
    return repeat(char, lo, None if hi is None else int(hi))
