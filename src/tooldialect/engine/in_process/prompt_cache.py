"""A prompt cache across conversations, with llama-cpp-python's ``Llama.cache`` semantics.

``Llama._create_completion`` looks the prompt up in ``Llama.cache`` (a ``LlamaRAMCache`` or
``LlamaDiskCache``: the entry whose key shares the longest token prefix with the prompt), loads
that state when it covers more of the prompt than the live KV cache does, and after the
completion stores the state under ``prompt + completion`` tokens. We do the same, so one cache
serves our turns and plain ``create_completion`` calls alike and entries written by either are
read by both.

One difference, for memory: ``Llama.save_state`` copies ``Llama.scores`` up to ``n_tokens`` rows,
which without ``logits_all`` is an ``n_batch x n_vocab`` float array that nothing reads (sampling
happens in llama.cpp's sampler; llama-cpp-python only fills ``scores`` when ``logits_all``). For
Qwen2.5 that is 311 MB per entry, uncounted by the cache's ``capacity_bytes``. Without
``logits_all`` we store one row instead (``Llama.load_state`` broadcasts it, so the entry stays
loadable by llama-cpp-python); with ``logits_all`` we store what ``save_state`` does.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import EngineError, OptionError

__all__ = [
    "PromptCacheOption",
    "PromptCaches",
    "capture_state",
    "common_prefix",
    "load_captured",
    "restore_prompt",
    "save_prompt",
]

PromptCacheOption = Any
"""``None`` (use ``Llama.cache`` when set), ``False`` (never), ``True`` (a ``LlamaRAMCache`` of
the default 2 GiB per model), an ``int`` (a ``LlamaRAMCache`` of that many bytes per model), or a
``BaseLlamaCache`` object (used as is; its entries belong to one model)."""


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    if not n:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.nonzero(x != y)[0]
    return int(diff[0]) if len(diff) else n


def restore_prompt(llama: Any, cache: Any, tokens: Sequence[int]) -> int:
    """Load the cached state sharing the longest prefix with ``tokens`` when it covers more of
    them than the live KV cache does (``Llama._create_completion``'s rule); returns the number
    of prompt tokens the restored state covers, 0 when nothing was loaded."""
    try:
        item = cache[list(tokens)]
    except KeyError:
        return 0
    cached = common_prefix(item.input_ids[: item.n_tokens].tolist(), tokens)
    live = common_prefix(llama._input_ids.tolist(), tokens)
    if cached <= live:
        return 0
    load_captured(llama, item)
    return cached


def save_prompt(llama: Any, cache: Any, key: Sequence[int]) -> None:
    """Store the live state under ``key`` (prompt + completion tokens, as llama-cpp-python)."""
    cache[list(key)] = capture_state(llama)


def capture_state(llama: Any) -> Any:
    """The live state as a ``llama_cpp.LlamaState`` (one row of scores without ``logits_all``,
    see the module's docstring); ``llama_state_size`` is its KV byte count."""
    import llama_cpp

    if llama._logits_all:
        return llama.save_state()
    ctx = llama._ctx.ctx
    size = int(llama_cpp.llama_state_get_size(ctx))
    # written in place into the bytearray that is kept (a bytes copy would double the peak)
    data = bytearray(size)
    view = (ctypes.c_uint8 * size).from_buffer(data)
    n_bytes = int(llama_cpp.llama_state_get_data(ctx, view, size))
    del view  # releases the export, so the bytearray can be trimmed
    if n_bytes > size:
        raise EngineError("llama_state_get_data wrote past the buffer it was given")
    del data[n_bytes:]
    # one row: Llama.load_state broadcasts it over scores[:n_tokens], which nothing reads here
    row = max(0, min(int(llama.n_tokens), llama.scores.shape[0]) - 1)
    return llama_cpp.LlamaState(
        scores=llama.scores[row : row + 1, :].copy(),
        input_ids=llama.input_ids.copy(),
        n_tokens=int(llama.n_tokens),
        llama_state=data,  # type: ignore[arg-type]  # a bytearray: read in place when loaded
        llama_state_size=n_bytes,
        seed=llama._seed,
    )


def load_captured(llama: Any, state: Any) -> None:
    """Make ``state`` (from :func:`capture_state` or ``Llama.save_state``) the live state."""
    if llama._logits_all:
        llama.load_state(state)
        return
    import llama_cpp

    size = int(state.llama_state_size)
    raw = state.llama_state
    array = ctypes.c_uint8 * size
    # a captured state is a bytearray, read in place; bytes (Llama.save_state's) are copied
    data = array.from_buffer(raw) if isinstance(raw, bytearray) else array.from_buffer_copy(raw)
    if int(llama_cpp.llama_state_set_data(llama._ctx.ctx, data, size)) != size:
        raise EngineError("llama_state_set_data did not accept the cached state")
    # Llama.load_state's bookkeeping, minus the scores nothing reads without logits_all
    llama.input_ids = state.input_ids.copy()
    llama.n_tokens = int(state.n_tokens)
    llama._requires_eval = True
    llama._seed = state.seed


class PromptCaches:
    """Resolves a ``prompt_cache`` option to the cache of one ``Llama`` (one per model: a state
    saved by one model must never be loaded into another)."""

    def __init__(self, option: PromptCacheOption) -> None:
        if not (option is None or isinstance(option, (bool, int)) or _is_cache(option)):
            raise OptionError(
                f"prompt_cache={option!r} is not an option; pass True, a capacity in bytes, a "
                f"llama_cpp.LlamaRAMCache/LlamaDiskCache, False, or None (use Llama.cache)"
            )
        if isinstance(option, int) and not isinstance(option, bool) and option <= 0:
            raise OptionError(
                f"prompt_cache={option} bytes is no capacity; pass a positive number of bytes"
            )
        self.option = option
        self._owned: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._bound: weakref.ref[Any] | None = None

    def for_llama(self, llama: Any) -> Any:
        """The cache to use with ``llama`` (``None`` for none)."""
        option = self.option
        if option is None:
            return getattr(llama, "cache", None)
        if option is False:
            return None
        if option is True or isinstance(option, int):
            cache = self._owned.get(llama)
            if cache is None:
                from llama_cpp.llama_cache import LlamaRAMCache

                cache = LlamaRAMCache() if option is True else LlamaRAMCache(int(option))
                self._owned[llama] = cache
            return cache
        bound = self._bound() if self._bound is not None else None
        if bound is None:
            self._bound = weakref.ref(llama)
        elif bound is not llama:
            raise OptionError(
                "this prompt_cache object already holds states of another Llama; give each "
                "model its own cache (or pass prompt_cache=True to get one per model)"
            )
        return option


def _is_cache(value: Any) -> bool:
    return all(hasattr(value, name) for name in ("__getitem__", "__setitem__", "cache_size"))
