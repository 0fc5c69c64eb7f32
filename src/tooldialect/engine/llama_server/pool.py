"""Which llama-server answers a request: the least busy one serving the model, except that a
conversation goes back to the server and slot that hold its prefix (their prompt cache).

A server that cannot be reached or answers 5xx is set aside for ``cooldown`` seconds and the
request goes to the next; ``ServerClient`` bounds the whole search by its ``retry_window``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import OptionError
from .http import HttpStatusError, Unreachable, get_json

__all__ = ["Backend", "ServerPool"]

_STICKY_SHARE = 0.9
"""A prompt continues a slot's conversation when it starts with this share of the slot's text."""
_STICKY_MIN_CHARS = 16


@dataclass
class Backend:
    """One llama-server, as the pool knows it."""

    url: str
    """Base URL, e.g. ``http://127.0.0.1:8080``."""
    props: dict[str, Any] | None = None
    """The server's ``/props`` (``None`` until it answered once)."""
    in_flight: int = 0
    """Requests this client has running there now."""
    down_until: float = 0.0
    """``time.monotonic()`` before which the server is not tried (it failed recently)."""
    held: dict[int, str] = field(default_factory=dict)
    """Slot id -> the text (prompt and reply) that slot last processed for this client."""

    @property
    def slots(self) -> int:
        """How many requests the server runs at once (``--parallel``)."""
        return int((self.props or {}).get("total_slots", 1) or 1)

    @property
    def model(self) -> str:
        """The model the server serves (its alias, or the GGUF path)."""
        props = self.props or {}
        return str(props.get("model_alias") or props.get("model_path") or "")


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on the first difference: prompts are long
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _serves(backend: Backend, model: str | None) -> bool:
    if not model:
        return True
    served = backend.model
    return served == model or served.rsplit("/", 1)[-1] == model.rsplit("/", 1)[-1]


class ServerPool:
    """The servers of one ``ServerClient`` and the choice among them (thread-safe)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        model: str | None = None,
        probe_timeout: float = 2.0,
        cooldown: float = 5.0,
    ) -> None:
        if not urls:
            raise OptionError("ServerPool needs at least one server URL")
        self.backends = [Backend(url.rstrip("/")) for url in urls]
        self.model = model
        self.probe_timeout = probe_timeout
        self.cooldown = cooldown
        self._lock = threading.Lock()

    def props(self, backend: Backend) -> dict[str, Any] | None:
        """``backend``'s ``/props``, fetched once; ``None`` while it cannot be reached."""
        if backend.props is None:
            try:
                props = get_json(backend.url, "/props", timeout=self.probe_timeout)
            except (Unreachable, HttpStatusError, ValueError):
                return None
            backend.props = props if isinstance(props, dict) else {}
        return backend.props

    def _busy(self, backend: Backend) -> float:
        """Share of the server's slots in use: ``/slots`` when enabled, else this client's count."""
        busy = backend.in_flight
        try:
            slots = get_json(backend.url, "/slots", timeout=self.probe_timeout)
            if isinstance(slots, list):
                busy = max(busy, sum(1 for s in slots if s.get("is_processing")))
        except HttpStatusError:
            pass  # /slots disabled (--no-slots): our own count is all we know
        return busy / backend.slots

    def candidates(
        self, prompt: str, *, exclude: Sequence[Backend] = ()
    ) -> list[tuple[Backend, int]]:
        """Servers to try, best first, each with the slot to ask for (-1: the server picks)."""
        now = time.monotonic()
        usable = [
            b
            for b in self.backends
            if b not in exclude
            and b.down_until <= now
            and self.props(b) is not None
            and _serves(b, self.model)
        ]
        with self._lock:
            sticky = self._sticky(usable, prompt)
        rest = sorted((b for b in usable if sticky is None or b is not sticky[0]), key=self._busy)
        ordered = [(b, -1) for b in rest]
        return [sticky, *ordered] if sticky is not None else ordered

    def _sticky(self, usable: list[Backend], prompt: str) -> tuple[Backend, int] | None:
        best: tuple[int, Backend, int] | None = None
        for b in usable:
            for slot, text in b.held.items():
                shared = _common_prefix(text, prompt)
                if shared >= max(_STICKY_MIN_CHARS, int(len(text) * _STICKY_SHARE)) and (
                    best is None or shared > best[0]
                ):
                    best = (shared, b, slot)
        return (best[1], best[2]) if best is not None else None

    def started(self, backend: Backend) -> None:
        """A request began on ``backend``."""
        with self._lock:
            backend.in_flight += 1

    def finished(self, backend: Backend, *, slot: int | None, text: str | None) -> None:
        """A request ended on ``backend``; ``text`` (prompt + reply) is now in ``slot``."""
        with self._lock:
            backend.in_flight = max(0, backend.in_flight - 1)
            if slot is not None and slot >= 0 and text is not None:
                # another conversation that used this slot no longer has its prefix there
                backend.held[slot] = text

    def failed(self, backend: Backend) -> None:
        """``backend`` failed: skip it for ``cooldown`` seconds and forget what its slots held."""
        with self._lock:
            backend.down_until = time.monotonic() + self.cooldown
            backend.held.clear()
            backend.props = None  # a restarted server may serve something else
