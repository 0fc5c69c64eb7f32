"""EDN (Clojure's data notation): ``{:city "Paris" :tags ["a" "b"] :n nil}``; keys as keywords
where they can be (else strings), items and entries apart by a space (commas are whitespace:
``pr-str``'s ``", "`` between entries reads too)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import Syntax, backslash_form

__all__ = ["EdnCodec"]


class EdnCodec(ValueCodec):
    """A map as Clojure's ``pr-str`` writes it."""

    name: ClassVar[str] = "edn"

    def syntax(self, quote: str) -> Syntax:
        return _SYNTAX


_SYNTAX = Syntax(
    strings=(backslash_form('"'),),
    key_sep=" ",
    member_sep=" ",
    keys="ident-or-quoted",
    bare_key=r"[A-Za-z_][A-Za-z0-9_-]*",
    bare_key_grammar="[A-Za-z_] [A-Za-z0-9_-]*",
    key_prefix=":",
    null="nil",
    optional_commas=True,
)
