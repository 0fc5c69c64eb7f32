"""Token bytes in, text out: the one output-text rule every engine applies.

A token's piece may end inside a UTF-8 sequence (byte-level vocabularies split characters), and
a model may write bytes that never complete one. Bytes that may still complete a sequence are
held back; where a sequence cannot complete, it becomes U+FFFD at that point and the text after
it flows on (never an exception, never a stall). Stop strings are cut, and a tail that may begin
one is held back until the next piece says whether it does.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

__all__ = ["TextStream", "find_stop", "safe_emit"]


def find_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """The earliest stop string in ``text``: ``(offset, stop)``, or ``None``."""
    best: tuple[int, str] | None = None
    for s in stops:
        i = text.find(s)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, s)
    return best


def safe_emit(pending: str, stops: Sequence[str], hold: int) -> int:
    """How much of ``pending`` can go out: all but a tail that might start a stop string."""
    for k in range(min(hold, len(pending)), 0, -1):
        tail = pending[-k:]
        if any(s.startswith(tail) for s in stops):
            return len(pending) - k
    return len(pending)


class TextStream:
    """Incremental output text of one generation (see the module docstring)."""

    def __init__(self, stops: Sequence[str] = ()) -> None:
        self.stops = [s for s in dict.fromkeys(stops) if s]
        self._hold = max((len(s) for s in self.stops), default=1) - 1
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # decoded, not yet emitted (might begin a stop string)
        self._out: list[str] = []
        self.stopped_by: str | None = None
        """The stop string that ended the text, once one did."""

    @property
    def text(self) -> str:
        """Everything emitted so far."""
        return "".join(self._out)

    def feed(self, piece: bytes | str) -> str:
        """The text ``piece`` releases (possibly empty). After a stop string, nothing more."""
        if self.stopped_by is not None:
            return ""
        data = piece.encode("utf-8") if isinstance(piece, str) else piece
        self._pending += self._decoder.decode(data)
        return self._release(final=False)

    def finish(self) -> str:
        """The held-back rest: incomplete bytes become U+FFFD, a stop string is still cut."""
        if self.stopped_by is not None:
            return ""
        self._pending += self._decoder.decode(b"", final=True)
        return self._release(final=True)

    def _release(self, *, final: bool) -> str:
        pending = self._pending
        if self.stops:
            hit = find_stop(pending, self.stops)
            if hit is not None:
                pending, self.stopped_by = pending[: hit[0]], hit[1]
                cut = len(pending)
            else:
                cut = len(pending) if final else safe_emit(pending, self.stops, self._hold)
        else:
            cut = len(pending)
        out, self._pending = pending[:cut], pending[cut:]
        if out:
            self._out.append(out)
        return out
