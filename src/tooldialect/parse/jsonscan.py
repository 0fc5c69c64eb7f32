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

    def advance(self, buf: str, final: bool) -> int:
        """Read ``buf`` from ``pos``; return DONE (``pos`` is after the value), NEED or ERROR.

        Once DONE or ERROR, later calls return the same without reading (so two callers may
        drive one scanner: the second sees the first one's verdict)."""
        if self._status != NEED:
            return self._status
        st = self._scan(buf, final)
        self._status = st
        return st

    def _scan(self, buf: str, final: bool) -> int:
        # The hot loop of streaming: state lives in locals and is written back on exit.
        pos = self.pos
        n = len(buf)
        pieces = self.pieces
        append = pieces.append
        stack = self._stack
        state = self._state
        in_key = self._in_key
        closers = self._closers
        try:
            while True:
                if state == _STR:
                    m = _STR_RUN.match(buf, pos)
                    if m:
                        append(m.group())
                        pos = m.end()
                    if pos >= n:
                        if not in_key:
                            self._safe_n = len(pieces)
                            self._safe_heal = '"' + closers
                            self.safe_pos = pos
                        return NEED
                    c = buf[pos]
                    if c == '"':
                        append(c)
                        pos += 1
                        if in_key:
                            state = _COLON
                            continue
                        if not stack:
                            return DONE
                        state = _AFTER
                        self._safe_n = len(pieces)
                        self._safe_heal = closers
                        self.safe_pos = pos
                        continue
                    if c == "\\":
                        m = _ESC.match(buf, pos)
                        if m:
                            append(m.group())
                            pos = m.end()
                            continue
                        if not final and _ESC_PREFIX.match(buf, pos):
                            if not in_key:
                                self._safe_n = len(pieces)
                                self._safe_heal = '"' + closers
                                self.safe_pos = pos
                            return NEED
                        return ERROR
                    # a raw control character: tolerated, escaped in the cooked text
                    append(json.dumps(c)[1:-1])
                    pos += 1
                    continue
                if pos >= n:
                    return NEED
                c = buf[pos]
                if c in _WS_CHARS:
                    m = _WS.match(buf, pos)
                    assert m is not None
                    append(m.group())
                    pos = m.end()
                    if pos >= n:
                        return NEED
                    c = buf[pos]
                if state == _AFTER:
                    if c == ",":
                        append(c)
                        pos += 1
                        state = _OBJ_KEY if stack[-1] == "{" else _VALUE
                        continue
                    if c == closers[0]:
                        append(c)
                        pos += 1
                        stack.pop()
                        closers = closers[1:]
                        if not stack:
                            return DONE
                        self._safe_n = len(pieces)
                        self._safe_heal = closers
                        self.safe_pos = pos
                        continue
                    return ERROR
                if state == _COLON:
                    if c != ":":
                        return ERROR
                    append(c)
                    pos += 1
                    state = _VALUE
                    continue
                if state in (_OBJ_KEY, _OBJ_FIRST):
                    if c == '"':
                        append(c)
                        pos += 1
                        state = _STR
                        in_key = True
                        continue
                    if c == "}" and state == _OBJ_FIRST:
                        append(c)
                        pos += 1
                        stack.pop()
                        closers = closers[1:]
                        if not stack:
                            return DONE
                        state = _AFTER
                        self._safe_n = len(pieces)
                        self._safe_heal = closers
                        self.safe_pos = pos
                        continue
                    return ERROR
                # _VALUE or _ARR_FIRST
                if c == "{" or c == "[":
                    if not stack:
                        self.start = pos
                        if pieces:  # leading whitespace is not part of the value
                            pieces.clear()
                    append(c)
                    pos += 1
                    stack.append(c)
                    if c == "{":
                        closers = "}" + closers
                        state = _OBJ_FIRST
                    else:
                        closers = "]" + closers
                        state = _ARR_FIRST
                    self._safe_n = len(pieces)
                    self._safe_heal = closers
                    self.safe_pos = pos
                    continue
                if c == "]" and state == _ARR_FIRST:
                    append(c)
                    pos += 1
                    stack.pop()
                    closers = closers[1:]
                    if not stack:
                        return DONE
                    state = _AFTER
                    self._safe_n = len(pieces)
                    self._safe_heal = closers
                    self.safe_pos = pos
                    continue
                if not stack:
                    self.start = pos
                    pieces.clear()
                if c == '"':
                    append(c)
                    pos += 1
                    state = _STR
                    in_key = False
                    continue
                if c in _LITERALS:
                    lit = _LITERALS[c]
                    if buf.startswith(lit, pos):
                        append(lit)
                        pos += len(lit)
                    else:
                        if not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                            return NEED
                        return ERROR
                else:
                    m = _NUM_EXTENT.match(buf, pos)
                    if m is None:
                        return ERROR
                    if m.end() >= n and not final:
                        return NEED
                    if not _NUM.match(m.group()):
                        return ERROR
                    append(m.group())
                    pos = m.end()
                # a scalar value ended
                if not stack:
                    return DONE
                state = _AFTER
                self._safe_n = len(pieces)
                self._safe_heal = closers
                self.safe_pos = pos
        finally:
            self.pos = pos
            self._state = state
            self._in_key = in_key
            self._closers = closers
