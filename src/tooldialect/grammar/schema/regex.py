"""A subset of regular expressions (JSON Schema ``pattern``) compiled to a GBNF expression.

Supported: literals, escapes (``\\d \\w \\s \\D \\W \\S``, ``\\.`` etc.), ``.``, character classes,
groups ``(...)``/``(?:...)``, ``|``, quantifiers ``? * + {m} {m,} {m,n}`` (lazy ``?``
suffix ignored) and ``^``/``$`` at the ends of the pattern or of each top-level alternative
(``^a$|^b$``, also inside a group that is the whole alternative: ``(^a$)|(^b$)``). A
pattern without ``^``/``$`` may be surrounded by any text, as JSON Schema searches. Anything
else (backreferences, lookaround, ``\\b``) raises ``UnsupportedSchemaError``. Class members
are taken literally, so a class that admits ``"`` or a control character can yield invalid JSON;
keep such patterns out of schemas.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ...errors import UnsupportedSchemaError
from ..gbnf import escape_char

__all__ = ["regex_to_gbnf"]

_CLASS_ESC = {"d": "0-9", "w": "a-zA-Z0-9_", "s": " \\t\\n\\r"}
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}


def regex_to_gbnf(pattern: str, *, pointer: str, any_char: str, text: Callable[[str], str]) -> str:
    """A GBNF expression for strings matching ``pattern``; ``any_char`` is one content character
    and ``text`` turns literal content into a GBNF literal (escaped for the value syntax)."""
    return _Parser(pattern, pointer, any_char, text).parse()


class _Parser:
    def __init__(
        self, pattern: str, pointer: str, any_char: str, text: Callable[[str], str]
    ) -> None:
        self.p = pattern
        self.i = 0
        self.pointer = pointer
        self.any = any_char
        self.text = text

    def fail(self, what: str) -> UnsupportedSchemaError:
        return UnsupportedSchemaError(
            f"pattern {self.p!r} at {self.pointer!r} uses {what}, which a grammar cannot express; "
            "simplify the regex",
            pointer=self.pointer,
        )

    def parse(self) -> str:
        branches = _alternatives(self.p)
        if len(branches) > 1 and any(_has_anchor(b) for b in branches):
            alts = [_Parser(b, self.pointer, self.any, self.text).parse() for b in branches]
            return "(" + " | ".join(f"({a})" for a in alts) + ")"
        inner = _whole_group(self.p)
        if inner is not None and _has_anchor(inner):
            return _Parser(inner, self.pointer, self.any, self.text).parse()
        return self.parse_branch()

    def parse_branch(self) -> str:
        p = self.p
        anchored_start = p.startswith("^")
        anchored_end = p.endswith("$") and not p.endswith("\\$")
        self.p = p[1 if anchored_start else 0 : len(p) - 1 if anchored_end else len(p)]
        body = self.alt()
        if self.i != len(self.p):
            raise self.fail(f"an unbalanced ')' at {self.i}")
        lead = "" if anchored_start else f"({self.any})* "
        trail = "" if anchored_end else f" ({self.any})*"
        return f"{lead}({body}){trail}"

    def alt(self) -> str:
        seqs = [self.seq()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            seqs.append(self.seq())
        return " | ".join(s or '""' for s in seqs)

    def seq(self) -> str:
        parts: list[str] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.atom()
            parts.append(self.quant(atom))
        return " ".join(parts)

    def atom(self) -> str:
        p, ch = self.p, self.p[self.i]
        self.i += 1
        if ch == "(":
            if p.startswith("?:", self.i):
                self.i += 2
            elif p.startswith("?", self.i):
                raise self.fail("lookaround or a named group")
            inner = self.alt()
            if self.i >= len(p) or p[self.i] != ")":
                raise self.fail("an unclosed '('")
            self.i += 1
            return f"({inner})"
        if ch == "[":
            return self.char_class()
        if ch == ".":
            return f"({self.any})"
        if ch in "^$":
            raise self.fail(f"{ch!r} inside the pattern")
        if ch in "*+?{":
            raise self.fail(f"a quantifier {ch!r} with nothing to repeat")
        if ch == "\\":
            return self.escape(in_class=False)
        return self.text(ch)

    def escape(self, *, in_class: bool) -> str:
        if self.i >= len(self.p):
            raise self.fail("a trailing backslash")
        ch = self.p[self.i]
        self.i += 1
        if ch in _CLASS_ESC:
            return _CLASS_ESC[ch] if in_class else f"[{_CLASS_ESC[ch]}]"
        if ch in "DWS":
            if in_class:
                raise self.fail(f"\\{ch} inside a class")
            return f"[^{_CLASS_ESC[ch.lower()]}]"
        if ch.isdigit() or ch in "bBpPkcux":
            raise self.fail(f"the escape \\{ch}")
        lit = _SIMPLE_ESC.get(ch, ch)
        return escape_char(lit, "]^-[") if in_class else self.text(lit)

    def char_class(self) -> str:
        p = self.p
        out = "["
        if p.startswith("^", self.i):
            out += "^"
            self.i += 1
        first = True
        while self.i < len(p) and (p[self.i] != "]" or first):
            ch = p[self.i]
            self.i += 1
            first = False
            if ch == "\\":
                out += self.escape(in_class=True)
            elif ch == "-" and out[-1] not in "[^" and self.i < len(p) and p[self.i] != "]":
                out += "-"
            else:
                out += escape_char(ch, "]^-[")
        if self.i >= len(p):
            raise self.fail("an unclosed '['")
        self.i += 1
        return out + "]"

    def quant(self, atom: str) -> str:
        p = self.p
        if self.i >= len(p):
            return atom
        ch = p[self.i]
        if ch in "*+?":
            self.i += 1
            q = ch
        elif ch == "{":
            end = p.find("}", self.i)
            spec = p[self.i + 1 : end] if end > 0 else ""
            lo, _, hi = spec.partition(",")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                return atom  # a literal '{' in JS regexes; taken as text by the next atom
            self.i = end + 1
            q = "{" + spec + "}"
        else:
            return atom
        if self.i < len(p) and p[self.i] == "?":
            self.i += 1  # lazy: same language
        return f"({atom}){q}"


def _scan(p: str) -> list[tuple[int, str, int]]:
    """``(index, char, depth)`` of each unescaped character outside classes."""
    out = []
    depth = 0
    i = 0
    in_class = False
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if p.startswith("]", i + 1) or p.startswith("^]", i + 1):
                i += 2 if p[i + 1] == "]" else 3
                continue
        else:
            if ch == ")":
                depth -= 1
            out.append((i, ch, depth))
            if ch == "(":
                depth += 1
        i += 1
    return out


def _alternatives(p: str) -> list[str]:
    cuts = [i for i, ch, depth in _scan(p) if ch == "|" and depth == 0]
    bounds = [-1, *cuts, len(p)]
    return [p[a + 1 : z] for a, z in itertools.pairwise(bounds)]


def _has_anchor(p: str) -> bool:
    return any(ch in "^$" for _, ch, _ in _scan(p))


def _whole_group(p: str) -> str | None:
    """The inside of ``p`` when ``p`` is one group ``(...)`` / ``(?:...)``, else None."""
    if not p.startswith("(") or (p.startswith("(?") and not p.startswith("(?:")):
        return None
    closes = [i for i, ch, depth in _scan(p) if ch == ")" and depth == 0]
    if closes != [len(p) - 1]:
        return None
    return p[3:-1] if p.startswith("(?:") else p[1:-1]
