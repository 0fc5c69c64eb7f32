"""Text helpers for dialect derivation: a marker-aware lexer, affix diffs and repeat splitting.

Derivation compares renders of one template. Comparing characters would cut through markers
(``<|eot_id|>`` and ``<|eom_id|>`` share ``<|e`` and ``_id|>``), so renders are first split into
*lexemes*: whole markers (``<...>``, ``[UPPER]``, ``<｜...｜>``), words, single whitespace
characters and single punctuation characters. Every cut derivation makes is a lexeme boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "HOLE",
    "Repeat",
    "common_prefix",
    "diff_affixes",
    "is_marker",
    "leading_word",
    "lex",
    "split_repeat",
    "trailing_word",
]

HOLE = "\x00"
"""Stands for a variable part (a call body, a parameter) inside text being analysed."""

_LEXEME_RE = re.compile(
    r"\x00[^\x00]*\x00"  # a hole, kept whole
    r"|<[^<>\s\x00]{1,80}>"  # <tag>, <|token|>, </close>, <｜tool▁sep｜>
    r"|\[/?[A-Z][A-Z0-9_]*\]"  # [TOOL_CALLS], [/INST]
    r"|\w+"
    r"|\s"
    r"|.",
    re.DOTALL,
)


def lex(text: str) -> list[str]:
    """Split ``text`` into lexemes; ``"".join(lex(t)) == t``."""
    return _LEXEME_RE.findall(text)


def is_marker(lexeme: str) -> bool:
    """Whether a lexeme is a whole special marker (``<|...|>``, ``<tag>``, ``[TOOL_CALLS]``)."""
    return len(lexeme) > 2 and (
        (lexeme[0] == "<" and lexeme[-1] == ">") or (lexeme[0] == "[" and lexeme[-1] == "]")
    )


def diff_affixes(a: str, b: str) -> tuple[str, str, str, str]:
    """``(prefix, a_middle, b_middle, suffix)``: the longest common lexeme prefix and suffix."""
    la, lb = lex(a), lex(b)
    p = 0
    while p < len(la) and p < len(lb) and la[p] == lb[p]:
        p += 1
    s = 0
    while s < len(la) - p and s < len(lb) - p and la[-1 - s] == lb[-1 - s]:
        s += 1
    return (
        "".join(la[:p]),
        "".join(la[p : len(la) - s]),
        "".join(lb[p : len(lb) - s]),
        "".join(la[len(la) - s :]),
    )


def common_prefix(items: Sequence[Sequence[str]]) -> int:
    """Length of the common prefix of several lexeme lists."""
    n = 0
    while all(n < len(x) for x in items) and len({x[n] for x in items}) == 1:
        n += 1
    return n


class Repeat:
    """Two repeated units: ``before + open A close + sep + open B close + after``."""

    def __init__(self, before: str, open_: str, close: str, sep: str, after: str) -> None:
        self.before = before
        self.open = open_
        self.close = close
        self.sep = sep
        self.after = after

    def __repr__(self) -> str:
        return (
            f"Repeat(before={self.before!r}, open={self.open!r}, close={self.close!r}, "
            f"sep={self.sep!r}, after={self.after!r})"
        )


def split_repeat(text: str, first: str, second: str) -> Repeat | None:
    """Split ``text`` around the two holes ``first`` and ``second`` (each occurring once).

    The lexemes that repeat just before both holes are the unit's opening, those that repeat
    just after both its closing, and what is left between the units is the separator.
    """
    lx = lex(text)
    try:
        a1, a2 = lx.index(first), lx.index(second)
    except ValueError:
        return None
    if a2 <= a1:
        return None
    k = 0
    while a1 - k - 1 >= 0 and lx[a1 - k - 1] == lx[a2 - k - 1]:
        k += 1
    m = 0
    while a2 + m + 1 < len(lx) and a1 + m + 1 < a2 - k and lx[a1 + m + 1] == lx[a2 + m + 1]:
        m += 1
    return Repeat(
        before="".join(lx[: a1 - k]),
        open_="".join(lx[a1 - k : a1]),
        close="".join(lx[a1 + 1 : a1 + m + 1]),
        sep="".join(lx[a1 + m + 1 : a2 - k]),
        after="".join(lx[a2 + m + 1 :]),
    )


def trailing_word(text: str) -> str:
    """The trailing run of non-marker, non-whitespace lexemes of ``text`` (``functions.``)."""
    lx = lex(text)
    n = 0
    while n < len(lx) and not lx[-1 - n].isspace() and not is_marker(lx[-1 - n]):
        n += 1
    return "".join(lx[len(lx) - n :])


def leading_word(text: str) -> str:
    """The leading run of non-marker, non-whitespace lexemes of ``text``."""
    lx = lex(text)
    n = 0
    while n < len(lx) and not lx[n].isspace() and not is_marker(lx[n]):
        n += 1
    return "".join(lx[:n])
