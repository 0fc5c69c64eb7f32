"""Reading values back in any declared ``Syntax``, leniently, as models write them: any of the
syntax's quotes, JSON's words beside its own, whitespace anywhere between tokens, a trailing
separator, an unquoted word read as a string, ``{}``/``[]`` where a syntax shares its brackets.

``read_value`` reads one whole value; ``read_arguments`` a call's ``k=v, ...`` arguments (the text
between its opener and closer). Both see complete text: the parser finds where that text ends
with ``scan.py`` first, so a streamed read decides exactly as a batch read.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import ToolDialectError
from .syntax import StringForm, Syntax

__all__ = ["NotRead", "read_arguments", "read_string_form", "read_value"]

_JSON_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_STRUCTURE = "{}[]()\"'"
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "a": "\a",
    "e": "\x1b",
    "\n": "\n",
}


class NotRead(ToolDialectError, ValueError):
    """The text is not a value in the syntax (``ValueCodec.decode``; the parser reads such
    text otherwise or keeps it as content)."""


def _hex(text: str, i: int, n: int) -> int:
    digits = text[i : i + n]
    if len(digits) != n or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise NotRead(f"bad escape at {i}")
    return int(digits, 16)


def _unicode(text: str, i: int) -> tuple[str, int]:
    """``\\u`` escape content at ``i`` (after the ``u``): ``{1F600}`` or four hex digits, a
    surrogate pair joined."""
    if text.startswith("{", i):
        end = text.find("}", i)
        if end < 0:
            raise NotRead(f"bad escape at {i}")
        return chr(_hex(text, i + 1, end - i - 1)), end + 1
    code = _hex(text, i, 4)
    if 0xD800 <= code < 0xDC00 and text.startswith("\\u", i + 4):
        low = _hex(text, i + 6, 4)
        if 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 10
    return chr(code), i + 4


def _escape(text: str, i: int, form: StringForm) -> tuple[str, int]:
    """The character a backslash escape at ``text[i]`` (after the backslash) stands for."""
    c = text[i]
    if c == "u":
        return _unicode(text, i + 1)
    if c == "U":
        return chr(_hex(text, i + 1, 8)), i + 9
    if c == "x":
        return chr(_hex(text, i + 1, 2)), i + 3
    if c.isdigit() and form.decimal_escapes:
        m = re.match(r"[0-9]{1,3}", text[i:])
        assert m is not None
        return chr(int(m.group(0))), i + m.end()
    if c == "0":
        return "\0", i + 1
    return _ESCAPES.get(c, c), i + 1


def read_string_form(text: str, i: int, form: StringForm) -> tuple[str, int]:
    """The content of the string whose opener ends at ``i``, and where its closer ends."""
    close = form.close
    if form.escaping == "none":
        k = text.find(close, i)
        if k < 0:
            raise NotRead("unclosed string")
        return text[i:k], k + len(close)
    out: list[str] = []
    while True:
        k = text.find(close, i)
        b = text.find("\\", i) if form.escaping != "doubled" else -1
        if k < 0:
            raise NotRead("unclosed string")
        if b < 0 or k < b:
            out.append(text[i:k])
            i = k + len(close)
            if form.escaping == "doubled" and text.startswith(close, i):
                out.append(close)
                i += len(close)
                continue
            return "".join(out), i
        out.append(text[i:b])
        if b + 1 >= len(text):
            raise NotRead("unclosed string")
        if form.escaping == "quote-backslash":
            nxt = text[b + 1]
            out.append(nxt if nxt in ("\\", close) else "\\" + nxt)
            i = b + 2
            continue
        ch, i = _escape(text, b + 1, form)
        out.append(ch)


class _Reader:
    """A lenient recursive-descent reader over one text."""

    def __init__(self, text: str, syntax: Syntax) -> None:
        self.text = text
        self.syntax = syntax
        self.pos = 0
        s = syntax
        cores = [s.member_sep.strip(), s.items_sep.strip(), s.key_sep.strip()]
        spaced = any(not c for c in cores)  # a whitespace separator ends a word (EDN)
        self.stops = "".join(c[:1] for c in cores) + s.object_close[:1] + s.array_close[:1]
        self.stops += "," if s.optional_commas else ""
        self.spaced = spaced

    # -- characters ---------------------------------------------------------------------------

    def ws(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n and text[self.pos].isspace():
            self.pos += 1

    def eat(self, s: str) -> bool:
        self.ws()
        if s and self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def sep(self, sep: str) -> bool:
        """A separator; one of whitespace is met by any whitespace, a comma (EDN's commas are
        whitespace) or none (``["a""b"]``: the next value still has to read)."""
        core = sep.strip()
        if core and not (core == "," and self.syntax.optional_commas):
            return self.eat(core)
        self.eat(",")
        return True

    # -- values -------------------------------------------------------------------------------

    def value(self) -> Any:
        self.ws()
        s, text, pos = self.syntax, self.text, self.pos
        if s.shared_brackets and text.startswith(s.object_open, pos):
            self.pos += len(s.object_open)
            return self._shared()
        if text.startswith(s.object_open, pos):
            self.pos += len(s.object_open)
            return self.members(s.object_close, s.key_sep, s.member_sep)
        if text.startswith(s.array_open, pos):
            self.pos += len(s.array_open)
            return self._items(s.array_close)
        got = self._string()
        if got is not None:
            return got
        return self._scalar()

    def _string(self) -> str | None:
        for form in self.syntax.strings:
            if self.text.startswith(form.open, self.pos):
                value, self.pos = read_string_form(self.text, self.pos + len(form.open), form)
                return value
        return None

    def _word(self, stops: str) -> str:
        text, start, i, n = self.text, self.pos, self.pos, len(self.text)
        while i < n and text[i] not in stops and not (self.spaced and text[i].isspace()):
            i += 1
        self.pos = i
        word = text[start:i].strip()
        if not word:
            raise NotRead(f"no value at {start}")
        return word

    def _scalar(self) -> Any:
        word = self._word(self.stops)
        if word[0] in _STRUCTURE:
            raise NotRead(f"no value at {self.pos - len(word)}")
        s = self.syntax
        spelled = {s.true: True, s.false: False, s.null: None}
        for table in (spelled, s.words, _JSON_WORDS):
            if word in table:
                return table[word]
        if _INT.fullmatch(word):
            return int(word)
        if _FLOAT.fullmatch(word) and any(c.isdigit() for c in word):
            return float(word)
        return word  # an unquoted string, as models and plain scalars write them

    def _items(self, close: str) -> list[Any]:
        out: list[Any] = []
        if self.eat(close):
            return out
        while True:
            out.append(self.value())
            if self.eat(close):
                return out
            if not self.sep(self.syntax.items_sep):
                raise NotRead(f"expected a separator at {self.pos}")
            if self.eat(close):  # a trailing separator
                return out

    def _shared(self) -> Any:
        """Brackets that open an object or an array alike: an object where a key and its
        separator come first."""
        s = self.syntax
        close = s.object_close
        if self.eat(close):
            return {} if s.empty == "object" else []
        start = self.pos
        try:
            self.key(s.key_sep)
            is_object = self.eat(s.key_sep.strip()) if s.key_sep.strip() else False
        except NotRead:
            is_object = False
        self.pos = start
        if is_object:
            return self.members(close, s.key_sep, s.member_sep)
        return self._items(close)

    # -- objects and arguments ----------------------------------------------------------------

    def key(self, key_sep: str) -> str:
        self.ws()
        s, text = self.syntax, self.text
        if s.key_prefix and text.startswith(s.key_prefix, self.pos):
            self.pos += len(s.key_prefix)
        elif s.quoted_key[0] and text.startswith(s.quoted_key[0], self.pos):
            self.pos += len(s.quoted_key[0])
            got = self._string()
            if got is None or not self.eat(s.quoted_key[1]):
                raise NotRead(f"bad key at {self.pos}")
            return got
        got = self._string()
        if got is not None:
            return got
        core = key_sep.strip()
        key = self._word(core[:1] + _STRUCTURE + "," + (" \t\n" if not core else ""))
        if any(c.isspace() for c in key):
            raise NotRead(f"bad key {key!r}")
        return key

    def members(self, close: str, key_sep: str, sep: str) -> dict[str, Any]:
        """``k: v, ...`` up to ``close`` (``""``: the end of the text)."""
        out: dict[str, Any] = {}
        if self.closes(close):
            return out
        while True:
            k = self.key(key_sep)
            core = key_sep.strip()
            if core and not self.eat(core):
                raise NotRead(f"expected {core!r} at {self.pos}")
            out[k] = self.value()
            if self.closes(close):
                return out
            if not self.sep(sep):
                raise NotRead(f"expected a separator at {self.pos}")
            if self.closes(close):  # a trailing separator
                return out

    def closes(self, close: str) -> bool:
        if close:
            return self.eat(close)
        self.ws()
        return self.pos == len(self.text)


def read_value(text: str, syntax: Syntax) -> Any:
    """The one value ``text`` holds (whitespace around it aside); ``NotRead`` where it is none."""
    reader = _Reader(text, syntax)
    try:
        value = reader.value()
    except RecursionError:
        raise NotRead("nested too deep") from None
    reader.ws()
    if reader.pos != len(text):
        raise NotRead(f"text after the value at {reader.pos}")
    return value


def read_arguments(
    inner: str, syntax: Syntax, *, assign: str, separator: str
) -> dict[str, Any] | None:
    """A call's arguments (``k{assign}v{separator}...``, the text between its opener and
    closer) as a dict, or ``None`` when they do not read."""
    reader = _Reader(inner, syntax)
    reader.stops += separator.strip()[:1] + assign.strip()[:1]
    reader.spaced = reader.spaced or not separator.strip() or not assign.strip()
    try:
        return reader.members("", assign, separator)
    except (NotRead, RecursionError):
        return None
