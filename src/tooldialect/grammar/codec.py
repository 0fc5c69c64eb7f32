"""Value syntaxes ("codecs") a schema can be compiled into: ``Codec`` compiles any value codec's
declared ``Syntax`` (``dialect/value_codecs``: JSON, Python literals, bare keys with token-quoted
strings, JavaScript, YAML flow, TOML, Lua, Ruby, PHP, EDN...), chosen by name through
``codec_for``; ``JsonInStringCodec`` spells JSON embedded inside a JSON string
(``arguments_as_string``), ``JsonInMarkupCodec`` JSON escaped for markup (an element body's
``escape_json``).

The schema converter is written once against ``Codec``; a codec only says how scalars,
strings, keys and separators are spelled, read off its syntax. Constants are spelled with the
same writer ``DialectSpec.render_call`` uses, so the grammar and the renderer cannot disagree.
A value codec needs no code here: its module declares its syntax, and the first
``codec_for`` of its name makes its grammar class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal, cast

from ..dialect.value_codecs import TOKEN_QUOTE, Syntax, ValueCodec, value_codec
from ..dialect.value_codecs.markup import MarkupCodec, markup_codec
from ..dialect.value_codecs.syntax import PlainStrings
from .gbnf import GbnfBuilder, char_class, literal, until
from .key_syntax import BARE_KEY, JSON_PLAIN, KeySyntax, json_key_escapes, no_key_escapes

__all__ = [
    "DEFAULT_ARGUMENT_LAYOUT",
    "LAYOUTS",
    "ArgumentLayout",
    "BareKeyCodec",
    "Codec",
    "CodecName",
    "JsonCodec",
    "JsonInMarkupCodec",
    "JsonInStringCodec",
    "PythonCodec",
    "codec_class",
    "codec_for",
    "codec_names",
    "forget_codec",
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
# A JSON string char as it reads once the JSON text is itself encoded into a JSON string.
EMBEDDED_CHAR = (
    '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\\\\\" ("\\\\\\"" | "\\\\\\\\" | [/bfnrt] | "u" [0-9a-fA-F]{4})'
)


@dataclass(frozen=True)
class Codec:
    """How one value syntax spells things, read off its value codec's ``Syntax`` (JSON's by
    default). Methods return GBNF expressions or rule names."""

    name: ClassVar[str] = "json"
    aliases: ClassVar[tuple[str, ...]] = ()
    """Older names ``codec_for`` still accepts."""
    value_name: ClassVar[str | None] = None
    """The value codec whose syntax this spells (``None``: the one named ``name``)."""

    layout: ArgumentLayout = "free"
    """``"canonical"``: separators are written as the codec's writer writes them (``", "`` and
    ``": "`` in JSON), nothing pads a bracket."""
    string_quote: str = TOKEN_QUOTE
    """The quote of strings (``PythonBody.string_quote``): a token-quoted codec's token, or
    which of a codec's quotes it writes."""

    @cached_property
    def value(self) -> ValueCodec:
        """The value codec this spells."""
        return value_codec(self.value_name or self.name)

    @cached_property
    def syntax(self) -> Syntax:
        return self.value.syntax(self.string_quote)

    @cached_property
    def prefix(self) -> str:
        """Rule names' prefix: the name, and which quote where the codec writes several."""
        quotes = self.value.quotes
        if self.string_quote in quotes[1:]:
            return f"{self.name}-q{quotes.index(self.string_quote)}"
        return self.name

    @property
    def bare_keys(self) -> bool:
        """Keys may be unquoted identifiers (``{k:v}``)."""
        return self.syntax.keys != "quoted"

    @property
    def breaks(self) -> bool:
        """Its values may span lines (``"natural"`` allows the breaks; else it is canonical)."""
        return self.syntax.breaks

    def text(self, s: str) -> str:
        """A literal piece of structure (``{``, ``,`` ...) in this codec."""
        return literal(s)

    def brackets(self, kind: Literal["object", "array"]) -> tuple[str, str]:
        """GBNF of the opening and closing bracket of an object or an array."""
        s = self.syntax
        if kind == "object":
            return self.text(s.object_open), self.text(s.object_close)
        return self.text(s.array_open), self.text(s.array_close)

    def encode(self, value: Any) -> str:
        """The exact text of a constant value."""
        return self.value.encode(value, quote=self.string_quote)

    def const(self, value: Any) -> str:
        return literal(self.encode(value))

    def key(self, key: str) -> str:
        return literal(self.syntax.write_key(key))

    def argument_key(self, key: str) -> str:
        """A call's argument key, as the call writes it before its ``assign``."""
        return literal(self.value.encode_key(key, quote=self.string_quote))

    def quote_key(self, content: str) -> str:
        """A key whose content is the expression ``content``."""
        s = self.syntax
        if s.keys == "bare":
            return f"{literal(s.key_prefix)} {content}" if s.key_prefix else content
        return self._wrap_key(self.quote(content))

    def _wrap_key(self, quoted: str) -> str:
        open_, close = self.syntax.quoted_key
        return f"{literal(open_)} {quoted} {literal(close)}" if open_ else quoted

    def content_text(self, s: str) -> str:
        """A literal piece of string content, as this codec writes it inside a string."""
        return literal(self.syntax.strings[0].escape(s))

    def ws(self, b: GbnfBuilder) -> str:
        return shared_rule(b, "ws", WS) if self.syntax.free_space else '""'

    def pad(self, b: GbnfBuilder) -> str:
        """Whitespace just inside ``{ }`` (an object's brackets)."""
        if self._natural():
            return shared_rule(b, "break", f"({BREAK})?")
        if self.layout == "free":
            return self.ws(b)
        return f"{literal(self.syntax.pad)}?" if self.syntax.pad else '""'

    def item_pad(self, b: GbnfBuilder) -> str:
        """Whitespace just inside ``[ ]`` (an array's brackets)."""
        if self._natural() or self.layout == "free":
            return self.pad(b)
        return '""'

    def bracketings(self, b: GbnfBuilder) -> list[Bracketing]:
        """The layouts an object's members may take, each an alternative of its own. One in
        the canonical and free layouts; under natural, the canonical one and one per
        pretty-printer's indent (``PRETTY_INDENTS``), so that the model's first line break
        picks the indent and every later break and indent is forced text."""
        if not self._natural():
            return [(self.pad(b), self.sep(b), self.pad(b))]
        return self._pretty(self.syntax.member_sep)

    def item_bracketings(self, b: GbnfBuilder) -> list[Bracketing]:
        """The layouts an array's items may take (``bracketings``)."""
        if not self._natural():
            return [(self.item_pad(b), self.item_sep(b), self.item_pad(b))]
        return self._pretty(self.syntax.items_sep)

    def _pretty(self, sep: str) -> list[Bracketing]:
        out: list[Bracketing] = [('""', self.text(sep), '""')]
        core = sep.strip()
        for step, width in PRETTY_INDENTS:
            line = "\n" + " " * width
            out.append(
                (literal(line), self.text(core) + " " + literal(line), literal(line[:-step]))
            )
        return out

    @property
    def any_order(self) -> bool:
        """Whether an object's properties (a call's arguments) may come in any order. Under
        ``"natural"`` the model keeps its own layout, the order of its keys included (Qwen2.5
        1.5B writes an optional key before another the schema lists first); elsewhere the
        schema's order, which structured output relies on (``reasoning`` before ``answer``)."""
        return self.layout == "natural"

    def sep(self, b: GbnfBuilder) -> str:
        """Between two members of an object."""
        return self._around(b, self.syntax.member_sep, breaks=True)

    def item_sep(self, b: GbnfBuilder) -> str:
        """Between two items of an array."""
        return self._around(b, self.syntax.items_sep, breaks=True)

    def colon(self, b: GbnfBuilder) -> str:
        """Between a key and its value."""
        return self._around(b, self.syntax.key_sep, breaks=False)

    def _around(self, b: GbnfBuilder, sep: str, *, breaks: bool) -> str:
        core = sep.strip()
        if self._natural() and breaks:
            rest = sep[len(core) :]
            space = self.text(rest) if rest else '""'
            return shared_rule(
                b, f"{self.prefix}-break-sep", f"{self.text(core)} ({space} | {BREAK})"
            )
        if self.layout != "free":  # canonical, and a natural colon: as the writer writes it
            return self.text(sep)
        ws = self.ws(b)
        if not core:  # whitespace apart (EDN): its own, then more
            return f"{self.text(sep)} {ws}"
        return f"{ws} {self.text(core)} {ws}"

    def _natural(self) -> bool:
        return self.layout == "natural" and self.breaks

    def char_body(self) -> str:
        """One character of string content, as a GBNF expression."""
        return self.syntax.strings[0].char

    def char(self, b: GbnfBuilder) -> str:
        """One character of string content (for length-bounded strings)."""
        return shared_rule(b, f"{self.prefix}-char", self.char_body())

    def quote_token(self) -> str:
        """The text around a string."""
        return self.syntax.strings[0].open

    def quote(self, content: str) -> str:
        """A string whose content is the expression ``content``."""
        form = self.syntax.strings[0]
        return f"{literal(form.open)} {content} {literal(form.close)}"

    def quoted_string(self, b: GbnfBuilder) -> str:
        """Any string in one of the quotes the grammar admits (``Syntax.grammar_strings``)."""
        forms = self.syntax.strings[: self.syntax.grammar_strings]
        if len(forms) == 1:
            form = forms[0]
            if form.escaping == "none":
                return f"{literal(form.open)} {until(b, form.close, hint=form.until_hint)}"
            return self.quote(f"{self.char(b)}*")
        alts = []
        for i, form in enumerate(forms):
            chars = shared_rule(b, form.rule or f"{self.prefix}-char{i}", form.char)
            alts.append(f"{literal(form.open)} {chars}* {literal(form.close)}")
        return " | ".join(alts)

    def any_string(self, b: GbnfBuilder) -> str:
        body = self.quoted_string(b)
        if self.syntax.plain is not None:
            body = f"{body} | {plain_strings(b, self.syntax.plain)}"
        return shared_rule(b, f"{self.prefix}-string", body)

    def scalar(self, b: GbnfBuilder, kind: Literal["true", "false", "null"]) -> str:
        value = {"true": True, "false": False, "null": None}[kind]
        return self.const(value)

    def bare_key(self, ident: str) -> str:
        """A bare key whose identifier is the expression ``ident`` (EDN's ``:`` before it)."""
        prefix = self.syntax.key_prefix
        return f"{literal(prefix)} {ident}" if prefix else ident

    def any_key(self, b: GbnfBuilder) -> str:
        """Any key in this codec."""
        keys = self.syntax.keys
        if keys == "quoted":
            return self.any_string(b)
        if keys == "bare":
            return self.bare_key(BARE_KEY)
        quoted = self._wrap_key(f"({self.quoted_string(b)})")
        bare = self.bare_key(f"({self.syntax.bare_key_grammar})")
        return shared_rule(b, f"{self.prefix}-key", f"{bare} | {quoted}")

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        """How a quoted key is spelled, per quote (``key_syntax``; bare keys have none)."""
        if self.syntax.keys == "bare":
            return []
        open_, close = self.syntax.quoted_key
        out = []
        for i, form in enumerate(self.syntax.strings[: self.syntax.grammar_strings]):
            if form.escaping == "none":
                continue
            char = self.char(b) if i == 0 else form.char
            escapes = json_key_escapes if form.json_key_escapes else no_key_escapes
            end = form.close + close
            rest = f"({char})* {literal(end)}"
            out.append(
                KeySyntax(open_ + form.open, end, form.escape, form.plain, rest, char, escapes)
            )
        return out


class JsonCodec(Codec):
    """JSON, as ``json.dumps`` writes it."""


@dataclass(frozen=True)
class JsonInStringCodec(Codec):
    """JSON text that is itself the content of a JSON string (``arguments_as_string``)."""

    name: ClassVar[str] = "json-in-string"
    value_name: ClassVar[str | None] = "json"

    @property
    def breaks(self) -> bool:
        return False

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

    def quote(self, content: str) -> str:
        q = literal(self.quote_token())
        return f"{q} {content} {q}"

    def key(self, key: str) -> str:
        return self.const(key)

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
class JsonInMarkupCodec(Codec):
    """JSON text escaped by a markup codec (``ElementBody.escape_json``: ``{{ v | tojson | e
    }}``), whose name ``string_quote`` holds: ``"`` is ``&#34;``, ``<`` is ``&lt;``..."""

    name: ClassVar[str] = "json-in-markup"
    value_name: ClassVar[str | None] = "json"

    @cached_property
    def markup(self) -> MarkupCodec:
        return markup_codec(self.string_quote)

    @cached_property
    def prefix(self) -> str:
        return f"{self.name}-{self.string_quote}"

    def text(self, s: str) -> str:
        return literal(self.markup.escape(s))

    def encode(self, value: Any) -> str:
        return self.markup.escape(json.dumps(value, ensure_ascii=False))

    def content_text(self, s: str) -> str:
        return literal(self.markup.escape(json.dumps(s, ensure_ascii=False)[1:-1]))

    def _plain(self) -> str:
        """Class body of what a content character written as it is is not."""
        escaped = "".join(c for c, _ in self.markup.entities)
        body = char_class('"\\' + escaped)[1:-1]
        return body + "\\x7F\\x00-\\x1F"

    def char_body(self) -> str:
        entities = [literal(e) for c, e in self.markup.entities if c != '"']
        quote = literal(self.quote_token())
        escape = f'"\\\\" ({quote} | ["\\\\/bfnrt] | "u" [0-9a-fA-F]{{4}})'
        return " | ".join([f"[^{self._plain()}]", *entities, escape])

    def quote_token(self) -> str:
        return self.markup.escape('"')

    def quote(self, content: str) -> str:
        q = literal(self.quote_token())
        return f"{q} {content} {q}"

    def quoted_string(self, b: GbnfBuilder) -> str:
        return self.quote(f"{self.char(b)}*")

    def key(self, key: str) -> str:
        return self.const(key)

    def key_syntaxes(self, b: GbnfBuilder) -> list[KeySyntax]:
        char, q = self.char(b), self.quote_token()
        return [
            KeySyntax(
                q,
                q,
                lambda ch: self.markup.escape(json.dumps(ch, ensure_ascii=False)[1:-1]),
                self._plain(),
                f"({char})* {literal(q)}",
                char,
                no_key_escapes,
            )
        ]


def shared_rule(b: GbnfBuilder, name: str, body: str) -> str:
    """The rule ``name`` defined once per grammar."""
    key = ("shared", name)
    if key not in b.memo:
        b.memo[key] = b.add(name, body)
    return b.memo[key]


def plain_strings(b: GbnfBuilder, plain: PlainStrings) -> str:
    """A rule for the strings written without quotes: a trie over the reserved words, each
    node able to end only where no reserved word ends, or to leave the trie with a character no
    reserved word has there (YAML's ``true`` is no plain string; ``trues``, ``tru`` are)."""
    key = ("plain", plain.first, plain.middle, plain.last, tuple(sorted(plain.reserved)))
    if key in b.memo:
        return b.memo[key]
    words = [w for w in plain.reserved if w and all(c in plain.last for c in w[1:])]
    words = sorted(w for w in words if w[0] in plain.first)
    done = b.add("plain-done", f"({char_class(plain.middle)}* {char_class(plain.last)})?")
    more = b.add("plain-more", f"{char_class(plain.middle)}* {char_class(plain.last)}")

    def node(prefix: str) -> str:
        here = [w for w in words if w.startswith(prefix)]
        children = sorted({w[len(prefix)] for w in here if len(w) > len(prefix)})
        alts = ['""'] if prefix and prefix not in here else []
        alts += [f"{literal(c)} {node(prefix + c)}" for c in children]
        allowed = plain.middle if prefix else plain.first
        ending = "".join(c for c in allowed if c not in children and c in plain.last)
        going = "".join(c for c in allowed if c not in children and c not in plain.last)
        if ending:
            alts.append(f"{char_class(ending)} {done}")
        if going:
            alts.append(f"{char_class(going)} {more}")
        return b.add("plain-node", " | ".join(alts))

    b.memo[key] = node("")
    return b.memo[key]


_REGISTRY: dict[str, type[Codec]] = {}
_ALIASES: dict[str, str] = {}
_DEFAULT: dict[str, Codec] = {}


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Make ``cls`` available to ``codec_for`` under its name and aliases (a grammar of a
    value codec's own, where its syntax does not say enough)."""
    _REGISTRY[cls.name] = cls
    _DEFAULT[cls.name] = cls()
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


def forget_codec(name: CodecName) -> None:
    """Drop the grammar class of ``name`` and its aliases (a test's codec, once it is done)."""
    cls = _REGISTRY.pop(name, None)
    _DEFAULT.pop(name, None)
    for alias in cls.aliases if cls is not None else ():
        _ALIASES.pop(alias, None)


def codec_class(name: CodecName) -> type[Codec]:
    """The grammar class of the codec ``name``: a registered one, else one made (once) from the
    value codec of that name (``DialectError`` where there is none)."""
    name = _ALIASES.get(name, name)
    if name not in _REGISTRY:
        vc = value_codec(name)
        if vc.name not in _REGISTRY:
            made = type(f"{vc.name.title().replace('-', '')}Codec", (Codec,), {"name": vc.name})
            register_codec(cast("type[Codec]", dataclass(frozen=True)(made)))
        name = vc.name
    return _REGISTRY[name]


for _cls in (JsonCodec, JsonInStringCodec, JsonInMarkupCodec):
    register_codec(_cls)
PythonCodec = codec_class("python")
BareKeyCodec = codec_class("bare-key")


def codec_names() -> list[str]:
    """Every registered codec name and alias."""
    return sorted([*_REGISTRY, *_ALIASES])


def codec_for(
    name: CodecName, layout: ArgumentLayout = "free", *, string_quote: str = TOKEN_QUOTE
) -> Codec:
    """The codec ``name`` with argument layout ``layout`` (and string quote)."""
    cls = codec_class(name)
    if layout == "free" and string_quote == TOKEN_QUOTE:
        return _DEFAULT[cls.name]
    return cls(layout, string_quote)
