"""Feeding a ``StreamParser`` in random chunks, as the output tables check streaming = batch."""

from __future__ import annotations

import random
from collections.abc import Iterable

from tooldialect.parse import ParsedOutput, StreamParser


def feed_in_random_chunks(
    parser: StreamParser, text: str, rng: random.Random, *, most: int = 6
) -> ParsedOutput:
    """Feed ``text`` in chunks of 1 to ``most`` characters drawn from ``rng``, close, and
    return the parsed result."""
    i = 0
    while i < len(text):
        n = rng.randint(1, most)
        parser.feed(text[i : i + n])
        i += n
    parser.close()
    return parser.result


def feed_chunks(parser: StreamParser, chunks: Iterable[str]) -> ParsedOutput:
    """Feed ``chunks`` as given, close, and return the parsed result."""
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return parser.result
