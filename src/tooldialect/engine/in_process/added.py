"""A vocab's added tokens (control and user-defined: ``<tool_call>``, ``<think>``...), as
fast-forward's seam rules and the drafts read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["AddedTokens", "read_added_tokens"]


class AddedTokens(NamedTuple):
    """A vocab's added tokens, as fast-forward's seam rules read them."""

    ids: frozenset[int]
    """Their ids: forced text never holds one."""
    prefixes: frozenset[str]
    """Their texts' proper prefixes: forced text stops before a tail that is one."""
    longest_prefix: int
    """The longest of ``prefixes`` (0 when there are none)."""


def read_added_tokens(
    lib: Any, vocab: Any, n_vocab: int, piece: Callable[[int], bytes]
) -> AddedTokens:
    """The added tokens of ``vocab`` (one pass over it; ``piece`` renders a token's bytes)."""
    kinds = lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_USER_DEFINED
    ids: set[int] = set()
    prefixes: set[str] = set()
    for tok in range(n_vocab):
        if lib.llama_vocab_get_attr(vocab, tok) & kinds:
            ids.add(tok)
            text = piece(tok).decode("utf-8", "replace")
            prefixes.update(text[:k] for k in range(1, len(text)))
    return AddedTokens(
        ids=frozenset(ids),
        prefixes=frozenset(prefixes),
        longest_prefix=max(map(len, prefixes), default=0),
    )
