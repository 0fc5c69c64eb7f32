"""Object keys in a JSON Schema grammar: any key *other than* the declared ones.

Where extra keys are allowed (``additionalProperties`` true or a schema), an extra key must not
be a declared key, or ``{"id": "x"}`` would pass for ``{"properties": {"id": {"type":
"integer"}}, "additionalProperties": true}`` (the declared key written again, as an extra, with
a value its own schema forbids). The rule is the complement of the declared keys: a trie over
their spelled characters, where each node may close the key only if it is not a declared key,
continue along the trie, or leave it with a character no declared key has there.

Escapes: at a trie node, an escape that could spell the next character of a declared key (JSON's
``\\/`` for ``/``, ``\\uXXXX`` for anything) is not allowed; other escapes leave the trie. Once a
key has left the trie, anything goes. Two extra keys may still repeat each other (no
context-free grammar excludes that); the parser keeps the last, as ``json.loads`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .gbnf import GbnfBuilder, char_class, literal

if TYPE_CHECKING:
    from .codec import Codec

__all__ = [
    "BARE_KEY",
    "JSON_PLAIN",
    "PY_PLAIN_DQ",
    "PY_PLAIN_SQ",
    "KeySyntax",
    "any_key",
    "json_key_escapes",
    "key_other_than",
    "no_key_escapes",
]

BARE_KEY = "[a-zA-Z_] [a-zA-Z0-9_]*"
"""A key written without quotes: an identifier."""
_IDENT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
JSON_PLAIN = '"\\\\\\x7F\\x00-\\x1F'  # what a plain JSON string character is not
PY_PLAIN_DQ = '"\\\\\\x00-\\x1F'
PY_PLAIN_SQ = "'\\\\\\x00-\\x1F"


@dataclass(frozen=True)
class KeySyntax:
    """One way a codec quotes a key (a codec may have several: Python's two quotes)."""

    open: str
    close: str
    unit: Callable[[str], str]
    """How one key character is spelled inside the quotes."""
    plain: str
    """Class body of the characters a plain (unescaped) unit may NOT be (negated class)."""
    rest: str
    """Any further content, then the close (a rule or expression)."""
    char: str
    """One content character, any spelling."""
    escapes: Callable[[set[str]], list[str]]
    """Escape alternatives that leave the trie at a node whose next units are the given set."""


def json_key_escapes(children: set[str]) -> list[str]:
    # \" \\ \b ... spell characters that appear in a declared key only as those same escapes
    simple = [e for e in '"\\bfnrt' if "\\" + e not in children]
    if "/" not in children:
        simple.append("/")
    alts = [f'"\\\\" {char_class("".join(simple))}'] if simple else []
    if not children:
        alts.append('"\\\\u" [0-9a-fA-F]{4}')
    return alts


def no_key_escapes(children: set[str]) -> list[str]:
    return []


def any_key(c: Codec, b: GbnfBuilder) -> str:
    """Any key in codec ``c``."""
    return BARE_KEY if c.bare_keys else c.any_string(b)


def key_other_than(c: Codec, b: GbnfBuilder, keys: Iterable[str]) -> str:
    """A rule for any key of codec ``c`` except ``keys`` (all keys when there are none)."""
    words = sorted(dict.fromkeys(keys))
    if not words:
        return any_key(c, b)
    memo_key = ("key-other-than", c.name, tuple(words))
    if memo_key in b.memo:
        return b.memo[memo_key]
    if c.bare_keys:
        alts = [_ident_other_than(b, words)]
    else:
        alts = [_trie_complement(b, s, words) for s in c.key_syntaxes(b)]
    name = b.add("other-key", " | ".join(alts))
    b.memo[memo_key] = name
    return name


def _trie_complement(b: GbnfBuilder, s: KeySyntax, words: list[str]) -> str:
    spelled = [[s.unit(ch) for ch in w] for w in words]
    rest = b.add("key-rest", s.rest)

    def node(prefix: tuple[str, ...]) -> str:
        depth = len(prefix)
        here = [w for w in spelled if tuple(w[:depth]) == prefix]
        is_word = any(len(w) == depth for w in here)
        children = sorted({w[depth] for w in here if len(w) > depth})
        if not children:  # a declared key ends here: only a longer key may follow
            return b.add("key-leaf", f"({s.char}) {rest}")
        alts = [] if is_word else [literal(s.close)]
        alts += [f"{literal(u)} {node((*prefix, u))}" for u in children]
        plain_children = "".join(u for u in children if len(u) == 1)
        alts.append(f"{char_class(plain_children, negate=True)[:-1]}{s.plain}] {rest}")
        alts += [f"{e} {rest}" for e in s.escapes(set(children))]
        return b.add("key-node", " | ".join(alts))

    return f"{literal(s.open)} {node(())}"


def _ident_other_than(b: GbnfBuilder, words: list[str]) -> str:
    tail = "[a-zA-Z0-9_]*"

    def node(prefix: str) -> str:
        here = [w for w in words if w.startswith(prefix)]
        is_word = prefix in here
        children = sorted({w[len(prefix)] for w in here if len(w) > len(prefix)})
        allowed = _IDENT if prefix else _IDENT[:52] + "_"
        others = "".join(ch for ch in allowed if ch not in children)
        alts = ['""'] if prefix and not is_word else []
        alts += [f"{literal(ch)} {node(prefix + ch)}" for ch in children]
        if others:
            alts.append(f"{char_class(others)} {tail}")
        return b.add("ident-node", " | ".join(alts))

    return node("")
