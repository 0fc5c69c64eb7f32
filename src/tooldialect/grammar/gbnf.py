"""GBNF text primitives: literal/char-class escaping and a rule collector that shares rules.

``GbnfBuilder`` hands out rule names (only ``[a-zA-Z0-9-]``, as llama.cpp requires) and dedups
rules by body, so the JSON primitives of many tools are written once. Everything is linear in the
size of the schemas; nothing re-scans the rule set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "GbnfBuilder",
    "char_class",
    "escape_char",
    "literal",
    "marker_edges",
    "optional_edges",
    "until",
    "without",
]

_NAME_BAD = re.compile(r"[^a-zA-Z0-9-]+")
_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(ch: str, extra: str = "") -> str:
    """``ch`` as GBNF writes it inside a literal (or a class, with ``extra`` = ``"]^-["``)."""
    if ch in _ESC:
        return _ESC[ch]
    if ch in extra:
        return "\\" + ch
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\x{ord(ch):02X}"
    return ch


_LITERAL_TABLE = {ord(c): escape_char(c) for c in [*map(chr, range(0x20)), "\x7f", "\\", '"']}


def literal(text: str) -> str:
    """A GBNF string literal for ``text`` (``""`` is the empty sequence)."""
    return '"' + text.translate(_LITERAL_TABLE) + '"'


def char_class(chars: str, *, negate: bool = False) -> str:
    """A GBNF character class of exactly ``chars`` (or all but them)."""
    body = "".join(escape_char(c, "]^-[") for c in dict.fromkeys(chars))
    return "[" + ("^" if negate else "") + body + "]"


def optional_edges(text: str) -> str:
    """A literal whose leading/trailing whitespace is optional (parsers tolerate its absence).
    Used inside call bodies, where the layout is the model's own and stays exact."""
    core = text.strip()
    if not core:
        return f"{literal(text)}?" if text else ""
    start = text.index(core)
    lead, trail = text[:start], text[start + len(core) :]
    parts = [
        f"{literal(lead)}?" if lead else "",
        literal(core),
        f"{literal(trail)}?" if trail else "",
    ]
    return " ".join(p for p in parts if p)


_EDGE_SLACK = 4
"""Extra whitespace characters allowed on either side of an envelope marker, beyond its own."""


def _edge(own: str) -> str:
    # Parsers drop any whitespace next to a marker, so this stays within what they read. It is
    # bounded, yet wide enough for what a lazy trigger can replay: a tokenizer may merge a
    # marker's last character with following whitespace (">\n\n"), and llama.cpp aborts the
    # process if the replayed text does not fit the grammar.
    return f"[ \\t\\r\\n]{{0,{len(own) + _EDGE_SLACK}}}"


def marker_edges(text: str) -> str:
    """An envelope marker (section/call open and close, separator) with free whitespace around
    it, within bounds: its own leading and trailing whitespace, their absence, or a little more."""
    core = text.strip()
    if not core:
        return _edge(text) if text else ""
    start = text.index(core)
    lead, trail = text[:start], text[start + len(core) :]
    return f"{_edge(lead)} {literal(core)} {_edge(trail)}"


class GbnfBuilder:
    """Collects named rules; ``add`` returns the existing name for a body added before."""

    def __init__(self, *, prefix: str = "") -> None:
        self.prefix = _NAME_BAD.sub("-", prefix)
        self.rules: dict[str, str] = {}
        self._by_body: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self.memo: dict[object, str] = {}
        """Rule names of shared constructs, keyed by what built them."""
        self._documents: dict[int, object] = {}

    def document_key(self, document: object) -> int:
        """A key for ``document`` (a schema that ``$ref`` s point into) in ``memo`` keys: the
        document is held while the builder lives, so that its id is never another's."""
        self._documents.setdefault(id(document), document)
        return id(document)

    def name(self, hint: str) -> str:
        """A fresh rule name from ``hint`` (reserved, body set later with ``define``)."""
        base = self.prefix + (_NAME_BAD.sub("-", hint).strip("-") or "r")
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        name = base if n == 0 else f"{base}-{n}"
        while name in self.rules:
            n += 1
            self._counts[base] = n + 1
            name = f"{base}-{n}"
        self.rules[name] = ""
        return name

    def define(self, name: str, body: str) -> str:
        """Set the body of a reserved rule."""
        self.rules[name] = body
        self._by_body.setdefault(body, name)
        return name

    def add(self, hint: str, body: str) -> str:
        """A rule with ``body``: the existing one if any, else a new one named after ``hint``."""
        found = self._by_body.get(body)
        if found is not None:
            return found
        return self.define(self.name(hint), body)

    def render(self, root: str) -> str:
        """The grammar text with ``root`` first."""
        lines = [f"{root} ::= {self.rules[root]}"]
        lines += [f"{n} ::= {b}" for n, b in self.rules.items() if n != root]
        return "\n".join(lines) + "\n"


def until(b: GbnfBuilder, stop: str, *, hint: str = "until") -> str:
    """A rule matching any text that does not contain ``stop``, followed by ``stop``.

    Built from the KMP automaton of ``stop`` (one rule per matched-prefix length), so text such as
    ``<`` that merely starts like ``stop`` is still allowed.
    """
    n = len(stop)
    fail = [0] * n
    k = 0
    for i in range(1, n):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        if stop[i] == stop[k]:
            k += 1
        fail[i] = k

    def step(state: int, ch: str) -> int:
        while state and stop[state] != ch:
            state = fail[state - 1]
        return state + 1 if stop[state] == ch else 0

    key = ("until", stop)
    if key in b.memo:
        return b.memo[key]
    alphabet = "".join(dict.fromkeys(stop))
    names = [b.name(f"{hint}-{i}") for i in range(n)]
    b.memo[key] = names[0]
    for state in range(n):
        moves = {ch: step(state, ch) for ch in alphabet}
        special = "".join(ch for ch, nxt in moves.items() if nxt != 0)
        alts = [f"{char_class(special, negate=True)} {names[0]}"]
        for ch in special:
            nxt = moves[ch]
            alts.append(literal(ch) if nxt == n else f"{literal(ch)} {names[nxt]}")
        b.define(names[state], " | ".join(alts))
    return names[0]


def without(b: GbnfBuilder, stops: Sequence[str], *, hint: str = "without") -> str:
    """A rule matching any text (the empty text too) that contains none of ``stops``, and
    consumes none of them: what follows it may start with one.

    One rule per state of the stops' Aho-Corasick automaton (the longest end of the text read
    that starts a stop), so text that merely starts like a stop is still allowed."""
    stops = sorted({s for s in stops if s})
    key = ("without", *stops)
    if key in b.memo:
        return b.memo[key]
    states = sorted({s[:i] for s in stops for i in range(len(s))}, key=len)
    alphabet = "".join(dict.fromkeys("".join(stops)))

    def step(state: str, ch: str) -> str | None:
        text = state + ch
        if any(text.endswith(s) for s in stops):
            return None  # a stop would be complete: not in the text
        return next(text[i:] for i in range(len(text) + 1) if text[i:] in states)

    names = {state: b.name(f"{hint}-{i}") for i, state in enumerate(states)}
    b.memo[key] = names[""]
    for state in states:
        alts = [f"{char_class(alphabet, negate=True)} {names['']}"]
        for ch in alphabet:
            nxt = step(state, ch)
            if nxt is not None:
                alts.append(f"{literal(ch)} {names[nxt]}")
        b.define(names[state], "(" + " | ".join(alts) + ")?")
    return names[""]
