"""Value syntaxes ("codecs") a schema can be compiled into: JSON, Python literals, Gemma 4, and
JSON embedded inside a JSON string (``arguments_as_string``).

The schema converter is written once against this interface; a codec only says how scalars,
strings, keys and separators are spelled. Constants are spelled with the same encoders
``DialectSpec.render_call`` uses, so the grammar and the renderer cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ..dialect.spec import GEMMA4_QUOTE, encode_gemma4_value, encode_python_value
from .gbnf import GbnfBuilder, literal, until

__all__ = ["CODECS", "DEFAULT_ARGUMENT_LAYOUT", "ArgumentLayout", "Codec", "CodecName", "codec_for"]

CodecName = Literal["json", "python", "gemma4", "json-in-string"]
ArgumentLayout = Literal["free", "canonical"]
"""Whitespace inside argument values: ``"free"`` lets the model choose it between tokens (within
``WS``); ``"canonical"`` allows exactly what ``render_call`` writes (``{"k": v, "k2": [1, 2]}``)."""

DEFAULT_ARGUMENT_LAYOUT: ArgumentLayout = "canonical"
"""What every engine's requests use unless told otherwise (docs/fast-forward.md has the figures)."""

# Whitespace between JSON tokens: a few spaces, then at most two newlines each followed by an
# indent, so a model cannot run away in whitespace while pretty-printed JSON still fits.
WS = '[ \\t]{0,4} ("\\n" [ \\t]{0,24}){0,2}'
JSON_CHAR = '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})'
# A JSON string char as it reads once the JSON text is itself encoded into a JSON string.
EMBEDDED_CHAR = (
    '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\\\\\" ("\\\\\\"" | "\\\\\\\\" | [/bfnrt] | "u" [0-9a-fA-F]{4})'
)
PY_CHAR_DQ = '[^"\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'
PY_CHAR_SQ = '[^\'\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'


@dataclass(frozen=True)
class Codec:
    """How one value syntax spells things. Methods return GBNF expressions or rule names."""

    name: CodecName
    layout: ArgumentLayout = "free"
    """``"canonical"``: separators are ``", "`` and ``": "``, nothing pads a bracket, as the
    encoders (``json.dumps``, ``encode_python_value``) write them."""
    string_quote: str = GEMMA4_QUOTE
    """The token around ``gemma4`` strings (``PythonBody.string_quote``)."""

    def text(self, s: str) -> str:
        """A literal piece of structure (``{``, ``,`` ...) in this codec."""
        if self.name == "json-in-string":
            return literal(json.dumps(s, ensure_ascii=False)[1:-1])
        return literal(s)

    def encode(self, value: Any) -> str:
        """The exact text of a constant value."""
        if self.name == "python":
            return encode_python_value(value)
        if self.name == "gemma4":
            return encode_gemma4_value(value, quote=self.string_quote)
        dumped = json.dumps(value, ensure_ascii=False)
        if self.name == "json-in-string":
            return json.dumps(dumped, ensure_ascii=False)[1:-1]
        return dumped

    def const(self, value: Any) -> str:
        return literal(self.encode(value))

    def key(self, key: str) -> str:
        if self.name == "gemma4":
            return literal(key)
        return self.const(key)

    def ws(self, b: GbnfBuilder) -> str:
        if self.name == "gemma4":
            return '""'
        if self.name == "json-in-string":
            return _shared(b, "ws-str", '" "?')
        return _shared(b, "ws", WS)

    def pad(self, b: GbnfBuilder) -> str:
        """Whitespace just inside ``{ }`` / ``[ ]``."""
        return '""' if self.layout == "canonical" else self.ws(b)

    def sep(self, b: GbnfBuilder) -> str:
        """Between two members or items."""
        return self._around(b, ",")

    def colon(self, b: GbnfBuilder) -> str:
        """Between a key and its value."""
        return self._around(b, ":")

    def _around(self, b: GbnfBuilder, mark: str) -> str:
        if self.layout == "canonical":
            # gemma4 writes no space (``{k:v,k2:w}``); the other encoders write one after
            return self.text(mark if self.name == "gemma4" else mark + " ")
        ws = self.ws(b)
        return f"{ws} {self.text(mark)} {ws}"

    def char(self, b: GbnfBuilder) -> str:
        """One character of string content (for length-bounded strings)."""
        body = {
            "json": JSON_CHAR,
            "json-in-string": EMBEDDED_CHAR,
            "python": PY_CHAR_DQ,
            "gemma4": f"[^{_class_char(self.string_quote[0])}]",
        }[self.name]
        return _shared(b, f"{self.name}-char", body)

    def quote(self, content: str) -> str:
        """A string whose content is the expression ``content``."""
        q = {"json": '"', "python": '"', "json-in-string": '\\"', "gemma4": self.string_quote}[
            self.name
        ]
        return f"{literal(q)} {content} {literal(q)}"

    def any_string(self, b: GbnfBuilder) -> str:
        key = f"{self.name}-string"
        if self.name == "gemma4":
            return _shared(
                b,
                key,
                f"{literal(self.string_quote)} {until(b, self.string_quote, hint='g4str')}",
            )
        if self.name == "python":
            dq = _shared(b, "py-char-dq", PY_CHAR_DQ)
            sq = _shared(b, "py-char-sq", PY_CHAR_SQ)
            return _shared(b, key, f'{literal(chr(34))} {dq}* {literal(chr(34))} | "\'" {sq}* "\'"')
        return _shared(b, key, self.quote(f"{self.char(b)}*"))

    def scalar(self, b: GbnfBuilder, kind: Literal["true", "false", "null"]) -> str:
        value = {"true": True, "false": False, "null": None}[kind]
        return self.const(value)


def _shared(b: GbnfBuilder, name: str, body: str) -> str:
    key = ("shared", name)
    if key not in b.memo:
        b.memo[key] = b.add(name, body)
    return b.memo[key]


CODECS: dict[str, Codec] = {n: Codec(n) for n in ("json", "python", "gemma4", "json-in-string")}


def codec_for(
    name: CodecName, layout: ArgumentLayout = "free", *, string_quote: str = GEMMA4_QUOTE
) -> Codec:
    """The codec ``name`` with argument layout ``layout`` (and ``gemma4`` string quote)."""
    if layout == "free" and string_quote == GEMMA4_QUOTE:
        return CODECS[name]
    return Codec(name, layout, string_quote)


def _class_char(c: str) -> str:
    """``c`` inside a GBNF character class."""
    return "\\" + c if c in "]^-\\" else c
