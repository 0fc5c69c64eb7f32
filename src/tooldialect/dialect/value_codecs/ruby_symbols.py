"""Ruby hashes with symbol keys: ``{:city => "Paris", :tags => ["a", "b"], :n => nil}``; a key
that is no identifier is a string (``"a b" => 1``)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .ruby_hash import RubyHashCodec
from .syntax import Syntax

__all__ = ["RubySymbolsCodec"]


class RubySymbolsCodec(ValueCodec):
    """A hash literal whose keys are symbols, as Ruby sources write one."""

    name: ClassVar[str] = "ruby-symbols"
    quotes: ClassVar[tuple[str, ...]] = RubyHashCodec.quotes

    def syntax(self, quote: str) -> Syntax:
        strings = RubyHashCodec().syntax(quote).strings
        return Syntax(
            strings=strings, key_sep=" => ", keys="ident-or-quoted", key_prefix=":", null="nil"
        )
