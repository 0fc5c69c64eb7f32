"""How a codec quotes an object key: the spelling ``schema.object_keys`` builds its key rules
from.

Each ``Codec`` (``codec.py``) lists its ``KeySyntax``es; ``schema.object_keys`` reads them to
write "any key but the declared ones". It sits below both: ``codec`` needs the spellings,
``schema.object_keys`` needs the codec, and neither imports the other in a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .gbnf import char_class

__all__ = [
    "BARE_KEY",
    "JSON_PLAIN",
    "PY_PLAIN_DQ",
    "PY_PLAIN_SQ",
    "KeySyntax",
    "json_key_escapes",
    "no_key_escapes",
]

BARE_KEY = "[a-zA-Z_] [a-zA-Z0-9_]*"
"""A key written without quotes: an identifier."""
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
