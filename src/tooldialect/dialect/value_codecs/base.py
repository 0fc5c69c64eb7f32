"""The interface every value codec implements: one object that writes a JSON value in its syntax,
declares that syntax for the grammar, and reads it back.

A codec is its ``Syntax`` (``syntax.py``): ``encode`` writes with it, ``decode`` and
``decode_arguments`` read with it (``read.py``), ``call_scan`` finds where a call's arguments end
in a stream (``scan.py``), and ``grammar/codec.py`` compiles a JSON Schema into GBNF from it. A
codec overrides a method only where its syntax says less than it does (Python's incremental
reader, the bare-key reader of Gemma 4's calls).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from .read import read_arguments, read_value
from .scan import CallScan
from .syntax import Syntax, write_value

__all__ = ["TOKEN_QUOTE", "ValueCodec", "dumps"]

TOKEN_QUOTE = '<|"|>'
"""The default string-quote token of a token-quoted codec (``PythonBody.string_quote``); for a
codec of fixed quotes it stands for the codec's first one."""


class ValueCodec(ABC):
    """How one value syntax spells argument values: written, constrained and read."""

    name: ClassVar[str]
    """The value of ``PythonBody.value_codec`` that selects this codec."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Older names a saved spec may hold."""
    token_quoted: ClassVar[bool] = False
    """Strings are written between ``PythonBody.string_quote`` tokens (so derivation records
    the token it found); otherwise the codec's own quotes."""
    quotes: ClassVar[tuple[str, ...]] = ()
    """The quotes it may write strings in, the first by default; ``PythonBody.string_quote``
    picks one and derivation tries each (empty: one way only)."""
    keyword_arguments: ClassVar[bool] = False
    """A call's arguments are keywords (``f(k=v)``: keys written as they are), not the members
    of an object in this syntax (``f({'k' => v})``)."""
    incremental: ClassVar[bool] = False
    """The parser reads this codec's arguments as they stream (Python literals, with its
    tolerant scanner, ``parse/pycall.py``); otherwise it waits for the call's closer (outside
    the codec's strings and brackets, :meth:`call_scan`) and reads the whole arguments with
    :meth:`decode_arguments`."""

    @abstractmethod
    def syntax(self, quote: str) -> Syntax:
        """The syntax it writes with ``quote`` (``PythonBody.string_quote``)."""

    def quote_for(self, quote: str) -> str:
        """``quote`` where the codec writes it, else its default (``""``: no variants)."""
        if self.token_quoted or quote in self.quotes:
            return quote
        return self.quotes[0] if self.quotes else ""

    def encode(self, value: Any, *, quote: str) -> str:
        """The exact text of ``value`` (``quote``: the body's ``string_quote``)."""
        return write_value(value, self.syntax(quote))

    def encode_key(self, key: str, *, quote: str) -> str:
        """An argument's key as a call writes it before its ``assign``."""
        return key if self.keyword_arguments else self.syntax(quote).write_key(key)

    def written(self, args: Mapping[str, Any], *, quote: str) -> dict[str, Any]:
        """The arguments as a call writes them: a ``None`` one left out where the syntax has no
        null (``Syntax.omit_null_members``)."""
        omit = self.syntax(quote).omit_null_members
        return {k: v for k, v in args.items() if not (omit and v is None)}

    def decode(self, text: str, *, quote: str) -> Any:
        """The value ``text`` spells (read leniently); ``read.NotRead`` where none."""
        return read_value(text, self.syntax(quote))

    def string_quotes(self, quote: str) -> list[str]:
        """Every text that may quote a string in this codec."""
        return [form.open for form in self.syntax(quote).strings]

    def decode_arguments(
        self, inner: str, *, assign: str, separator: str, quote: str
    ) -> dict[str, Any] | None:
        """A whole call's arguments (the text between its opener and closer) as a dict, or
        ``None`` when they do not read."""
        return read_arguments(inner, self.syntax(quote), assign=assign, separator=separator)

    def call_scan(self, close: str, start: int, *, quote: str) -> CallScan:
        """A scan for the call's closer ``close`` from ``start``, skipping this codec's strings
        and brackets."""
        return CallScan(close, start, self.syntax(quote).strings)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
