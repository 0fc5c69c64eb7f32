"""The bounded in-memory store behind ``previous_response_id`` and ``GET /v1/responses/{id}``."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import OptionError
from .convert import ResponsesError

__all__ = ["DEFAULT_CAPACITY", "ResponseStore", "StoredResponse"]

DEFAULT_CAPACITY = 256
"""Responses kept: enough for a few agents' running conversations, small next to a model."""


@dataclass(frozen=True)
class StoredResponse:
    """One stored response and the conversation up to and including it (chat messages,
    without ``instructions``, which a follow-up does not inherit)."""

    response: dict[str, Any]
    history: list[dict[str, Any]]


class ResponseStore:
    """A least-recently-used map of response id -> ``StoredResponse``, ``capacity`` at most.

    Thread-safe: the endpoint writes from the event loop and reads from it; handlers run in
    worker threads but never touch it.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise OptionError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._items: OrderedDict[str, StoredResponse] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def put(
        self, response: Mapping[str, Any], history: Sequence[Mapping[str, Any]]
    ) -> StoredResponse:
        """Store ``response`` (by its ``id``); the least recently used entry goes past capacity."""
        entry = StoredResponse(copy.deepcopy(dict(response)), [dict(m) for m in history])
        with self._lock:
            self._items[entry.response["id"]] = entry
            self._items.move_to_end(entry.response["id"])
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return entry

    def get(self, response_id: str) -> StoredResponse:
        """The stored entry; a ``ResponsesError`` 404 that says why when there is none."""
        with self._lock:
            entry = self._items.get(response_id)
            if entry is not None:
                self._items.move_to_end(response_id)
                return entry
        raise ResponsesError(
            f"no stored response with id {response_id!r}: it was never stored (store=false), "
            f"was deleted, or is older than the {self.capacity} most recent responses this "
            "server keeps in memory (a restart forgets them all); send the conversation as "
            "input items instead",
            status=404,
            param="previous_response_id",
        )

    def delete(self, response_id: str) -> bool:
        """Forget a response; whether it was there."""
        with self._lock:
            return self._items.pop(response_id, None) is not None
