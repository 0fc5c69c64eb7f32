"""State checkpoints at the end of a prompt's tool prefix (the system prompt and tools).

The live KV cache is reused up to the first token where a new prompt differs from it. That is
enough while one conversation only grows, and nowhere else: a step rendered without tools (an
agent's final ``tool_choice="none"`` answer), another conversation with other tools in between,
or a context whose memory cannot be cut back partway (``kv_cache_seq_rm`` refusing) would all
prefill the tool prefix again, tens of thousands of tokens with a few hundred MCP tools.

So the engine keeps llama.cpp's state at the end of the tool prefix, keyed by exactly those
tokens: the first prompt with a tool prefix decodes it, saves the state there and goes on; a
later prompt whose KV cache falls short of its tool prefix loads the state instead of decoding
it. A checkpoint holds the KV cache of the prefix tokens (12.3 KB a token on Qwen2.5-0.5B: about
150 MB for 50 MCP tools), so the store is an LRU bounded in bytes (``capacity``).

Unlike the prompt cache (``prompt_cache``: whole prompt + completion states, off unless asked),
this is on by default: it saves only at the tool prefix, once per tool set, and costs nothing
for prompts without one.

The state is taken lazily where the context's memory can be cut back partway (any model that is
not recurrent or hybrid): the prefix stays live in the KV cache after its request, and only a
later prompt that would overwrite it (other tools, none, or a history cut inside the prefix)
first cuts the KV back to the prefix's end and saves the state there. A conversation that only
grows, or one request, costs no copy and no memory (peak RSS with 10 tools: 735 -> 720 MB on
Qwen2.5-0.5B). A memory that cannot be cut (``memory_cuts``) saves as soon as the prefix is
decoded, as the later cut would fail. (A plain ``create_completion`` that overwrites the prefix
in between is not seen: the prefix is then decoded once more.)
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import OptionError

__all__ = [
    "DEFAULT_CHECKPOINT_BYTES",
    "MIN_PREFIX_TOKENS",
    "CheckpointOption",
    "CheckpointStores",
    "PrefixCheckpoints",
    "PrefixPoint",
    "memory_cuts",
    "prefix_key",
]

DEFAULT_CHECKPOINT_BYTES = 1 << 30
"""The default capacity per model: 1 GiB, about 7 tool prefixes of 50 MCP tools on Qwen2.5-0.5B
(a prefix of 12k tokens is 150 MB), or 80 of 10 ordinary tools."""

MIN_PREFIX_TOKENS = 64
"""Shorter prefixes get no checkpoint: they decode in less time than a state copy takes."""

_REFUSED_KEPT = 64
"""Keys of too-large states remembered (one per tool set that did not fit)."""

CheckpointOption = bool | int
"""``True`` (a store of :data:`DEFAULT_CHECKPOINT_BYTES` per model), an ``int`` (that many bytes
per model) or ``False`` / ``0`` (none)."""


def prefix_key(tokens: Sequence[int]) -> bytes:
    """The key of a prefix: its tokens as bytes (hashing a 12k-token tuple would cost more)."""
    return np.asarray(tokens, dtype=np.int32).tobytes()


def memory_cuts(llama: Any) -> bool:
    """Whether ``llama``'s memory can be cut back partway (``kv_cache_seq_rm`` inside a sequence):
    not for recurrent or hybrid models; ``False`` when it cannot be told (the safe answer: the
    state is then saved when the prefix is decoded)."""
    try:
        import llama_cpp

        model = llama._model.model
        return not (
            llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model)
        )
    except Exception:  # an older binding or a stand-in Llama
        return False


@dataclass
class PrefixPoint:
    """Where a prompt's tool prefix ends, and the store its state goes to."""

    length: int
    """Tokens of the prefix."""
    key: bytes
    """``prefix_key`` of those tokens."""
    store: PrefixCheckpoints
    stats: Any
    """The request's ``LlamaCppStats``, told what the checkpoint did."""


class PrefixCheckpoints:
    """Saved states by exact prefix tokens, least recently used dropped first once their sizes
    (``llama_state_size``) pass ``capacity`` bytes. A state larger than the capacity is not
    kept at all."""

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
            raise OptionError(
                f"a checkpoint capacity of {capacity!r} bytes is no capacity; pass a positive "
                f"number of bytes"
            )
        self.capacity = capacity
        self._states: OrderedDict[bytes, Any] = OrderedDict()
        self.size = 0
        """Bytes held (the sum of the states' ``llama_state_size``)."""
        self.hits = 0
        """Checkpoints loaded (each one a tool prefix not decoded again)."""
        self.saves = 0
        """Checkpoints stored."""
        self._refused: OrderedDict[bytes, None] = OrderedDict()
        """Keys of states too large to keep (recent ones): not captured again, each capture
        being a copy of the whole state."""

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, key: bytes) -> bool:
        return key in self._states

    def wants(self, key: bytes) -> bool:
        """Whether a state for ``key`` is worth capturing: none is kept, and none was refused
        as too large."""
        return key not in self._states and key not in self._refused

    def get(self, key: bytes) -> Any:
        """The state saved under ``key`` (counted as a hit, made most recent), else ``None``."""
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
            self.hits += 1
        return state

    def put(self, key: bytes, state: Any) -> bool:
        """Keep ``state`` under ``key``, evicting the oldest past the capacity; returns whether
        it was kept (a state larger than the whole capacity is not)."""
        size = int(state.llama_state_size)
        if size > self.capacity:
            self._refused[key] = None
            while len(self._refused) > _REFUSED_KEPT:
                self._refused.popitem(last=False)
            return False
        old = self._states.pop(key, None)
        if old is not None:
            self.size -= int(old.llama_state_size)
        while self._states and self.size + size > self.capacity:
            _, evicted = self._states.popitem(last=False)
            self.size -= int(evicted.llama_state_size)
        self._states[key] = state
        self.size += size
        self.saves += 1
        return True


class CheckpointStores:
    """Resolves a ``prefix_checkpoints`` option to the store of one ``Llama`` (one per model: a
    state saved by one model must never be loaded into another)."""

    def __init__(self, option: CheckpointOption) -> None:
        if not isinstance(option, (bool, int)) or (not isinstance(option, bool) and option < 0):
            raise OptionError(
                f"prefix_checkpoints={option!r} is not an option; pass True (1 GiB per model), "
                f"a capacity in bytes, or False"
            )
        self.capacity = DEFAULT_CHECKPOINT_BYTES if option is True else int(option)
        self._stores: weakref.WeakKeyDictionary[Any, PrefixCheckpoints] = (
            weakref.WeakKeyDictionary()
        )

    def for_llama(self, llama: Any) -> PrefixCheckpoints | None:
        """The store of ``llama`` (``None`` when checkpoints are off)."""
        if not self.capacity:
            return None
        store = self._stores.get(llama)
        if store is None:
            store = PrefixCheckpoints(self.capacity)
            self._stores[llama] = store
        return store
