"""Lazy-grammar triggers detected incrementally, instead of llama.cpp's scan of the whole text.

While a lazy grammar awaits its trigger, llama.cpp appends every token's piece to a buffer and
runs each trigger pattern as a full match over the whole buffer (``std::regex_match``): the cost
per token grows with the answer, so a long prose answer is quadratic. Most trigger patterns the
grammar builder writes have the shape ``^[\\s\\S]*?(CORE)[\\s\\S]*`` with a ``CORE`` of bounded
width; for those a full match of the buffer is the same as finding ``CORE`` anywhere in it, the
capture starting at the leftmost occurrence (the lazy prefix tries shorter prefixes first). A
new occurrence must end in the newest piece (none existed before), so only the last ``width``
characters can still complete one: :class:`TriggerWatch` searches just that tail.

Engine-neutral (text in, where the capture starts out): the in-process engine's
``WatchedGrammar`` (``in_process.watched_grammar``) and the server engine's strict switch
(``llama_server.strict_switch``) both watch with it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

__all__ = ["TriggerWatch", "first_group", "searchable_core"]

_PREFIX = r"^[\s\S]*?"
_SUFFIX = r"[\s\S]*"
_CONTEXTUAL = re.compile(r"\\[bBAZ]|\(\?<|\(\?[a-zA-Z]|\\\d|\(\?P=")
"""Constructs whose meaning depends on text outside the match, or on flags: not searched."""


def _max_width(core: str) -> tuple[int, int] | None:
    """The least and greatest length of a match of ``core`` (the stdlib's own regex parser;
    deprecated as a public module, hence the quiet import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import sre_parse
    try:
        lo, hi = sre_parse.parse(core).getwidth()
    except (re.error, OverflowError, RecursionError):
        return None
    return int(lo), int(hi)


def first_group(m: re.Match[str]) -> int | None:
    """Where llama.cpp starts the grammar: the first non-empty capture group."""
    return next((m.start(i) for i in range(1, len(m.groups()) + 1) if m.group(i)), None)


def _top_level(text: str) -> list[tuple[int, str]]:
    """``(depth, char)`` of each unescaped character outside character classes (depth before
    it); escapes and classes are reported at depth -1 so they never count as structure."""
    out, depth, i, in_class = [], 0, 0, False
    while i < len(text):
        c = text[i]
        if c == "\\":
            out += [(-1, c), (-1, text[i + 1 : i + 2])]
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append((-1, c))
        elif c == "[":
            in_class = True
            out.append((-1, c))
            if text[i + 1 : i + 2] == "]":
                out.append((-1, "]"))
                i += 1
        else:
            out.append((depth, c))
            depth += {"(": 1, ")": -1}.get(c, 0)
        i += 1
    return out


def _reasoning_split(pattern: str) -> tuple[str, str, str] | None:
    r"""``(B, C, REST)`` of ``^(?:B[\s\S]*?C|(?!B))REST`` (the builder's "not inside the
    reasoning block" prefix), else ``None``."""
    if not pattern.startswith("^(?:"):
        return None
    chars = _top_level(pattern)
    end = next((i for i, (d, c) in enumerate(chars) if i > 1 and d == 1 and c == ")"), None)
    if end is None:
        return None
    bars = [i for i, (d, c) in enumerate(chars[:end]) if d == 1 and c == "|"]
    if len(bars) != 1:
        return None
    first, second = pattern[4 : bars[0]], pattern[bars[0] + 1 : end]
    if not (second.startswith("(?!") and second.endswith(")")):
        return None
    opener = second[3:-1]
    if not first.startswith(opener + _PREFIX[1:]):
        return None
    close = first[len(opener) + len(_PREFIX) - 1 :]
    return opener, close, pattern[end + 1 :]


def searchable_core(pattern: str) -> tuple[re.Pattern[str], int | None] | None:
    r"""How to watch the full-match ``pattern``: ``(M, width)`` for ``^[\s\S]*?M[\s\S]*``
    with an ``M`` of bounded ``width`` (searched in the tail), ``(M, None)`` for an anchored
    ``^M[\s\S]*`` whose ``M`` holds no any-character run (matched at the start: it fails as
    soon as the text leaves its prefix). ``M`` must have a capture group, match no empty text
    and read no context outside its match (anchors, lookbehind, word boundaries,
    backreferences). ``None``: not watchable, llama.cpp scans it."""
    if not (pattern.startswith("^") and pattern.endswith(_SUFFIX)):
        return None
    searched = pattern.startswith(_PREFIX)
    middle = pattern[len(_PREFIX) if searched else 1 : len(pattern) - len(_SUFFIX)]
    if _CONTEXTUAL.search(middle) or re.search(r"(?<!\\)[$]|(?<![\\\[])\^", middle):
        return None
    if not searched and (r"[\s\S]" in middle or "." in middle.replace("\\.", "")):
        return None
    width = _max_width(middle)
    if width is None or width[0] == 0:
        return None
    try:
        compiled = re.compile(middle)
    except re.error:
        return None
    if compiled.groups == 0:
        return None
    if not searched:
        return compiled, None
    return (compiled, width[1]) if width[1] < 1 << 16 else None


class _Plan:
    """How one watchable pattern is checked: ``core`` searched in the tail (``width``) or
    matched at an anchor (``width is None``); with a reasoning prefix, only after the reasoning
    block's first close (searched) or right after any close (anchored), as the lazy
    ``[\\s\\S]*?`` before the close backtracks; without one opened, from the start."""

    def __init__(
        self,
        core: tuple[re.Pattern[str], int | None],
        reasoning: tuple[re.Pattern[str], re.Pattern[str], int] | None = None,
    ) -> None:
        self.core, self.width = core
        self.reasoning = reasoning
        self.open_end: int | None = None
        self.anchors: list[int] = []  # where each close of the reasoning block ends

    @classmethod
    def of(cls, pattern: str) -> _Plan | None:
        core = searchable_core(pattern)
        if core is not None:
            return cls(core)
        split = _reasoning_split(pattern)
        if split is None:
            return None
        opener, close, rest = split
        core = searchable_core("^" + rest)
        bounds = _max_width(close)
        if core is None or bounds is None or bounds[0] == 0 or bounds[1] >= 1 << 16:
            return None
        if _CONTEXTUAL.search(opener + close) or "$" in opener + close:
            return None
        try:
            return cls(core, (re.compile(opener), re.compile(close), bounds[1]))
        except re.error:
            return None

    def _rest(self, text: str, old: int, base: int) -> int | None:
        if self.width is None:
            m = self.core.match(text, base)
        else:
            m = self.core.search(text, max(base, old - self.width + 1))
        return first_group(m) if m is not None else None

    def check(self, text: str, old: int) -> int | None:
        """Where the capture starts if the pattern fully matches ``text`` now (it did not
        match ``text[:old]``), else ``None``."""
        if self.reasoning is None:
            return self._rest(text, old, 0)
        opener, close, close_width = self.reasoning
        fresh = False
        if self.open_end is None:
            m = opener.match(text)
            if m is None:
                return self._rest(text, old, 0)  # no reasoning block: from the start
            self.open_end, fresh = m.end(), True
        pos = self.open_end if fresh else max(self.open_end, old - close_width + 1)
        had = len(self.anchors)
        for c in close.finditer(text, pos):
            if c.end() not in self.anchors:
                self.anchors.append(c.end())
        if not self.anchors:
            return None
        if self.width is not None:
            first = self.anchors[0]
            return self._rest(text, first if had == 0 else old, first)
        for a in self.anchors:
            m = self.core.match(text, a)
            start = first_group(m) if m is not None else None
            if start is not None:
                return start
        return None


class TriggerWatch:
    """llama.cpp's lazy trigger rule (trigger tokens first, then the patterns in order, the first
    full match winning, the grammar starting at its first non-empty group), checked on the tail
    of the text that can still complete a trigger."""

    def __init__(self, tokens: Sequence[int], plans: Sequence[_Plan]):
        self._tokens = frozenset(tokens)
        self._plans = list(plans)
        self.text = ""
        """The text so far, while waiting."""
        self.offsets: list[int] = []
        """Where each fed token's text starts in :attr:`text`."""
        self.fired = False
        self.pattern: int | None = None
        """The index of the pattern that fired (``None``: a trigger token, or not fired)."""
        self.start = 0
        """Where the captured text starts in :attr:`text`."""

    @classmethod
    def create(cls, tokens: Sequence[int], patterns: Sequence[str]) -> TriggerWatch | None:
        """A watch for these triggers, or ``None`` when a pattern is not searchable."""
        plans = [_Plan.of(p) for p in patterns]
        found = [p for p in plans if p is not None]
        if len(found) != len(plans):
            return None
        return cls(tokens, found)

    def feed(self, token: int, text: str) -> bool:
        """Feed one accepted token and its text; returns whether a trigger fired with it."""
        if self.fired:
            return False
        if token in self._tokens:
            self.fired, self.start = True, len(self.text)
            return True
        old = len(self.text)
        self.offsets.append(old)
        self.text += text
        for i, plan in enumerate(self._plans):
            start = plan.check(self.text, old)
            if start is not None:
                self.fired, self.pattern, self.start = True, i, start
                return True
        return False

    def first_token(self) -> int:
        """The index of the fed token whose text holds :attr:`start`."""
        lo, hi = 0, len(self.offsets) - 1
        while lo < hi:  # the last token starting at or before ``start``
            mid = (lo + hi + 1) // 2
            if self.offsets[mid] <= self.start:
                lo = mid
            else:
                hi = mid - 1
        return lo
