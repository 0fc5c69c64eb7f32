"""Ruby hashes: ``{"city" => "Paris", "tags" => ["a", "b"], "n" => nil}``, string keys,
double-quoted strings (or single-quoted, where only ``\\'`` and ``\\\\`` are escapes)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import StringForm, Syntax, backslash_form

__all__ = ["RubyHashCodec", "single_quoted"]


def single_quoted() -> StringForm:
    """A single-quoted string where only ``\\'`` and ``\\\\`` escape (Ruby's, PHP's)."""
    return StringForm(
        "'", "'", "quote-backslash", char="[^'\\\\] | \"\\\\\" ['\\\\]", plain="'\\\\"
    )


class RubyHashCodec(ValueCodec):
    """A hash literal as Ruby's ``inspect`` writes it."""

    name: ClassVar[str] = "ruby-hash"
    quotes: ClassVar[tuple[str, ...]] = ('"', "'")

    def syntax(self, quote: str) -> Syntax:
        forms = (backslash_form('"'), single_quoted())
        if self.quote_for(quote) == "'":
            forms = forms[::-1]
        return Syntax(strings=forms, key_sep=" => ", key_prefix=":", null="nil")
