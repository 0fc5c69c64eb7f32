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

from collections.abc import Iterable

from ..codec import Codec
from ..gbnf import GbnfBuilder, char_class, literal
from ..key_syntax import BARE_KEY, KeySyntax

__all__ = ["BARE_KEY", "any_key", "key_other_than"]

_IDENT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"


def any_key(c: Codec, b: GbnfBuilder) -> str:
    """Any key in codec ``c``."""
    return c.any_key(b)


def key_other_than(c: Codec, b: GbnfBuilder, keys: Iterable[str]) -> str:
    """A rule for any key of codec ``c`` except ``keys`` (all keys when there are none)."""
    words = sorted(dict.fromkeys(keys))
    if not words:
        return any_key(c, b)
    memo_key = ("key-other-than", c.name, c.string_quote, tuple(words))
    if memo_key in b.memo:
        return b.memo[memo_key]
    # a bare key other than the declared ones, and a quoted key other than any declared one
    # (a declared identifier quoted is still that key)
    alts = [c.bare_key(_ident_other_than(b, words))] if c.bare_keys else []
    alts += [_trie_complement(b, s, words) for s in c.key_syntaxes(b)]
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
