"""TOML inline values: ``{ city = "Paris", tags = ["a", "b"] }``; keys bare where TOML allows
(letters, digits, ``_`` and ``-``), else quoted. TOML has no null: a member (or argument) whose
value is ``None`` is left out, as TOML writers do; a ``None`` elsewhere (an array's item) is
written ``null``, which this codec reads back (a TOML parser would not)."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import JSON_CHAR, StringForm, Syntax

__all__ = ["TomlInlineCodec"]

_BASIC = StringForm('"', '"', json_key_escapes=True, char=JSON_CHAR, escape_also="\x7f")
_LITERAL = StringForm("'", "'", "none")


class TomlInlineCodec(ValueCodec):
    """Inline tables and arrays as TOML writers spell them."""

    name: ClassVar[str] = "toml-inline"

    def syntax(self, quote: str) -> Syntax:
        return _SYNTAX


_SYNTAX = Syntax(
    strings=(_BASIC, _LITERAL),
    keys="ident-or-quoted",
    bare_key=r"[A-Za-z0-9_-]+",
    bare_key_grammar="[A-Za-z0-9_-]+",
    key_sep=" = ",
    pad=" ",
    omit_null_members=True,
)
