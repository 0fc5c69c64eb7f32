"""Where a call's arguments end in text that still grows: the first ``close`` outside the
syntax's strings and brackets. The parser runs it on each new piece of a stream and reads the
arguments (``read.py``) once it is found, so a streamed read decides exactly as a batch read.

``CallScan.run`` resumes where the last run stopped; it waits (``WAIT``) rather than decide on a
prefix that more text could change (half a closer, half a quote token, a backslash at the end).
"""

from __future__ import annotations

from dataclasses import dataclass

from .syntax import StringForm

__all__ = ["BAD", "GO", "WAIT", "CallScan"]

GO, WAIT, BAD = -1, -2, -3
"""Scan results besides a position: read on, wait for more text, not a call."""

_OPENERS, _CLOSERS = "([{", ")]}"


@dataclass
class CallScan:
    """Where the closer ``close`` comes, outside strings of ``forms`` and brackets."""

    close: str
    i: int
    forms: tuple[StringForm, ...]
    depth: int = 0
    inside: StringForm | None = None
    """The string the scan is in, if any."""

    def run(self, buf: str, lim: int, final: bool) -> int:
        """Scan ``buf`` up to ``lim``: the closer's position, ``WAIT`` or ``BAD``."""
        close = self.close
        while self.i < lim:
            if self.inside is not None:
                st = self._in_string(buf, lim, final)
                if st != GO:
                    return st
                continue
            i = self.i
            if self.depth == 0:
                if buf.startswith(close, i):
                    return i
                if not final and len(buf) - i < len(close) and close.startswith(buf[i:]):
                    return WAIT
            st = self._token(buf, final)
            if st != GO:
                return st
        return WAIT

    def _in_string(self, buf: str, lim: int, final: bool) -> int:
        form = self.inside
        assert form is not None
        k = buf.find(form.close, self.i, lim)
        b = buf.find("\\", self.i, lim) if form.escaping in ("backslash", "quote-backslash") else -1
        if b >= 0 and (k < 0 or b < k):
            if b + 1 >= lim and not final:
                self.i = b
                return WAIT  # the escaped character is not there yet
            self.i = b + 2
            return GO
        if k < 0:
            self.i = max(self.i, lim - len(form.close) + 1)
            return WAIT
        self.i = k + len(form.close)
        self.inside = None
        return GO

    def _token(self, buf: str, final: bool) -> int:
        i = self.i
        for form in self.forms:
            q = form.open
            if not final and len(buf) - i < len(q) and q.startswith(buf[i:]):
                return WAIT
            if buf.startswith(q, i):
                self.inside = form
                self.i = i + len(q)
                return GO
        c = buf[i]
        if c in _OPENERS:
            self.depth += 1
        elif c in _CLOSERS:
            self.depth -= 1
            if self.depth < 0:
                return BAD
        self.i = i + 1
        return GO
