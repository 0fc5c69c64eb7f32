"""Value syntaxes ("codecs") a schema can be compiled into: one class per codec (JSON, Python
literals, bare keys with token-quoted strings, JSON embedded inside a JSON string for
``arguments_as_string``), chosen by name through ``codec_for``.

The schema converter is written once against ``Codec``; a codec only says how scalars,
strings, keys and separators are spelled. Constants are spelled with the same encoders
``DialectSpec.render_call`` uses, so the grammar and the renderer cannot disagree. A ``python``
body's codec has the name of its ``PythonBody.value_codec`` (``dialect/value_codecs``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..dialect.value_codecs import TOKEN_QUOTE, encode_python_value
from ..dialect.value_codecs import BareKeyCodec as BareKeyValueCodec
from ..dialect.value_codecs import PythonCodec as PythonValueCodec
from ..dialect.value_codecs.bare_key import encode_bare_key_value
from .gbnf import GbnfBuilder, literal, until
from .key_syntax import (
    JSON_PLAIN,
    PY_PLAIN_DQ,
    PY_PLAIN_SQ,
    KeySyntax,
    json_key_escapes,
    no_key_escapes,
)

__all__ = [
    "DEFAULT_ARGUMENT_LAYOUT",
    "LAYOUTS",
    "ArgumentLayout",
    "BareKeyCodec",
    "Codec",
    "CodecName",
    "JsonCodec",
    "JsonInStringCodec",
    "PythonCodec",
    "codec_for",
    "codec_names",
    "layout_for",
    "register_codec",
]

CodecName = str
"""A registered codec's name (``json``, ``json-in-string``, ``python``, ``bare-key``...)."""
ArgumentLayout = Literal["free", "canonical", "natural"]
"""Whitespace inside argument values: ``"free"`` lets the model choose it between tokens (within
``WS``); ``"canonical"`` allows exactly what ``render_call`` writes (``{"k": v, "k2": [1, 2]}``);
``"natural"`` allows what compact and pretty printers write: the canonical spacing, or a line
break and an indent after ``{``, ``[`` and ``,`` and before ``}``, ``]`` (``": "`` always)."""

LAYOUTS: tuple[ArgumentLayout, ...] = ("free", "canonical", "natural")

DEFAULT_ARGUMENT_LAYOUT: ArgumentLayout | None = None
"""What every engine's requests use unless told otherwise: ``layout_for``'s choice per request
(docs/fast-forward.md and docs/benchmarks.md have the figures)."""


def layout_for(layout: ArgumentLayout | None, *, forced: bool) -> ArgumentLayout:
    """A request's argument layout: ``layout`` when the caller chose one; else ``"natural"``
    where the model chose to call (``auto``: it keeps its own layout, so the grammar changes
    no answer the model would have written validly) and ``"canonical"`` where the call is
    forced (``required``, named: the library's call, its separators forced text)."""
    if layout is not None:
        return layout
    return "canonical" if forced else "natural"


# Whitespace between JSON tokens: a few spaces, then at most two newlines each followed by an
# indent, so a model cannot run away in whitespace while pretty-printed JSON still fits.
WS = '[ \\t]{0,4} ("\\n" [ \\t]{0,24}){0,2}'
# A pretty-printer's line break: a newline and the next line's indent.
BREAK = '"\\n" [ \\t]{0,24}'
PRETTY_INDENTS: tuple[tuple[int, int], ...] = tuple(
    (step, level * step) for step in (2, 4) for level in (1, 2, 3, 4)
)
"""``(step, width)`` of the pretty-printed layouts a natural object or array may take: its
members each on a line indented ``width`` spaces, its closer ``step`` spaces less
(``json.dumps(indent=2)`` writes a top-level object at ``(2, 2)``; Qwen2.5 writes arguments
inside its call object at ``(2, 4)``)."""

Bracketing = tuple[str, str, str]
"""GBNF of what follows an opening bracket, what separates members, and what precedes the
closing bracket, in one layout."""
JSON_CHAR = '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})'
# A JSON string char as it reads once the JSON text is itself encoded into a JSON string.
EMBEDDED_CHAR = (
    '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\\\\\" ("\\\\\\"" | "\\\\\\\\" | [/bfnrt] | "u" [0-9a-fA-F]{4})'
)
PY_CHAR_DQ = '[^"\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'
PY_CHAR_SQ = '[^\'\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'


@dataclass(frozen=True)
class Codec:
    """How one value syntax spells things (JSON by default). Methods return GBNF expressions or
    rule names."""

    name: ClassVar[str] = "json"
    aliases: ClassVar[tuple[str, ...]] = ()
    """Older names ``codec_for`` still accepts."""
    bare_keys: ClassVar[bool] = False
    """Keys are unquoted identifiers (``{k:v}``)."""
    canonical_space: ClassVar[str] = " "
    """What the encoder writes after ``,`` and ``:`` (``", "``, ``": "``)."""
    breaks: ClassVar[bool] = True
    """Its values may span lines (``"natural"`` allows the breaks; else it is canonical)."""

    layout: ArgumentLayout = "free"
    """``"canonical"``: separators are ``", "`` and ``": "``, nothing pads a bracket, as the
    encoders (``json.dumps``, ``encode_python_value``) write them."""
    string_quote: str = TOKEN_QUOTE
    """The token around strings of a token-quoted codec (``PythonBody.string_quote``)."""

    def text(self, s: str) -> str:
        """A literal piece of structure (``{``, ``,`` ...) in this codec."""
        return literal(s)

    def encode(self, value: Any) -> str:
        """The exact text of a constant value."""
        return json.dumps(value, ensure_ascii=False)

    def const(self, value: Any) -> str:
        return literal(self.encode(value))

    def key(self, key: str) -> str:
        return self.const(key)

    def quote_key(self, content: str) -> str:
        """A key whose content is the expression ``content``."""
        return self.quote(content)

    def content_text(self, s: str) -> str:
        """A literal piece of string content, as this codec writes it inside a string."""
        return literal(self.encode(s)[1:-1])

    def ws(self, b: GbnfBuilder) -> str:
        return shared_rule(b, "ws", WS)

    def pad(self, b: GbnfBuilder) -> str:
        """Whitespace just inside ``{ }`` / ``[ ]``."""
        if self._natural():
            return shared_rule(b, "break", f"({BREAK})?")
        return '""' if self.layout != "free" else self.ws(b)

    def bracketings(self, b: GbnfBuilder) -> list[Bracketing]:
        """The layouts an object's members or an array's items may take, each an alternative
        of its own. One in the canonical and free layouts; under natural, the canonical one and
        one per pretty-printer's indent (``PRETTY_INDENTS``), so that the model's first line
        break picks the indent and every later break and indent is forced text."""
        if not self._natural():
            return [(self.pad(b), self.sep(b), self.pad(b))]
        out: list[Bracketing] = [('""', self.text("," + self.canonical_space), '""')]
        for step, width in PRETTY_INDENTS:
            line = "\n" + " " * width
            out.append((literal(line), self.text(",") + " " + literal(line), literal(line[:-step])))
        return out

    @property
    def any_order(self) -> bool:
        """Whether an object's properties (a call's arguments) may come in any order. Under
        ``"natural"`` the model keeps its own layout, the order of its keys included (Qwen2.5
        1.5B writes an optional key before another the schema lists first); elsewhere the
        schema's order, which structured output relies on (``reasoning`` before ``answer``)."""
        return self.layout == "natural"

    def sep(self, b: GbnfBuilder) -> str:
        """Between two members or items."""
        return self._around(b, ",")

    def colon(self, b: GbnfBuilder) -> str:
        """Between a key and its value."""
        return self._around(b, ":")

    def _around(self, b: GbnfBuilder, mark: str) -> str:
        if self._natural() and mark == ",":
            space = self.text(self.canonical_space) if self.canonical_space else '""'
            return shared_rule(
                b, f"{self.name}-break-sep", f"{self.text(mark)} ({space} | {BREAK})"
            )
        if self.layout != "free":  # canonical, and a natural colon: '": "' in every style
            return self.text(mark + self.canonical_space)
        ws = self.ws(b)
        return f"{ws} {self.text(mark)} {ws}"

    def _natural(self) -> bool:
        return self.layout == "natural" and self.breaks

    def char_body(self) -> str:
        """One character of string content, as a GBNF expression."""
        return JSON_CHAR

    def char(self, b: GbnfBuilder) -> str:
        """One character of string content (for length-bounded strings)."""
        return shared_rule(b, f"{self.name}-char", self.char_body())

    def quote_token(self) -> str:
        """The text around a string."""
        return '"'

    def quote(self, content: str) -> str:
        """A string whose content is the expression ``content``."""
        q = literal(self.quote_token())
        return f"{q} {content} {q}"

    def any_string(self, b: GbnfBuilder) -> str:
        return shared_rule(b, f"{self.name}-string", self.quote(f"{self.char(b)}*"))

    def scalar(self, b: GbnfBuilder, kind: Literal["true", "false", "null"]) -> str:
        value = {"true": True, "false": False, "null": None}[kind]
        return self.const(value)

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        """How a quoted key is spelled, per quote (``key_syntax``; bare keys have none)."""
        char = self.char(b)
        unit = _json_unit
        return [KeySyntax('"', '"', unit, JSON_PLAIN, f'({char})* "\\""', char, json_key_escapes)]


class JsonCodec(Codec):
    """JSON, as ``json.dumps`` writes it."""


@dataclass(frozen=True)
class JsonInStringCodec(Codec):
    """JSON text that is itself the content of a JSON string (``arguments_as_string``)."""

    name: ClassVar[str] = "json-in-string"
    breaks: ClassVar[bool] = False

    def text(self, s: str) -> str:
        return literal(json.dumps(s, ensure_ascii=False)[1:-1])

    def encode(self, value: Any) -> str:
        dumped = json.dumps(value, ensure_ascii=False)
        return json.dumps(dumped, ensure_ascii=False)[1:-1]

    def content_text(self, s: str) -> str:
        # escaped for the inner string, then again for the outer one (``encode`` quotes with
        # ``\"``, two characters, so slicing its quotes off as the base class does cuts wrong)
        inner = json.dumps(s, ensure_ascii=False)[1:-1]
        return literal(json.dumps(inner, ensure_ascii=False)[1:-1])

    def ws(self, b: GbnfBuilder) -> str:
        return shared_rule(b, "ws-str", '" "?')

    def char_body(self) -> str:
        return EMBEDDED_CHAR

    def quote_token(self) -> str:
        return '\\"'

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        char = self.char(b)
        return [
            KeySyntax(
                '\\"',
                '\\"',
                lambda ch: self.encode(ch)[2:-2],
                JSON_PLAIN,
                f'({char})* "\\\\\\""',
                char,
                no_key_escapes,
            )
        ]


@dataclass(frozen=True)
class PythonCodec(Codec):
    """Python literals: either quote, ``True``/``False``/``None``."""

    name: ClassVar[str] = PythonValueCodec.name
    aliases: ClassVar[tuple[str, ...]] = PythonValueCodec.aliases

    def encode(self, value: Any) -> str:
        return encode_python_value(value)

    def char_body(self) -> str:
        return PY_CHAR_DQ

    def any_string(self, b: GbnfBuilder) -> str:
        dq = shared_rule(b, "py-char-dq", PY_CHAR_DQ)
        sq = shared_rule(b, "py-char-sq", PY_CHAR_SQ)
        body = f'{literal(chr(34))} {dq}* {literal(chr(34))} | "\'" {sq}* "\'"'
        return shared_rule(b, f"{self.name}-string", body)

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        char = self.char(b)
        sq = PY_CHAR_SQ
        return [
            KeySyntax('"', '"', _json_unit, PY_PLAIN_DQ, f'({char})* "\\""', char, no_key_escapes),
            KeySyntax("'", "'", lambda ch: ch, PY_PLAIN_SQ, f'({sq})* "\'"', sq, no_key_escapes),
        ]


@dataclass(frozen=True)
class BareKeyCodec(Codec):
    """Bare keys, strings between ``string_quote`` tokens, no spaces (``{k:<|"|>v<|"|>,n:1}``);
    its name and older names are the value codec's (``dialect/value_codecs/bare_key.py``)."""

    name: ClassVar[str] = BareKeyValueCodec.name
    aliases: ClassVar[tuple[str, ...]] = BareKeyValueCodec.aliases
    bare_keys: ClassVar[bool] = True
    canonical_space: ClassVar[str] = ""
    breaks: ClassVar[bool] = False

    def encode(self, value: Any) -> str:
        return encode_bare_key_value(value, quote=self.string_quote)

    def key(self, key: str) -> str:
        return literal(key)

    def quote_key(self, content: str) -> str:
        return content

    def content_text(self, s: str) -> str:
        return literal(s)

    def ws(self, b: GbnfBuilder) -> str:
        return '""'

    def char_body(self) -> str:
        return f"[^{_class_char(self.string_quote[0])}]"

    def quote_token(self) -> str:
        return self.string_quote

    def any_string(self, b: GbnfBuilder) -> str:
        body = f"{literal(self.string_quote)} {until(b, self.string_quote, hint='g4str')}"
        return shared_rule(b, f"{self.name}-string", body)

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        return []


def shared_rule(b: GbnfBuilder, name: str, body: str) -> str:
    """The rule ``name`` defined once per grammar."""
    key = ("shared", name)
    if key not in b.memo:
        b.memo[key] = b.add(name, body)
    return b.memo[key]


_REGISTRY: dict[str, type[Codec]] = {}
_ALIASES: dict[str, str] = {}
_DEFAULT: dict[str, Codec] = {}


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Make ``cls`` available to ``codec_for`` under its name and aliases."""
    _REGISTRY[cls.name] = cls
    _DEFAULT[cls.name] = cls()
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


for _cls in (JsonCodec, JsonInStringCodec, PythonCodec, BareKeyCodec):
    register_codec(_cls)


def codec_names() -> list[str]:
    """Every registered codec name and alias."""
    return sorted([*_REGISTRY, *_ALIASES])


def codec_for(
    name: CodecName, layout: ArgumentLayout = "free", *, string_quote: str = TOKEN_QUOTE
) -> Codec:
    """The codec ``name`` with argument layout ``layout`` (and string quote token)."""
    name = _ALIASES.get(name, name)
    if layout == "free" and string_quote == TOKEN_QUOTE:
        return _DEFAULT[name]
    return _REGISTRY[name](layout, string_quote)


def _json_unit(ch: str) -> str:
    return json.dumps(ch, ensure_ascii=False)[1:-1]


def _class_char(c: str) -> str:
    """``c`` inside a GBNF character class."""
    return "\\" + c if c in "]^-\\" else c
