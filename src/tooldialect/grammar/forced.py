"""Forced text: a small incremental automaton over a GBNF grammar.

The automaton follows llama.cpp's own grammar machinery (a set of parse stacks whose tops are
character classes; rule references expanded on demand; repetitions rewritten into helper rules)
at the level of characters, in Python, over the grammars ``build_grammar`` writes. It answers
one question cheaply, without a vocabulary mask: *which text is the only legal continuation
here?* The answer is the longest string such that, at every step, every live stack wants the
same single character and none could stop. Where more than one continuation is legal (a free
value, optional whitespace, the end of the grammar), nothing is forced.

It is an accelerator, never a gate: llama.cpp's grammar sampler still checks every token, so
an automaton that disagrees (a construct it does not read) can only lose speed, not accept text
the grammar would not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import GrammarError

__all__ = ["ForcedText", "GbnfAutomaton", "continuation_gbnf", "parse_gbnf"]

_MAX_STACKS = 512
"""Past this many live stacks the automaton gives up (it then forces nothing)."""
_MAX_FORCED = 512
"""Longest forced string computed at once."""
_MAX_NEXT_CHARS = 16
"""Past this many possible next characters, :attr:`ForcedText.next_chars` is not listed."""

# an element: ("c", ranges, negated) for a character class, ("r", rule id) for a reference
Ranges = tuple[tuple[int, int], ...]
Element = tuple[str, Any, bool]


@dataclass
class _Grammar:
    names: dict[str, int] = field(default_factory=dict)
    alts: list[list[list[Element]]] = field(default_factory=list)
    """rule id -> alternatives -> elements."""

    def rule(self, name: str) -> int:
        if name not in self.names:
            self.names[name] = len(self.alts)
            self.alts.append([])
        return self.names[name]

    def helper(self, alternatives: list[list[Element]]) -> int:
        rid = len(self.alts)
        self.names[f"\x00{rid}"] = rid
        self.alts.append(alternatives)
        return rid


class GbnfSyntaxError(GrammarError, ValueError):
    """The automaton cannot read this grammar (fast-forward is then skipped)."""


_NAME = re.compile(r"[a-zA-Z0-9_-]+")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.g = _Grammar()

    def parse(self) -> _Grammar:
        while True:
            self._space(newlines=True)
            if self.i >= len(self.s):
                break
            name = self._name()
            self._space()
            if not self.s.startswith("::=", self.i):
                raise GbnfSyntaxError(f"expected ::= at {self.i}")
            self.i += 3
            rid = self.g.rule(name)
            self.g.alts[rid] = self._alternatives()
        for name, rid in self.g.names.items():
            if not self.g.alts[rid] and not name.startswith("\x00"):
                raise GbnfSyntaxError(f"rule {name!r} is used but never defined")
        return self.g

    def _space(self, *, newlines: bool = False) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            else:
                break

    def _name(self) -> str:
        m = _NAME.match(self.s, self.i)
        if not m:
            raise GbnfSyntaxError(f"expected a rule name at {self.i}")
        self.i = m.end()
        return m.group(0)

    def _alternatives(self, *, nested: bool = False) -> list[list[Element]]:
        alts = [self._sequence(nested=nested)]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            self._space(newlines=True)  # llama.cpp allows a line break after "|"
            alts.append(self._sequence(nested=nested))
        return alts

    def _char(self) -> int:
        s = self.s
        c = s[self.i]
        if c != "\\":
            self.i += 1
            return ord(c)
        e = s[self.i + 1]
        if e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            code = int(s[self.i + 2 : self.i + 2 + n], 16)
            self.i += 2 + n
            return code
        if e not in _ESCAPES:
            raise GbnfSyntaxError(f"unknown escape \\{e}")
        self.i += 2
        return ord(_ESCAPES[e])

    def _sequence(self, *, nested: bool) -> list[Element]:
        seq: list[Element] = []
        s = self.s
        while True:
            self._space(newlines=nested)
            if self.i >= len(s):
                return seq
            c = s[self.i]
            last = len(seq)
            if c == '"':
                self.i += 1
                while s[self.i] != '"':
                    code = self._char()
                    seq.append(("c", ((code, code),), False))
                self.i += 1
            elif c == "[":
                self.i += 1
                neg = s[self.i] == "^"
                if neg:
                    self.i += 1
                ranges = []
                while s[self.i] != "]":
                    lo = self._char()
                    hi = lo
                    if s[self.i] == "-" and s[self.i + 1] != "]":
                        self.i += 1
                        hi = self._char()
                    ranges.append((lo, hi))
                self.i += 1
                seq.append(("c", tuple(ranges), neg))
            elif c == ".":
                self.i += 1
                seq.append(("c", ((0, 0x10FFFF),), False))
            elif c == "(":
                self.i += 1
                inner = self._alternatives(nested=True)
                self._space(newlines=True)
                if s[self.i] != ")":
                    raise GbnfSyntaxError(f"expected ) at {self.i}")
                self.i += 1
                seq.append(("r", self.g.helper(inner), False))
            elif _NAME.match(c):
                seq.append(("r", self.g.rule(self._name()), False))
            elif c in "*+?{":
                if not seq:
                    raise GbnfSyntaxError(f"repetition without an operand at {self.i}")
                seq[:] = seq[:-1] + self._repeat(seq[-1])
                continue
            else:
                return seq  # "|", ")", a newline ending the rule
            del last

    def _repeat(self, item: Element) -> list[Element]:
        s = self.s
        c = s[self.i]
        self.i += 1
        if c == "*":
            lo, hi = 0, None
        elif c == "+":
            lo, hi = 1, None
        elif c == "?":
            lo, hi = 0, 1
        else:
            end = s.index("}", self.i)
            parts = s[self.i : end].split(",")
            self.i = end + 1
            lo = int(parts[0].strip() or 0)
            hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1].strip() else None)
        out: list[Element] = [item] * lo
        if hi is None:
            star = self.g.helper([])
            self.g.alts[star] = [[item, ("r", star, False)], []]
            out.append(("r", star, False))
        elif hi > lo:
            # x{0,k} as nested optionals: (x (x ...)?)?
            tail = self.g.helper([[item], []])
            for _ in range(hi - lo - 1):
                tail = self.g.helper([[item, ("r", tail, False)], []])
            out.append(("r", tail, False))
        return out


@lru_cache(maxsize=32)
def parse_gbnf(text: str) -> _Grammar:
    """Read GBNF (llama.cpp's syntax) into the automaton's rules (cached: a tool set's grammar
    comes back request after request; the rules are never mutated once read)."""
    try:
        return _Parser(text).parse()
    except (IndexError, ValueError) as exc:
        if isinstance(exc, GbnfSyntaxError):
            raise
        raise GbnfSyntaxError(str(exc)) from exc


# A stack: tuple of (rule, alternative, position) frames, the top last; () means "may stop".
Frame = tuple[int, int, int]
Stack = tuple[Frame, ...]


@dataclass
class ForcedText:
    """What the automaton says about the current point."""

    text: str
    """The only legal continuation (may be empty)."""
    complete: bool
    """The grammar is complete after ``text`` and nothing can follow (only the end)."""
    next_chars: frozenset[str] | None = None
    """The characters that may follow ``text`` where they are few (at most
    ``_MAX_NEXT_CHARS``, each a plain character); ``None`` where they are many or unknown.
    The end of the grammar counts as no character."""


class GbnfAutomaton:
    """The live parse stacks of a grammar; feed it text, ask it for the forced continuation."""

    def __init__(self, gbnf: str, root: str = "root") -> None:
        self._g = parse_gbnf(gbnf)
        if root not in self._g.names:
            raise GbnfSyntaxError(f"no root rule {root!r}")
        self._stacks = self._expand_all([(self._g.names[root], a, 0) for a in self._alts(root)])
        self.failed = False
        """The automaton met text it does not accept (or grew too large); it forces nothing."""

    def _alts(self, name: str) -> range:
        return range(len(self._g.alts[self._g.names[name]]))

    def _expand_all(self, frames: Iterable[Frame]) -> set[Stack]:
        out: set[Stack] = set()
        for f in frames:
            self._expand((f,), out, 0)
        return out

    def _expand(self, stack: Stack, out: set[Stack], depth: int) -> None:
        """Normalize ``stack`` into stacks whose top is a character class (or ``()``).

        A frame names the next element of its alternative. A reference in last position
        replaces its frame (a tail call, as llama.cpp does), so ``x*`` does not grow the stack."""
        if depth > 200:
            raise GbnfSyntaxError("grammar nesting too deep for the automaton")
        if not stack:
            out.add(stack)
            return
        rule, alt, pos = stack[-1]
        elements = self._g.alts[rule][alt]
        if pos >= len(elements):
            self._expand(stack[:-1], out, depth + 1)
            return
        kind, value, _ = elements[pos]
        if kind == "c":
            out.add(stack)
            return
        rest = stack[:-1] if pos + 1 >= len(elements) else (*stack[:-1], (rule, alt, pos + 1))
        for a in range(len(self._g.alts[value])):
            self._expand((*rest, (value, a, 0)), out, depth + 1)

    def _element(self, frame: Frame) -> Element:
        rule, alt, pos = frame
        return self._g.alts[rule][alt][pos]

    def _step(self, stacks: set[Stack], code: int) -> set[Stack]:
        out: set[Stack] = set()
        for st in stacks:
            if not st:
                continue
            _, ranges, neg = self._element(st[-1])
            hit = any(lo <= code <= hi for lo, hi in ranges)
            if hit != neg:
                top = st[-1]
                self._expand((*st[:-1], (top[0], top[1], top[2] + 1)), out, 0)
        return out

    def feed(self, text: str) -> bool:
        """Advance over ``text``; False (and :attr:`failed`) when the grammar rejects it."""
        try:
            return self._feed(text)
        except GbnfSyntaxError:
            self.failed = True
            return False

    def forced(self) -> ForcedText:
        """The longest continuation every live stack agrees on (without advancing)."""
        try:
            return self._forced(self._stacks)
        except GbnfSyntaxError:
            self.failed = True
            return ForcedText("", False)

    def viable(self, text: str) -> bool | None:
        """Whether the grammar accepts ``text`` next, as the start of the rest of a sentence
        (without advancing); ``None`` where the automaton cannot tell (it grew too large)."""
        if self.failed:
            return None
        stacks = self._stacks
        try:
            for ch in text:
                stacks = self._step(stacks, ord(ch))
                if not stacks:
                    return False
                if len(stacks) > _MAX_STACKS:
                    return None
        except GbnfSyntaxError:
            return None
        return True

    def forced_after(self, text: str) -> ForcedText | None:
        """What :meth:`forced` would say after ``text`` (without advancing); ``None`` where the
        grammar rejects ``text``."""
        found = self.continuations(text, ("",))
        return None if found is None else found[""]

    def continuations(self, text: str, nexts: Iterable[str]) -> dict[str, ForcedText] | None:
        """For each of ``nexts``, what :meth:`forced` would say after ``text`` and it (without
        advancing; ``text`` is walked once); ``None`` where the grammar rejects any of them."""
        if self.failed:
            return None
        try:
            base = self._walk(self._stacks, text)
            if base is None:
                return None
            out: dict[str, ForcedText] = {}
            for nxt in nexts:
                stacks = self._walk(base, nxt)
                if stacks is None:
                    return None
                out[nxt] = self._forced(stacks)
            return out
        except GbnfSyntaxError:
            return None

    def _walk(self, stacks: set[Stack], text: str) -> set[Stack] | None:
        for ch in text:
            stacks = self._step(stacks, ord(ch))
            if not stacks or len(stacks) > _MAX_STACKS:
                return None
        return stacks

    def _feed(self, text: str) -> bool:
        if self.failed:
            return False
        stacks = self._stacks
        for ch in text:
            stacks = self._step(stacks, ord(ch))
            if not stacks or len(stacks) > _MAX_STACKS:
                self.failed = True
                return False
        self._stacks = stacks
        return True

    def _forced(self, stacks: set[Stack]) -> ForcedText:
        if self.failed:
            return ForcedText("", False)
        chars: list[str] = []
        while len(chars) < _MAX_FORCED:
            if () in stacks:
                text = "".join(chars)
                return ForcedText(text, len(stacks) == 1, self._next_chars(stacks))
            code = None
            for st in stacks:
                _, ranges, neg = self._element(st[-1])
                if neg or len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
                    return ForcedText("".join(chars), False, self._next_chars(stacks))
                c = ranges[0][0]
                if code is None:
                    code = c
                elif c != code:
                    return ForcedText("".join(chars), False, self._next_chars(stacks))
            if code is None:
                break
            chars.append(chr(code))
            stacks = self._step(stacks, code)
            if not stacks or len(stacks) > _MAX_STACKS:
                break
        return ForcedText("".join(chars), False)

    def _next_chars(self, stacks: set[Stack]) -> frozenset[str] | None:
        """The characters the live stacks accept next, where they are few and listed (a
        negated class, or a wide range, accepts too many: ``None``)."""
        chars: set[str] = set()
        for st in stacks:
            if not st:
                continue  # the end of the grammar: no character
            _, ranges, neg = self._element(st[-1])
            if neg or sum(hi - lo + 1 for lo, hi in ranges) > _MAX_NEXT_CHARS:
                return None
            chars.update(chr(c) for lo, hi in ranges for c in range(lo, hi + 1))
            if len(chars) > _MAX_NEXT_CHARS:
                return None
        return frozenset(chars)


def _gbnf_char(code: int) -> str:
    """``code`` as GBNF writes it inside a literal or class: letters, digits and space as they
    are, anything else escaped (llama.cpp reads ``\\x``/``\\u``/``\\U`` escapes only)."""
    if code < 0x80 and (chr(code).isalnum() or code == 0x20):
        return chr(code)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _gbnf_element(element: Element) -> str:
    kind, value, neg = element
    if kind == "r":
        return f"td-c{value}"
    if not neg and value == ((0, 0x10FFFF),):
        return "."
    ranges = "".join(
        _gbnf_char(lo) if lo == hi else f"{_gbnf_char(lo)}-{_gbnf_char(hi)}" for lo, hi in value
    )
    return f"[{'^' if neg else ''}{ranges}]"


def _gbnf_sequence(elements: Iterable[Element]) -> str:
    return " ".join(_gbnf_element(e) for e in elements) or '""'


class _Continuation:
    """GBNF text of the rules reachable from some sequences, each rule written once."""

    def __init__(self, grammar: _Grammar) -> None:
        self._g = grammar
        self._seen: set[int] = set()
        self.lines: list[str] = []

    def reach(self, elements: Iterable[Element]) -> None:
        todo = [v for k, v, _ in elements if k == "r"]
        while todo:
            rid = todo.pop()
            if rid in self._seen:
                continue
            self._seen.add(rid)
            alts = self._g.alts[rid]
            self.lines.append(f"td-c{rid} ::= " + " | ".join(_gbnf_sequence(a) for a in alts))
            todo += [v for alt in alts for k, v, _ in alt if k == "r"]


def continuation_gbnf(gbnf: str, root: str, text: str) -> str | None:
    """A grammar (its start rule ``root``, the others renamed) of exactly what may follow
    ``text`` in ``gbnf`` from ``root``: the automaton's live stacks after ``text``, each written
    as the sequence of what its frames still expect. ``None`` where the automaton rejects
    ``text`` or cannot read the grammar. A server that cannot be handed a grammar's state
    (llama-server) goes on with a reply under a grammar this way, from the text written."""
    try:
        auto = GbnfAutomaton(gbnf, root)
    except GbnfSyntaxError:
        return None
    if not auto.feed(text):
        return None
    rules = _Continuation(auto._g)
    alternatives = []
    for stack in sorted(auto._stacks):
        elements = [e for rule, alt, pos in reversed(stack) for e in auto._g.alts[rule][alt][pos:]]
        rules.reach(elements)
        alternatives.append(_gbnf_sequence(elements))
    head = "root ::= " + " | ".join(alternatives)
    return "\n".join([head, *rules.lines]) + "\n"
