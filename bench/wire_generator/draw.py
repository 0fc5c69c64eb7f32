"""The seeded draw of a template's spellings (marker words, separators, key names), recorded so a
template can be reported and rebuilt."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["Draw"]

T = TypeVar("T")


class Draw:
    """Choices drawn from one ``random.Random``, each recorded under a name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.record: dict[str, str] = {}

    def one(self, name: str, options: Sequence[T]) -> T:
        """One of ``options``, recorded as ``name``."""
        value = self.rng.choice(list(options))
        self.record[name] = repr(value)
        return value

    def word(self, name: str, options: Sequence[str]) -> str:
        """One word of ``options`` (recorded as it is)."""
        value = self.rng.choice(list(options))
        self.record[name] = value
        return value
