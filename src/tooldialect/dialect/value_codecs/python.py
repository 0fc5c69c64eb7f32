"""Python literals: ``name(k="v", n=None, flag=True)``. The parser reads a call's keyword
arguments as they stream, with its tolerant scanner (``parse/pycall.py``); a lone value reads
with the declared syntax."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from .base import ValueCodec
from .syntax import Syntax, backslash_form, write_value

__all__ = ["PYTHON", "PythonCodec", "encode_python_value"]

_DQ, _SQ = backslash_form('"', rule="py-char-dq"), backslash_form("'", rule="py-char-sq")
PYTHON = Syntax(
    strings=(_DQ, _SQ),
    grammar_strings=2,
    true="True",
    false="False",
    null="None",
    breaks=True,
)
"""Double-quoted strings (JSON's escapes), either quote read; ``True``/``False``/``None``."""
_PYTHON_SQ = replace(PYTHON, strings=(_SQ, _DQ))
"""The same, single-quoted strings written (as ``repr`` mostly does)."""


class PythonCodec(ValueCodec):
    """Python literal values; the parser reads them as they stream (``parse/pycall.py``)."""

    name: ClassVar[str] = "python"
    quotes: ClassVar[tuple[str, ...]] = ('"', "'")
    keyword_arguments: ClassVar[bool] = True
    incremental: ClassVar[bool] = True

    def syntax(self, quote: str) -> Syntax:
        return _PYTHON_SQ if self.quote_for(quote) == "'" else PYTHON


def encode_python_value(value: Any) -> str:
    """A Python literal for a JSON value (double-quoted strings, ``True``/``None``)."""
    return write_value(value, PYTHON)
