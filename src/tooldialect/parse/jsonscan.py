"""A resumable JSON scanner for text that arrives in pieces.

It validates one JSON value as characters arrive, without re-reading what it already saw, and keeps
track of the last *safe point*: a prefix that becomes valid JSON by appending a known suffix (the
open string's quote and the open containers' closers). Argument fragments are streamed up to the
safe point only, so a call cut off at the end of the text can be healed from what was already sent.

Raw control characters inside strings (small models write literal newlines in code) are escaped in
the *cooked* output, so the cooked text always loads with a strict ``json.loads``.
"""

from __future__ import annotations

import json
import re

__all__ = ["DONE", "ERROR", "NEED", "PLAIN_STRING_STOP", "JsonScanner"]

DONE, NEED, ERROR = 0, 1, 2

_WS = re.compile(r"[ \t\n\r]+")
_WS_CHARS = frozenset(" \t\n\r")
_STR_RUN = re.compile(r'[^"\\\x00-\x1f]+')
PLAIN_STRING_STOP = re.compile(r'["\\\x00-\x1f]')
"""A character that ends a run of plain string text (see ``JsonScanner.in_open_string``)."""
_ESC = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESC_PREFIX = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_NUM_EXTENT = re.compile(r"[-+0-9.eE]+")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_LITERALS = {"t": "true", "f": "false", "n": "null"}

# states
_VALUE, _ARR_FIRST, _OBJ_FIRST, _OBJ_KEY, _COLON, _AFTER, _STR = range(7)


class JsonScanner:
    """Scans one JSON value starting at ``pos`` of a growing buffer."""

    __slots__ = (
        "_closers",
        "_in_key",
        "_safe_heal",
        "_safe_n",
        "_stack",
        "_state",
        "_status",
        "pieces",
        "pos",
        "safe_pos",
        "start",
    )

    def __init__(self, pos: int) -> None:
        self.start = pos
        """Where the value starts (after leading whitespace once the first token is seen)."""
        self.pos = pos
        """How far the buffer has been read."""
        self.pieces: list[str] = []
        """Cooked text read so far and not yet taken."""
        self._stack: list[str] = []
        self._closers = ""
        self._state = _VALUE
        self._status = NEED
        self._in_key = False
        self._safe_n = 0
        self._safe_heal = ""
        self.safe_pos = pos
        """Raw buffer position of the last safe point."""

    def take_safe(self) -> str:
        """Cooked text up to the last safe point not taken before."""
        n = self._safe_n
        if not n:
            return ""
        out = "".join(self.pieces[:n])
        del self.pieces[:n]
        self._safe_n = 0
        return out

    def heal(self) -> str:
        """Suffix that closes what ``take_safe`` returned so far into valid JSON."""
        return self._safe_heal

    def take_all(self) -> str:
        """All cooked text not taken yet (use once the value is DONE)."""
        out = "".join(self.pieces)
        self.pieces.clear()
        self._safe_n = 0
        return out

    def in_open_string(self, end: int) -> bool:
        """True when the scanner read the buffer up to ``end`` and waits inside a string value with
        everything safe taken. Text free of ``PLAIN_STRING_STOP`` then changes nothing but the
        positions: a caller may take it as a fragment itself and not show it to ``advance``."""
        return self._state == _STR and not self._in_key and not self.pieces and self.pos == end

    def skip_plain(self, n: int) -> None:
        """The caller took ``n`` characters of plain string text (see ``in_open_string``) itself
        and will add them to the buffer: read on after them."""
        self.pos += n
        self.safe_pos = self.pos

    def advance(self, buf: str, final: bool) -> int:
        """Read ``buf`` from ``pos``; return DONE (``pos`` is after the value), NEED or ERROR.

        Once DONE or ERROR, later calls return the same without reading (so two callers may
        drive one scanner: the second sees the first one's verdict)."""
        if self._status != NEED:
            return self._status
        st = self._scan(buf, final)
        self._status = st
        return st

    def _safe(self, heal: str) -> None:
        """Mark the text read so far (outside a key) as a safe point healed by ``heal``."""
        self._safe_n = len(self.pieces)
        self._safe_heal = heal
        self.safe_pos = self.pos

    def _scan(self, buf: str, final: bool) -> int:
        # One step per token, dispatched on the state; string runs are read in bulk.
        n = len(buf)
        steps = _STEPS
        while True:
            if self._state == _STR:
                st = self._string(buf, n, final)
            else:
                pos = self.pos
                if pos < n and buf[pos] in _WS_CHARS:
                    m = _WS.match(buf, pos)
                    assert m is not None
                    self.pieces.append(m.group())
                    self.pos = pos = m.end()
                if pos >= n:
                    return NEED
                st = steps[self._state](self, buf, buf[pos], n, final)
            if st != _GO:
                return st

    def _string(self, buf: str, n: int, final: bool) -> int:
        m = _STR_RUN.match(buf, self.pos)
        if m:
            self.pieces.append(m.group())
            self.pos = m.end()
        pos = self.pos
        if pos >= n:
            if not self._in_key:
                self._safe('"' + self._closers)
            return NEED
        c = buf[pos]
        if c == '"':
            self.pieces.append(c)
            self.pos = pos + 1
            if self._in_key:
                self._state = _COLON
                return _GO
            if not self._stack:
                return DONE
            self._state = _AFTER
            self._safe(self._closers)
            return _GO
        if c == "\\":
            m = _ESC.match(buf, pos)
            if m:
                self.pieces.append(m.group())
                self.pos = m.end()
                return _GO
            if not final and _ESC_PREFIX.match(buf, pos):
                if not self._in_key:
                    self._safe('"' + self._closers)
                return NEED
            return ERROR
        # a raw control character: tolerated, escaped in the cooked text
        self.pieces.append(json.dumps(c)[1:-1])
        self.pos = pos + 1
        return _GO

    def _close(self, c: str) -> int:
        """``c``, the innermost container's closer, read at ``pos``."""
        self.pieces.append(c)
        self.pos += 1
        self._stack.pop()
        self._closers = self._closers[1:]
        if not self._stack:
            return DONE
        self._state = _AFTER
        self._safe(self._closers)
        return _GO

    def _after(self, buf: str, c: str, n: int, final: bool) -> int:
        if c == ",":
            self.pieces.append(c)
            self.pos += 1
            self._state = _OBJ_KEY if self._stack[-1] == "{" else _VALUE
            return _GO
        if c == self._closers[0]:
            return self._close(c)
        return ERROR

    def _colon(self, buf: str, c: str, n: int, final: bool) -> int:
        if c != ":":
            return ERROR
        self.pieces.append(c)
        self.pos += 1
        self._state = _VALUE
        return _GO

    def _key(self, buf: str, c: str, n: int, final: bool) -> int:
        if c == '"':
            self.pieces.append(c)
            self.pos += 1
            self._state = _STR
            self._in_key = True
            return _GO
        if c == "}" and self._state == _OBJ_FIRST:
            return self._close(c)
        return ERROR

    def _open(self, c: str) -> int:
        """``c``, a container's opener, read at ``pos``."""
        if not self._stack:
            self.start = self.pos
            self.pieces.clear()  # leading whitespace is not part of the value
        self.pieces.append(c)
        self.pos += 1
        self._stack.append(c)
        if c == "{":
            self._closers = "}" + self._closers
            self._state = _OBJ_FIRST
        else:
            self._closers = "]" + self._closers
            self._state = _ARR_FIRST
        self._safe(self._closers)
        return _GO

    def _value(self, buf: str, c: str, n: int, final: bool) -> int:
        if c == "{" or c == "[":
            return self._open(c)
        if c == "]" and self._state == _ARR_FIRST:
            return self._close(c)
        if not self._stack:
            self.start = self.pos
            self.pieces.clear()
        if c == '"':
            self.pieces.append(c)
            self.pos += 1
            self._state = _STR
            self._in_key = False
            return _GO
        st = self._scalar(buf, c, n, final)
        if st != _GO:
            return st
        # a scalar value ended
        if not self._stack:
            return DONE
        self._state = _AFTER
        self._safe(self._closers)
        return _GO

    def _scalar(self, buf: str, c: str, n: int, final: bool) -> int:
        pos = self.pos
        if c in _LITERALS:
            lit = _LITERALS[c]
            if buf.startswith(lit, pos):
                self.pieces.append(lit)
                self.pos = pos + len(lit)
                return _GO
            if not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                return NEED
            return ERROR
        m = _NUM_EXTENT.match(buf, pos)
        if m is None:
            return ERROR
        if m.end() >= n and not final:
            return NEED
        if not _NUM.match(m.group()):
            return ERROR
        self.pieces.append(m.group())
        self.pos = m.end()
        return _GO


_GO = -1  # a step read a token: go on
# indexed by state (_VALUE, _ARR_FIRST, _OBJ_FIRST, _OBJ_KEY, _COLON, _AFTER; _STR is read apart)
_STEPS = (
    JsonScanner._value,
    JsonScanner._value,
    JsonScanner._key,
    JsonScanner._key,
    JsonScanner._colon,
    JsonScanner._after,
)
