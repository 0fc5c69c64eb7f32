"""JSON values: ``name(k="v", n=null, flag=true)``, the values as ``json.dumps`` writes them. The
grammar's JSON (every JSON body's arguments) is this syntax. The parser reads such keyword
arguments with the tolerant Python scanner (``parse/pycall.py``), which reads JSON's words too."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import Syntax

__all__ = ["JSON", "JsonCodec"]

JSON = Syntax(breaks=True)
"""JSON, as ``json.dumps(value, ensure_ascii=False)`` writes it."""


class JsonCodec(ValueCodec):
    """JSON values after keyword arguments."""

    name: ClassVar[str] = "json"
    keyword_arguments: ClassVar[bool] = True
    incremental: ClassVar[bool] = True

    def syntax(self, quote: str) -> Syntax:
        return JSON
