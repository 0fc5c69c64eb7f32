"""Samplers in C: the llama.cpp sampler chain and a separately held grammar sampler.

llama-cpp-python puts the grammar *inside* the chain, so every step runs it over the whole
vocabulary (151k candidates for Qwen): 0.64x the speed. We do what llama.cpp's
``common/sampling.cpp`` does instead: sample with the chain alone, ask the grammar about that one
token (a 1-candidate array), and only when it is rejected apply the grammar to the full candidate
array and sample again.

Every pointer returned by ``llama_sampler_init_*`` is checked for NULL before it joins anything:
a NULL grammar sampler added to a chain segfaults the process.
"""

from __future__ import annotations

import ctypes
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import GrammarError
from ..base import GrammarLike, SamplingParams

__all__ = [
    "CandidateBuffer",
    "GrammarLike",
    "GrammarSampler",
    "SamplerChain",
    "SamplingParams",
]

_NEG_INF = -math.inf


def _lib() -> Any:
    import llama_cpp

    return llama_cpp


class SamplerChain:
    """A llama.cpp sampler chain built like ``Llama._init_sampler``, minus the grammar.

    The neutral penalties sampler is left out: it does nothing but is stateful, and without it the
    chain's ``accept`` is a no-op, which lets the fast path use ``llama_sampler_sample``.
    """

    def __init__(self, *, n_vocab: int, params: SamplingParams, seed: int) -> None:
        lib = _lib()
        self._lib = lib
        self.ptr = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if not self.ptr:
            raise MemoryError("llama_sampler_chain_init returned NULL")
        self.stateful = params.penalized
        self.greedy_only = (
            params.temperature == 0.0 and not params.penalized and not params.logit_bias
        )
        """The chain is argmax of the raw logits, so "the best token the grammar allows" can be
        found by checking candidates in logit order instead of masking the whole vocabulary."""
        try:
            if params.logit_bias:
                items = list(params.logit_bias.items())
                arr = (lib.llama_logit_bias * len(items))()
                for i, (tok, bias) in enumerate(items):
                    arr[i].token = int(tok)
                    arr[i].bias = float(bias)
                self._add(lib.llama_sampler_init_logit_bias(n_vocab, len(items), arr))
            if params.penalized:
                self._add(
                    lib.llama_sampler_init_penalties(
                        n_vocab,
                        params.penalty_last_n,
                        params.repeat_penalty,
                        params.frequency_penalty,
                        params.presence_penalty,
                    )
                )
            t = params.temperature
            if t < 0.0:
                self._add(lib.llama_sampler_init_dist(seed))
            elif t == 0.0:
                self._add(lib.llama_sampler_init_greedy())
            elif params.mirostat_mode == 1:
                self._add(lib.llama_sampler_init_temp(t))
                self._add(
                    lib.llama_sampler_init_mirostat(
                        n_vocab, seed, params.mirostat_tau, params.mirostat_eta, 100
                    )
                )
            elif params.mirostat_mode == 2:
                self._add(lib.llama_sampler_init_temp(t))
                tau, eta = params.mirostat_tau, params.mirostat_eta
                self._add(lib.llama_sampler_init_mirostat_v2(seed, tau, eta))
            else:
                self._add(lib.llama_sampler_init_top_k(params.top_k))
                self._add(lib.llama_sampler_init_typical(params.typical_p, 1))
                self._add(lib.llama_sampler_init_top_p(params.top_p, 1))
                self._add(lib.llama_sampler_init_min_p(params.min_p, 1))
                self._add(lib.llama_sampler_init_temp(t))
                self._add(lib.llama_sampler_init_dist(seed))
        except BaseException:
            self.close()
            raise

    def _add(self, smpl: Any) -> None:
        if not smpl:
            raise MemoryError("a llama.cpp sampler constructor returned NULL")
        self._lib.llama_sampler_chain_add(self.ptr, smpl)

    def close(self) -> None:
        """Free the chain (and the samplers it owns)."""
        if self.ptr:
            self._lib.llama_sampler_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        self.close()


class GrammarSampler:
    """One grammar sampler (lazy or not), created only from a grammar llama.cpp accepted."""

    def __init__(
        self,
        vocab: Any,
        grammar: GrammarLike,
        *,
        trigger_tokens: Sequence[int] = (),
        trigger_patterns: Sequence[str] = (),
    ) -> None:
        lib = _lib()
        self._lib = lib
        self.ptr: Any = None  # set before anything can fail: __del__ closes what exists
        gbnf = grammar.gbnf.encode("utf-8")
        root = grammar.root.encode("utf-8")
        if grammar.lazy:
            pats = (ctypes.c_char_p * max(1, len(trigger_patterns)))()
            for i, p in enumerate(trigger_patterns):
                pats[i] = p.encode("utf-8")
            toks = (lib.llama_token * max(1, len(trigger_tokens)))(*trigger_tokens)
            ptr = lib.llama_sampler_init_grammar_lazy_patterns(
                vocab, gbnf, root, pats, len(trigger_patterns), toks, len(trigger_tokens)
            )
        else:
            ptr = lib.llama_sampler_init_grammar(vocab, gbnf, root)
        if not ptr:
            raise GrammarError(
                f"llama.cpp rejected the grammar (root {grammar.root!r}); it starts with "
                f"{grammar.gbnf[:200]!r}. Check the GBNF with "
                "grammar_check.validate_grammar."
            )
        self.ptr = ptr
        self.lazy = grammar.lazy
        self._one = lib.llama_token_data()
        self._one_arr = lib.llama_token_data_array(
            data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False
        )
        self._one_ref = ctypes.byref(self._one_arr)

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next (a 1-candidate apply: O(1) in the vocab)."""
        one = self._one
        one.id = token
        one.logit = 1.0
        one.p = 0.0
        arr = self._one_arr
        arr.size = 1
        arr.selected = -1
        self._lib.llama_sampler_apply(self.ptr, self._one_ref)
        return bool(one.logit != _NEG_INF)

    def allowed_prefix(self, tokens: Sequence[int]) -> int:
        """How many of ``tokens`` the grammar accepts in a row from here, asked of a clone (this
        sampler does not move). Never given an end-of-generation token (see :meth:`accept`)."""
        lib = self._lib
        clone = lib.llama_sampler_clone(self.ptr)
        if not clone:
            return 0
        own, self.ptr = self.ptr, clone
        try:
            n = 0
            for t in tokens:
                if not self.allows(t):
                    break
                lib.llama_sampler_accept(clone, t)
                n += 1
            return n
        finally:
            self.ptr = own
            lib.llama_sampler_free(clone)

    def accept(self, token: int) -> None:
        """Advance the grammar. Only ever called with a token :meth:`allows` (never an EOG token:
        llama.cpp aborts when an unfinished grammar accepts end-of-generation)."""
        self._lib.llama_sampler_accept(self.ptr, token)

    def close(self) -> None:
        """Free the sampler."""
        if self.ptr:
            self._lib.llama_sampler_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        self.close()


class CandidateBuffer:
    """A preallocated full-vocabulary ``llama_token_data_array``, filled from the logits only on the
    slow path (a grammar rejection, or penalties that must not see rejected tokens)."""

    def __init__(self, n_vocab: int) -> None:
        lib = _lib()
        self._lib = lib
        self.n_vocab = n_vocab
        dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        self.data = np.zeros(n_vocab, dtype=dtype)
        self._ids = np.arange(n_vocab, dtype=np.intc)
        self.array = lib.llama_token_data_array(
            data=self.data.ctypes.data_as(lib.llama_token_data_p),
            size=n_vocab,
            selected=-1,
            sorted=False,
        )
        self.ref = ctypes.byref(self.array)

    def fill(self, ctx: Any, idx: int = -1) -> None:
        """Copy the logits of output ``idx`` into the array and reset its bookkeeping."""
        ptr = self._lib.llama_get_logits_ith(ctx, idx)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        self.data["id"] = self._ids
        self.data["logit"] = logits
        self.data["p"] = 0.0
        self.array.size = self.n_vocab
        self.array.selected = -1
        self.array.sorted = False

    def top_tokens(self, ctx: Any, k: int, idx: int = -1) -> list[int]:
        """The ``k`` highest-logit token ids of output ``idx``, best first (no full copy)."""
        ptr = self._lib.llama_get_logits_ith(ctx, idx)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        k = min(k, self.n_vocab)
        part = np.argpartition(logits, -k)[-k:]
        # stable order on ties, lowest id first, as llama.cpp's greedy sampler picks
        order = np.lexsort((part, -logits[part]))
        return [int(t) for t in part[order]]

    def selected(self) -> tuple[int, float]:
        """The token the last sampler selected, and its logit."""
        i = int(self.array.selected)
        if i < 0 or i >= int(self.array.size):
            return -1, _NEG_INF
        return int(self.data["id"][i]), float(self.data["logit"][i])


def draw_seed(llama_seed: int, seed: int | None) -> int:
    """The seed ``create_completion`` would use."""
    if seed is not None:
        return int(seed) & 0xFFFFFFFF
    return random.Random(llama_seed).randint(0, 2**32) & 0xFFFFFFFF
