"""SQL values: ``JSON_OBJECT('city', 'Paris', 'tags', JSON_ARRAY('a', 'b'), 'n', NULL)``, strings
in single quotes doubled inside, ``TRUE``/``FALSE``/``NULL``."""

from __future__ import annotations

from typing import ClassVar

from .base import ValueCodec
from .syntax import StringForm, Syntax

__all__ = ["SqlCodec"]

_SQ = StringForm("'", "'", "doubled", char="[^'] | \"''\"", plain="'")


class SqlCodec(ValueCodec):
    """JSON built with SQL's JSON functions, as a SQL statement writes it."""

    name: ClassVar[str] = "sql"

    def syntax(self, quote: str) -> Syntax:
        return _SYNTAX


_SYNTAX = Syntax(
    strings=(_SQ,),
    object_open="JSON_OBJECT(",
    object_close=")",
    array_open="JSON_ARRAY(",
    array_close=")",
    key_sep=", ",
    true="TRUE",
    false="FALSE",
    null="NULL",
)
