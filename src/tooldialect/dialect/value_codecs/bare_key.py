"""Bare keys and token-quoted strings: Gemma 4's ``call:name{k:<|"|>v<|"|>,n:1}`` (FunctionGemma
quotes with ``<escape>``). Keys are bare identifiers, strings sit between ``string_quote``
tokens, other scalars are JSON-ish, objects ``{k:v,k2:w}`` and arrays ``[a,b]`` have no spaces.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .base import TOKEN_QUOTE, ValueCodec
from .syntax import StringForm, Syntax, write_value

__all__ = ["BareKeyCodec", "decode_bare_key_arguments", "encode_bare_key_value"]


def _class_char(c: str) -> str:
    """``c`` inside a GBNF character class."""
    return "\\" + c if c in "]^-\\" else c


def bare_key_syntax(quote: str) -> Syntax:
    """Strings between ``quote`` tokens (no escapes), bare keys, no spaces."""
    form = StringForm(
        quote, quote, "none", char=f"[^{_class_char(quote[0])}]", plain="", until_hint="g4str"
    )
    return Syntax(
        strings=(form,),
        member_sep=",",
        key_sep=":",
        keys="bare",
        words=_SPELLED,
        free_space=False,
    )


class BareKeyCodec(ValueCodec):
    """``k:v`` with bare keys and ``string_quote``-quoted strings; the name ``gemma4`` in a
    spec saved before the codecs had names of their own reads as this one."""

    name: ClassVar[str] = "bare-key"
    aliases: ClassVar[tuple[str, ...]] = ("gemma4",)
    token_quoted: ClassVar[bool] = True
    keyword_arguments: ClassVar[bool] = True

    def syntax(self, quote: str) -> Syntax:
        return bare_key_syntax(quote)

    def decode_arguments(
        self, inner: str, *, assign: str, separator: str, quote: str
    ) -> dict[str, Any] | None:
        return decode_bare_key_arguments(inner, assign=assign, separator=separator, quote=quote)


def encode_bare_key_value(value: Any, *, quote: str = TOKEN_QUOTE) -> str:
    """Strings between ``quote`` tokens, bare keys, JSON-ish scalars, no spaces."""
    return write_value(value, bare_key_syntax(quote))


class _NotLiteral(Exception):
    pass


# strings are quoted here: a bare None is Python's null
_SPELLED: dict[str, Any] = {
    "null": None,
    "None": None,
    "true": True,
    "True": True,
    "false": False,
    "False": False,
}


class _Reader:
    """Bare-key values: token-quoted strings, bare keys, JSON-ish scalars."""

    _STOP = frozenset(",}]")

    def __init__(self, text: str, quote: str = TOKEN_QUOTE) -> None:
        self.text = text
        self.pos = 0
        self.quote = quote

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def eat(self, s: str) -> bool:
        self.ws()
        if s and self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def key(self, assign: str) -> str:
        self.ws()
        if self.text.startswith(self.quote, self.pos):
            value = self.value()
            if not isinstance(value, str):
                raise _NotLiteral
            return value
        end = self.text.find(assign, self.pos)
        if end < 0:
            raise _NotLiteral
        key = self.text[self.pos : end].strip()
        if not key or any(c in key for c in "{}[],"):
            raise _NotLiteral
        self.pos = end
        return key

    def value(self) -> Any:
        self.ws()
        if self.text.startswith(self.quote, self.pos):
            return self._string()
        if self.eat("{"):
            return self._object()
        if self.eat("["):
            return self._array()
        return self._scalar()

    def _string(self) -> str:
        start = self.pos + len(self.quote)
        end = self.text.find(self.quote, start)
        if end < 0:
            raise _NotLiteral
        self.pos = end + len(self.quote)
        return self.text[start:end]

    def _object(self) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        if self.eat("}"):
            return obj
        while True:
            k = self.key(":")
            if not self.eat(":"):
                raise _NotLiteral
            obj[k] = self.value()
            if self.eat("}"):
                return obj
            if not self.eat(","):
                raise _NotLiteral

    def _array(self) -> list[Any]:
        arr: list[Any] = []
        if self.eat("]"):
            return arr
        while True:
            arr.append(self.value())
            if self.eat("]"):
                return arr
            if not self.eat(","):
                raise _NotLiteral

    def _scalar(self) -> Any:
        text = self.text
        start = self.pos
        while self.pos < len(text) and text[self.pos] not in self._STOP:
            self.pos += 1
        scalar = text[start : self.pos].strip()
        if not scalar:
            raise _NotLiteral
        if scalar in _SPELLED:  # strings are quoted here: a bare None is Python's null
            return _SPELLED[scalar]
        try:
            return json.loads(scalar)
        except ValueError:
            return scalar


def decode_bare_key_arguments(
    inner: str, *, assign: str, separator: str, quote: str = TOKEN_QUOTE
) -> dict[str, Any] | None:
    """``k:<|"|>v<|"|>,n:1`` (strings between ``quote`` tokens) as a dict, or ``None`` when it
    does not read."""
    reader = _Reader(inner, quote)
    assign, separator = assign.strip() or assign, separator.strip() or separator
    out: dict[str, Any] = {}
    try:
        reader.ws()
        if reader.pos == len(inner):
            return out
        while True:
            k = reader.key(assign)
            if not reader.eat(assign):
                return None
            out[k] = reader.value()
            reader.ws()
            if reader.pos == len(inner):
                return out
            if not reader.eat(separator):
                return None
    except _NotLiteral:
        return None
