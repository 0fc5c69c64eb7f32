"""Lua table constructors: ``{city = "Paris", tags = {"a", "b"}, n = nil}``. Objects and arrays
share the braces (``{}`` reads as an object; the parser retypes it by the schema); keys that are
no identifier, or are Lua keywords, are written ``["a b"] = 1``; control characters as
``\\ddd``."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import Syntax, backslash_form

__all__ = ["LuaTableCodec"]

_KEYWORDS = frozenset(
    [
        "and",
        "break",
        "do",
        "else",
        "elseif",
        "end",
        "false",
        "for",
        "function",
        "goto",
        "if",
        "in",
        "local",
        "nil",
        "not",
        "or",
        "repeat",
        "return",
        "then",
        "true",
        "until",
        "while",
    ]
)


def _decimal(code: int) -> str:
    return f"\\{code:03d}"


class LuaTableCodec(ValueCodec):
    """A Lua table as a Lua source writes it."""

    name: ClassVar[str] = "lua-table"
    quotes: ClassVar[tuple[str, ...]] = ('"', "'")

    def syntax(self, quote: str) -> Syntax:
        first = self.quote_for(quote)
        other = "'" if first == '"' else '"'
        forms = tuple(
            backslash_form(q, control=_decimal, decimal_escapes=True) for q in (first, other)
        )
        return Syntax(
            strings=forms,
            array_open="{",
            array_close="}",
            key_sep=" = ",
            keys="ident-or-quoted",
            reserved_keys=_KEYWORDS,
            quoted_key=("[", "]"),
            null="nil",
        )
