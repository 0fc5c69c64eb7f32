"""PHP arrays: ``['city' => 'Paris', 'tags' => ['a', 'b'], 'n' => null]``. Objects and arrays
share the brackets (``[]`` reads as an array; the parser retypes it by the schema); strings in
single quotes, where only ``\\'`` and ``\\\\`` escape (or double, ``\\xHH`` for controls)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .ruby_hash import single_quoted
from .syntax import Syntax, backslash_form

__all__ = ["PhpArrayCodec"]


def _hex(code: int) -> str:
    return f"\\x{code:02x}"


class PhpArrayCodec(ValueCodec):
    """A short array literal as a PHP source writes it."""

    name: ClassVar[str] = "php-array"
    quotes: ClassVar[tuple[str, ...]] = ("'", '"')

    def syntax(self, quote: str) -> Syntax:
        forms = (single_quoted(), backslash_form('"', control=_hex))
        if self.quote_for(quote) == '"':
            forms = forms[::-1]
        return Syntax(
            strings=forms,
            object_open="[",
            object_close="]",
            key_sep=" => ",
            empty="array",
        )
