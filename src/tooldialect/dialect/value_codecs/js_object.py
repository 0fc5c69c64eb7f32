"""JavaScript object literals: ``{city: 'Paris', tags: ['a', 'b'], n: null}``; keys bare where
they are identifiers, strings in single quotes (or double, ``PythonBody.string_quote``)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import Syntax, backslash_form

__all__ = ["JsObjectCodec"]


class JsObjectCodec(ValueCodec):
    """An object literal as a JavaScript source writes it."""

    name: ClassVar[str] = "js-object"
    quotes: ClassVar[tuple[str, ...]] = ("'", '"')

    def syntax(self, quote: str) -> Syntax:
        first = self.quote_for(quote)
        other = '"' if first == "'" else "'"
        return Syntax(
            strings=(backslash_form(first), backslash_form(other)),
            keys="ident-or-quoted",
            words={"undefined": None},
        )
