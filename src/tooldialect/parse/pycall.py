"""The keyword arguments of a Python-style call (``name(k=v, ...)``), read as templates write
them, not as Python would: a keyword as a name (``from="SFO"``), a raw newline inside a string,
inner quotes left unescaped (``q="a "lamp" b"``), values left unquoted (``q=a "lamp" b``), no
separator between arguments (``q="a"limit=3``), JSON's ``true``/``null`` beside Python's.

A tolerant scanner, never ``eval``: each value is read the strict way first (a Python string, a
literal, a bracketed container) and kept where an argument boundary follows it; else a quote ends
the string, and an unquoted value ends, only where the next ``, key=`` or the call's closer (with
what may follow a call after it) comes. Every look at text past the end of a growing buffer
raises ``_More``, so a streamed read decides exactly as a batch read of the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .values import NAMED_CONSTANTS, coerce_value, literal_value, schema_types

__all__ = [
    "KwargsSyntax",
    "More",
    "ScanMemo",
    "read_kwargs",
    "retype_strings",
    "type_arguments",
]


@dataclass(frozen=True)
class More:
    """``read_kwargs``'s answer where the text ends before the call is decided: a read again
    decides nothing new until the text holds one of ``needs`` (empty: any new text)."""

    needs: str = ""


class _More(Exception):
    """The scan looked past the end of a buffer that still grows; ``needs``: the characters
    one of which new text must hold to change that (empty: any)."""

    def __init__(self, needs: str = "") -> None:
        super().__init__(needs)
        self.needs = needs


@dataclass(frozen=True)
class KwargsSyntax:
    """What surrounds the arguments: the text between key and value, between two arguments, the
    call's closer, and what may follow that closer (a next call's separator, the section's
    closer)."""

    assign: str = "="
    separator: str = ","
    close: str = ")"
    followers: tuple[str, ...] = ()
    cut: bool = False
    """The token limit cut the text: its end is no end of a call."""
    call_open: str = "("
    """What follows a call's name: after ``separator``, a name and this begin a next call."""


@dataclass
class ScanMemo:
    """What a read of a growing text learnt that a longer text does not change, kept between
    reads so that each resumes where the last stopped (linear, not quadratic)."""

    searches: dict[tuple[str, int], int] = field(default_factory=dict)
    """Per forward search from a value's start: where it resumes (every candidate end before
    was refused without looking past the text)."""
    brackets: dict[int, tuple[int, int, str]] = field(default_factory=dict)
    """Per bracketed value: the scan's position, depth and open quote."""


@dataclass(frozen=True)
class _Value:
    value: Any
    quoted: bool
    """Written as a string literal (typed by the schema only where it forbids strings)."""
    bare: bool = False
    """Written unquoted and not a literal: text typed by the schema."""


_LITERAL = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|True|False|None|true|false|null")
_MAX_CALL = 100_000
_STRING = {q: re.compile(f"[^{q}\\\\]*(?:\\\\.[^{q}\\\\]*)*{q}", re.DOTALL) for q in "'\""}
"""The rest of a Python string after its opening quote, escapes skipped, through its closer."""
_QUOTE = {q: re.compile(q) for q in "'\""}
_TRIPLE = {q: re.compile(q * 3) for q in "'\""}
_PLAIN = re.compile(r"[^'\"()\[\]{}]+")


class _Scan:
    def __init__(self, buf: str, syntax: KwargsSyntax, *, final: bool, memo: ScanMemo) -> None:
        self.buf = buf
        self.syntax = syntax
        self.final = final
        self.memo = memo

    def search(self, pattern: re.Pattern[str], kind: str, i: int, needs: str) -> Iterator[int]:
        """Each match of ``pattern`` from the search memo of value ``i`` on, recording the
        ones the caller refuses (it asks for the next)."""
        k = self.memo.searches.get((kind, i), i)
        while True:
            m = pattern.search(self.buf, k)
            if m is None:
                if self.final:
                    return
                raise _More(needs)
            yield m.start()
            k = m.start() + 1
            self.memo.searches[(kind, i)] = k

    def char(self, i: int) -> str:
        """``buf[i]``, or ``""`` at the end of the finished text."""
        if i < len(self.buf):
            return self.buf[i]
        if self.final:
            return ""
        raise _More

    def has(self, s: str, i: int) -> bool:
        """Whether ``s`` is written at ``i``."""
        got = self.buf[i : i + len(s)]
        if len(got) < len(s) and not self.final and s.startswith(got):
            raise _More
        return got == s

    def ws(self, i: int) -> int:
        while self.char(i).isspace():
            i += 1
        return i

    def key(self, i: int) -> tuple[str, int] | None:
        """The name at ``i`` and where its value begins, where ``name =`` is written there."""
        j = i
        while (c := self.char(j)) and (c.isalnum() or c == "_"):
            j += 1
        name = self.buf[i:j]
        if not name.isidentifier():
            return None
        k = self.ws(j)
        assign = self.syntax.assign
        if not self.has(assign, k) or (assign == "=" and self.has("==", k)):
            return None
        return name, self.ws(k + len(assign))

    def ends_call(self, i: int) -> bool:
        """Whether what follows a closer at ``i`` may follow a call: nothing, a follower, or a
        separator and a next call."""
        j = self.ws(i)
        if not self.char(j):
            return not self.syntax.cut
        sep = self.syntax.separator
        if self.has(sep, j):
            return self.next_call(self.ws(j + len(sep)))
        return any(self.has(f, j) for f in self.syntax.followers)

    def next_call(self, i: int) -> bool:
        """Whether a call begins at ``i``: a name, then ``call_open``."""
        j = i
        while (c := self.char(j)) and (c.isalnum() or c in "_.-"):
            j += 1
        return j > i and self.has(self.syntax.call_open, self.ws(j))

    def after(self, i: int, *, loose: bool) -> tuple[str, int] | None:
        """What follows a value ending at ``i``: ``("key", where the next key is)``, ``("close",
        where the closer is)``, or None (the value does not end there). A ``loose`` end (inside
        text that may hold anything) needs a separator before a key, and a closer that ends
        the call."""
        syntax = self.syntax
        j = self.ws(i)
        if self.has(syntax.separator, j):
            k = self.ws(j + len(syntax.separator))
            if self.key(k) is not None:
                return "key", k
            if self.has(syntax.close, k) and (not loose or self.ends_call(k + len(syntax.close))):
                return "close", k  # a trailing separator
            return None
        if self.has(syntax.close, j) and (not loose or self.ends_call(j + len(syntax.close))):
            return "close", j
        if not loose and j < len(self.buf) and self.key(j) is not None:
            return "key", j  # no separator between two arguments
        return None

    def string(self, i: int) -> tuple[_Value, tuple[str, int]] | None:
        """The string whose quote is at ``i``: a Python string where an argument boundary
        follows its closing quote, else the text up to the first quote that one follows."""
        quote = self.buf[i]
        if self.has(quote * 3, i):
            return self.triple(i, quote)
        m = _STRING[quote].match(self.buf, i + 1)
        if m is None:
            if self.final:
                return None
            raise _More(quote)  # nothing else can close it
        j = m.end() - 1
        nxt = self.after(j + 1, loose=False)
        if nxt is not None:
            text = self.buf[i : j + 1].replace("\r", "\\r").replace("\n", "\\n")
            value = literal_value(text)
            if isinstance(value, str):
                return _Value(value, quoted=True), nxt
        # inner quotes left unescaped: the string is the text as written
        for k in self.search(_QUOTE[quote], "quote", i + 1, quote):
            nxt = self.after(k + 1, loose=True)
            if nxt is not None:
                return _Value(self.buf[i + 1 : k], quoted=True), nxt
        return None

    def triple(self, i: int, quote: str) -> tuple[_Value, tuple[str, int]] | None:
        """A triple-quoted string (code a model quotes so): through the first closing triple
        an argument boundary follows."""
        for k in self.search(_TRIPLE[quote], "triple", i + 3, quote):
            nxt = self.after(k + 3, loose=False)
            value = literal_value(self.buf[i : k + 3]) if nxt is not None else None
            if nxt is not None and isinstance(value, str):
                return _Value(value, quoted=True), nxt
        return None

    def container(self, i: int) -> tuple[_Value, tuple[str, int]] | None:
        end = self.bracket_end(i)
        if end is None:
            return None
        nxt = self.after(end, loose=False)
        if nxt is None:
            return None
        value = literal_value(self.buf[i:end])
        if value is None:  # raw newlines inside its strings: Python needs them escaped
            value = literal_value(self.buf[i:end].replace("\n", "\\n"))
        return (_Value(value, quoted=False), nxt) if isinstance(value, (list, dict)) else None

    def bracket_end(self, i: int) -> int | None:
        """The index after the bracket closing the one at ``i`` (quotes and escapes skipped, raw
        newlines allowed in strings), None where the text ends first; resumed from the memo."""
        buf, n = self.buf, len(self.buf)
        k, depth, quote = self.memo.brackets.get(i, (i, 0, ""))
        while k < n:
            if quote:
                m = _STRING[quote].match(buf, k)
                if m is None:
                    break  # read again from the string's start: an escape may be cut
                k, quote = m.end(), ""
                continue
            c = buf[k]
            k += 1
            if c in "'\"":
                quote = c
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    return k
            m = _PLAIN.match(buf, k)  # skip to the next quote or bracket
            k = m.end() if m else k
        self.memo.brackets[i] = (k, depth, quote)
        if self.final:
            return None
        raise _More(quote or ")]}")  # nothing else can close it

    def literal(self, i: int) -> tuple[_Value, tuple[str, int]] | None:
        m = _LITERAL.match(self.buf, i)
        if m is None:
            return None
        nxt = self.after(m.end(), loose=False)
        if nxt is None:
            return None
        word = m.group()
        value = NAMED_CONSTANTS[word] if word in NAMED_CONSTANTS else literal_value(word)
        return _Value(value, quoted=False), nxt

    def bare(self, i: int) -> tuple[_Value, tuple[str, int]] | None:
        """Unquoted text: up to the next ``, key=`` or the closer that ends the call."""
        syntax = self.syntax
        marks = re.compile("|".join(re.escape(m) for m in (syntax.separator, syntax.close)))
        for k in self.search(marks, "bare", i, syntax.separator[:1] + syntax.close[:1]):
            nxt = self.after(k, loose=True)
            if nxt is not None:
                text = self.buf[i:k].rstrip()
                return (_Value(text, quoted=False, bare=True), nxt) if text else None
        return None

    def value(self, i: int) -> tuple[_Value, tuple[str, int]] | None:
        c = self.char(i)
        if c in ("'", '"'):
            return self.string(i)
        if c in ("[", "{", "("):  # a container that does not read is no text either
            return self.container(i)
        return self.literal(i) or self.bare(i)

    def arguments(self, i: int) -> tuple[int, dict[str, _Value]] | None:
        out: dict[str, _Value] = {}
        i = self.ws(i)
        if self.has(self.syntax.close, i):
            return i + len(self.syntax.close), out
        while True:
            got = self.key(i)
            if got is None:
                return None
            name, v = got
            read = self.value(v)
            if read is None:
                return None
            out[name], (kind, i) = read
            if kind == "close":
                return i + len(self.syntax.close), out


def read_kwargs(
    buf: str,
    p: int,
    syntax: KwargsSyntax,
    *,
    final: bool,
    schema: Mapping[str, Any],
    memo: ScanMemo | None = None,
) -> tuple[int, dict[str, Any]] | More | None:
    """The arguments from ``p`` (after the call's opener) through its closer: ``(end after the
    closer, arguments typed by the tool's ``schema``)``; None where they are no keyword
    arguments; ``More`` while ``buf`` still grows and has not decided. ``memo``, kept between
    reads of one growing text, lets a read resume its searches (linear, not quadratic)."""
    if len(buf) - p > _MAX_CALL:
        return None
    try:
        got = _Scan(buf, syntax, final=final, memo=memo or ScanMemo()).arguments(p)
    except _More as more:
        return More(more.needs)
    except RecursionError:
        return None
    if got is None:
        return None
    end, values = got
    return end, type_arguments(values, schema)


def type_arguments(values: Mapping[str, _Value], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The values as the schema types them: unquoted text by its schema; a string where the
    schema forbids strings (a template quoting every value: ``limit="3"``) by its schema too,
    and, where every value of the call is quoted, one declared without a type as well."""
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    all_quoted = all(v.quoted for v in values.values())
    out: dict[str, Any] = {}
    for key, got in values.items():
        sub = props.get(key)
        value = got.value
        if got.bare or (got.quoted and _retype(sub, schema, all_quoted=all_quoted)):
            value = coerce_value(value, sub, root=schema)
        out[key] = value
    return out


def retype_strings(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments read by a codec that quotes strings (Gemma 4's), typed as ``type_arguments``
    types quoted values: a template quoting every value (FunctionGemma's ``<escape>3<escape>``)
    still gives the schema's types."""
    values = {k: _Value(v, quoted=isinstance(v, str)) for k, v in args.items()}
    return type_arguments(values, schema)


def _retype(sub: Any, root: Mapping[str, Any], *, all_quoted: bool) -> bool:
    types = schema_types(sub, root)
    if not types:
        return all_quoted and isinstance(sub, Mapping)
    return "string" not in types
