"""Which llama-server answers a request: the least busy one serving the model, except that a
conversation goes back to the server and slot that hold its prefix (their prompt cache).

Choosing probes every usable server's ``/slots`` (in parallel, each within ``probe_timeout``).
A server that is down, refuses the connection, does not answer the probe in time (a stopped or
wedged process) or answers it with garbage is set aside for ``cooldown`` seconds: it costs that
server its turn, never the request, while another server is healthy. So does a server that
cannot be reached or answers 5xx once the request is sent; ``ServerClient`` bounds the whole
search by its ``retry_window``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .http import HttpStatusError, Unreachable, get_json

__all__ = ["Backend", "ServerPool"]

_STICKY_SHARE = 0.9
"""A prompt continues a slot's conversation when it starts with this share of the slot's text."""
_STICKY_MIN_CHARS = 16
_SLOTS_DISABLED = (404, 405, 501)
"""``/slots`` statuses of a healthy server that does not expose it (``--no-slots``)."""


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
            raise ValueError("ServerPool needs at least one server URL")
        self.backends = [Backend(url.rstrip("/")) for url in urls]
        self.model = model
        self.probe_timeout = probe_timeout
        self.cooldown = cooldown
        self._lock = threading.Lock()

    def props(self, backend: Backend) -> dict[str, Any] | None:
        """``backend``'s ``/props``, fetched once; ``None`` while it cannot be reached (the
        server then sits out a cooldown rather than be asked again at once)."""
        if backend.props is None:
            try:
                props = get_json(backend.url, "/props", timeout=self.probe_timeout)
            except (Unreachable, HttpStatusError, ValueError):
                self.failed(backend)
                return None
            backend.props = props if isinstance(props, dict) else {}
        return backend.props

    def _busy(self, backend: Backend) -> float | None:
        """Share of the server's slots in use (``/slots`` when enabled, else this client's
        count); ``None`` when the probe failed, and the server is set aside."""
        busy = backend.in_flight
        try:
            slots = get_json(backend.url, "/slots", timeout=self.probe_timeout)
            if not isinstance(slots, list) or not all(isinstance(s, dict) for s in slots):
                raise ValueError(f"/slots answered {str(slots)[:80]!r}, not a list of slots")
            busy = max(busy, sum(1 for s in slots if s.get("is_processing")))
        except HttpStatusError as exc:
            if exc.status not in _SLOTS_DISABLED:
                self.failed(backend)
                return None
            # /slots disabled: our own count is all we know
        except (Unreachable, ValueError):
            self.failed(backend)
            return None
        return busy / backend.slots

    def _loads(self, backends: list[Backend]) -> list[tuple[Backend, float]]:
        """The servers whose probe answered, with their load. A single server is not probed:
        there is nothing to choose, and the request itself finds out whether it answers."""
        if len(backends) <= 1:
            return [(b, b.in_flight / b.slots) for b in backends]
        with ThreadPoolExecutor(max_workers=len(backends)) as probes:
            loads = list(probes.map(self._busy, backends))
        return [(b, load) for b, load in zip(backends, loads, strict=True) if load is not None]

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
        loads = self._loads(usable)
        with self._lock:
            sticky = self._sticky([b for b, _ in loads], prompt)
        rest = sorted(
            (entry for entry in loads if sticky is None or entry[0] is not sticky[0]),
            key=lambda entry: entry[1],
        )
        ordered = [(b, -1) for b, _ in rest]
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
