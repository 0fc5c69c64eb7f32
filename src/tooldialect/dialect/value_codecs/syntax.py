"""A value syntax as data: how it quotes strings (``StringForm``), spells words, keys, objects and
arrays (``Syntax``), and how a JSON value is written in it (:func:`write_value`).

A codec module declares one ``Syntax``; the writer here, the reader (``read.py``), the scan that
finds where a value ends in a stream (``scan.py``) and the grammar (``grammar/codec.py``) all
read the same declaration, so that what ``render_call`` writes, what the grammar admits and what
the parser reads cannot drift apart. Grammar pieces (``StringForm.char``, ``PlainStrings``'s
character classes) are GBNF text: data here, compiled only by the grammar package.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...errors import DialectError

__all__ = [
    "IDENT",
    "JSON_CHAR",
    "Escaping",
    "KeyStyle",
    "PlainStrings",
    "StringForm",
    "Syntax",
    "backslash_form",
    "json_control",
    "json_number",
    "write_value",
]

Escaping = Literal["backslash", "quote-backslash", "doubled", "none"]
"""How a string form escapes: ``backslash``, C-like escapes (``\\n``, ``\\"``, ``\\u00e9``...);
``quote-backslash``, only ``\\'`` and ``\\\\`` (PHP's and Ruby's single quotes: ``'\\n'`` is two
characters); ``doubled``, the quote written twice (YAML's single quotes); ``none``, the content
runs to the closing text (a token quote: Gemma 4's ``<|"|>``)."""

KeyStyle = Literal["quoted", "bare", "ident-or-quoted"]
"""How an object key is written: always as a string (JSON, Ruby, PHP), always bare (Gemma 4's
``{k:v}``), or bare where it is an identifier and quoted otherwise (JavaScript, Lua, EDN...)."""

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
"""An identifier: a key most syntaxes write bare."""

JSON_CHAR = '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})'
"""GBNF of one character of JSON string content."""

_SIMPLE = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def json_control(code: int) -> str:
    """A control character as JSON escapes it (``\\u001b``)."""
    return f"\\u{code:04x}"


def json_number(value: float) -> str:
    """A number as JSON writes it (non-finite ones have no spelling)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise DialectError(f"non-finite number {value!r} cannot be written as an argument")
    return json.dumps(value)


@dataclass(frozen=True)
class StringForm:
    """One way a syntax quotes a string: its opening and closing text and its escapes."""

    open: str
    close: str
    escaping: Escaping = "backslash"
    char: str = JSON_CHAR
    """GBNF of one character of content, as the grammar admits it."""
    plain: str = '"\\\\\\x7F\\x00-\\x1F'
    """GBNF class body of what a plain (unescaped) content character is not (for key tries)."""
    json_key_escapes: bool = False
    """The grammar's key tries know this form's escapes as JSON's (``\\/``, ``\\u``)."""
    escape_also: str = ""
    """Characters written as a control escape though printable (TOML's DEL)."""
    control: Callable[[int], str] = json_control
    """How a control character is written (``backslash`` forms)."""
    decimal_escapes: bool = False
    """``\\ddd`` is a decimal character code (Lua), not an octal or NUL escape."""
    rule: str = ""
    """The name of its character rule where a grammar admits several forms (``py-char-sq``)."""
    until_hint: str = "until"
    """The hint of an ``escaping="none"`` form's rule that runs to its closer."""

    def escape(self, text: str) -> str:
        """``text`` as this form writes it between its quotes."""
        if self.escaping == "none":
            return text
        if self.escaping == "doubled":
            return text.replace(self.close, self.close * 2)
        if self.escaping == "quote-backslash":
            return text.replace("\\", "\\\\").replace(self.close, "\\" + self.close)
        return "".join(self._escape_char(ch) for ch in text)

    def _escape_char(self, ch: str) -> str:
        if ch == "\\" or ch == self.close:
            return "\\" + ch
        if ch in _SIMPLE:
            return _SIMPLE[ch]
        if ord(ch) < 0x20 or ch in self.escape_also:
            return self.control(ord(ch))
        return ch

    def write(self, text: str) -> str:
        """``text`` quoted."""
        return self.open + self.escape(text) + self.close


@dataclass(frozen=True)
class PlainStrings:
    """Strings written without quotes where they cannot read as anything else (YAML's plain
    scalars): ``first`` then ``middle`` characters, the last of two or more a ``last`` one,
    none of ``reserved`` (words that read as booleans or null)."""

    first: str
    """The characters a plain string may start with."""
    middle: str
    """The characters it may hold after the first."""
    last: str
    """The characters its last one (of two or more) may be."""
    reserved: frozenset[str]

    def admits(self, text: str) -> bool:
        if not text or text in self.reserved or text[0] not in self.first:
            return False
        return all(c in self.middle for c in text[1:]) and (len(text) == 1 or text[-1] in self.last)


def backslash_form(quote: str, *, char: str = "", rule: str = "", **more: Any) -> StringForm:
    """A string between ``quote`` characters with C-like escapes; its grammar admits any
    non-control character but the quote and backslash, or a backslash escape."""
    char = char or f'[^{quote}\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'
    plain = f"{quote}\\\\\\x00-\\x1F"
    return StringForm(quote, quote, "backslash", char=char, plain=plain, rule=rule, **more)


@dataclass(frozen=True)
class Syntax:
    """How one value syntax writes JSON values: its strings, words, keys, objects and arrays.
    The defaults are JSON's."""

    strings: tuple[StringForm, ...] = (
        StringForm('"', '"', json_key_escapes=True, escape_also="\x7f"),
    )
    """Its string forms; the first is the one it writes. The reader reads them all."""
    grammar_strings: int = 1
    """How many of ``strings`` the grammar admits (Python's two quotes: 2)."""
    object_open: str = "{"
    object_close: str = "}"
    array_open: str = "["
    array_close: str = "]"
    member_sep: str = ", "
    """Between two members of an object."""
    item_sep: str | None = None
    """Between two items of an array (``None``: as between members)."""
    key_sep: str = ": "
    """Between a key and its value."""
    pad: str = ""
    """Inside the brackets of a non-empty object (TOML's ``{ a = 1 }``)."""
    keys: KeyStyle = "quoted"
    bare_key: str = IDENT
    """The keys written bare under ``ident-or-quoted`` (a regex)."""
    bare_key_grammar: str = "[a-zA-Z_] [a-zA-Z0-9_]*"
    """GBNF of the bare keys the grammar admits beside the declared ones (``bare_key``'s, or
    fewer)."""
    reserved_keys: frozenset[str] = frozenset()
    """Identifiers still quoted as keys (Lua's ``end``)."""
    key_prefix: str = ""
    """Before a bare key (EDN's keyword ``:k``)."""
    quoted_key: tuple[str, str] = ("", "")
    """Around a quoted key (Lua's ``["a b"] = 1``)."""
    plain: PlainStrings | None = None
    true: str = "true"
    false: str = "false"
    null: str = "null"
    words: Mapping[str, Any] = field(default_factory=dict)
    """More words the reader takes for a value (Python's ``True`` beside JSON's ``true``)."""
    number: Callable[[float], str] = json_number
    empty: Literal["object", "array"] = "object"
    """What empty brackets read as where objects and arrays share them (Lua, PHP); the parser
    retypes them by the schema."""
    omit_null_members: bool = False
    """It has no null: a member (or a call's argument) whose value is ``None`` is left out, as
    TOML writers do."""
    optional_commas: bool = False
    """Commas are whitespace: a ``,`` separator may be left out (EDN)."""
    breaks: bool = False
    """Its values may be pretty-printed over lines (the grammar's ``natural`` layouts)."""
    free_space: bool = True
    """The grammar's ``free`` layout lets the model put whitespace between tokens."""

    @property
    def items_sep(self) -> str:
        return self.member_sep if self.item_sep is None else self.item_sep

    @property
    def shared_brackets(self) -> bool:
        """Objects and arrays open alike (Lua's ``{``, PHP's ``[``)."""
        return self.object_open == self.array_open

    def writes_bare(self, key: str) -> bool:
        """Whether ``key`` is written without quotes."""
        if self.keys == "bare":
            return True
        if self.keys == "quoted" or key in self.reserved_keys:
            return False
        if self.plain is not None and not self.plain.admits(key):
            return False
        return re.fullmatch(self.bare_key, key) is not None

    def write_key(self, key: str) -> str:
        """An object key."""
        if self.writes_bare(key):
            return self.key_prefix + key
        return self.quoted_key[0] + self.strings[0].write(key) + self.quoted_key[1]

    def write_string(self, text: str) -> str:
        if self.plain is not None and self.plain.admits(text):
            return text
        return self.strings[0].write(text)

    def word(self, value: Any) -> str | None:
        """The word for ``True``, ``False`` or ``None``, else ``None``."""
        if value is None:
            return self.null
        if value is True:
            return self.true
        if value is False:
            return self.false
        return None


def write_value(value: Any, syntax: Syntax) -> str:
    """``value`` (JSON data) written in ``syntax``."""
    word = syntax.word(value)
    if word is not None:
        return word
    if isinstance(value, (int, float)):
        return syntax.number(value)
    if isinstance(value, str):
        return syntax.write_string(value)
    if isinstance(value, Mapping):
        kept = [(k, v) for k, v in value.items() if not (v is None and syntax.omit_null_members)]
        if not kept:
            return syntax.object_open + syntax.object_close
        members = syntax.member_sep.join(
            syntax.write_key(str(k)) + syntax.key_sep + write_value(v, syntax) for k, v in kept
        )
        return syntax.object_open + syntax.pad + members + syntax.pad + syntax.object_close
    if isinstance(value, (list, tuple)):
        if not value:
            return syntax.array_open + syntax.array_close
        items = syntax.items_sep.join(write_value(v, syntax) for v in value)
        return syntax.array_open + items + syntax.array_close
    raise DialectError(f"cannot write {value!r} as an argument value: it is not JSON data")
