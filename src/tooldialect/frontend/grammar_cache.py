"""The per-model grammar cache: a bounded LRU map from a request's shape to its grammar."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine.base import GrammarLike

__all__ = ["GRAMMAR_CACHE_SIZE", "GrammarCache"]

GRAMMAR_CACHE_SIZE = 64
"""Grammars kept per model. A key is one request shape (the tools' JSON, ``tool_choice``,
parallelism, reasoning state, response schema, layout): an application sends a handful, an
agent framework a few per tool set, so 64 keeps every live shape of even a busy shared server
cached (a rebuild costs milliseconds for ordinary tools). What it bounds is memory under
clients that send ever-new tool sets: a grammar is a few KB to a few hundred KB of GBNF, so
the cache stays in the low megabytes instead of growing with every distinct request."""


class GrammarCache(OrderedDict[tuple[Any, ...], "GrammarLike | None"]):
    """An ``OrderedDict`` that keeps the ``capacity`` most recently used grammars."""

    def __init__(self, capacity: int = GRAMMAR_CACHE_SIZE) -> None:
        super().__init__()
        self.capacity = capacity

    def __getitem__(self, key: tuple[Any, ...]) -> GrammarLike | None:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def __setitem__(self, key: tuple[Any, ...], value: GrammarLike | None) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.capacity:
            self.popitem(last=False)
