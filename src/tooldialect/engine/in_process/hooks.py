"""Optional per-token hooks around the sampler: a caller's logits processor, and logprobs.

Each is a wrapper around the engine's sample function, put on only when the request asks for it,
so a request without them runs the sampling loop unchanged (no per-token check, no copy).

Order within one step: the logits processor rewrites the model's logits in place, the sampler
chain draws from them and the grammar checks (and, on rejection, masks and resamples), then
logprobs are read from the same processed logits. Logprobs are therefore those of the
distribution the sampler chain saw *before* the grammar mask and before temperature, top-k/p and
the other truncations: the model's own log-softmax (what llama-cpp-python and OpenAI report). A
token the grammar forced can carry a low logprob; that is the signal, not an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LogprobRecorder", "SampleFn", "with_logits_processor", "with_logprobs"]

SampleFn = Callable[[Any, Any, Any, Any], int]
"""``LlamaDecoder._sample(chain, grammar, ctx, stats) -> token``."""


def _logits(lib: Any, ctx: Any, n_vocab: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A writable view of the last output's logits inside llama.cpp's buffer."""
    return np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))


class LogprobRecorder:
    """Collects OpenAI ``logprobs.content`` entries, one per sampled token."""

    def __init__(self, *, lib: Any, n_vocab: int, top: int, piece: Callable[[int], bytes]) -> None:
        self._lib = lib
        self._n_vocab = n_vocab
        self.top = max(0, min(int(top), n_vocab))
        self._piece = piece
        self.entries: list[dict[str, Any]] = []
        """``{token, logprob, bytes, top_logprobs}`` per token, in order."""

    def _entry(self, token: int, logprob: float) -> dict[str, Any]:
        data = self._piece(token)
        return {
            "token": data.decode("utf-8", errors="replace"),
            "logprob": logprob,
            "bytes": list(data),
        }

    def record(self, ctx: Any, token: int) -> None:
        """Read the step's logits (still in llama.cpp's buffer after sampling) for ``token``."""
        logits = _logits(self._lib, ctx, self._n_vocab)
        top = float(logits.max())
        norm = top + float(np.log(np.exp(logits - top, dtype=np.float64).sum()))
        entry = self._entry(token, float(logits[token]) - norm)
        alts: list[dict[str, Any]] = []
        if self.top:
            part = np.argpartition(logits, -self.top)[-self.top :]
            order = part[np.lexsort((part, -logits[part]))]
            alts = [self._entry(int(t), float(logits[t]) - norm) for t in order]
        entry["top_logprobs"] = alts
        self.entries.append(entry)


def with_logprobs(
    sample: SampleFn, recorder: LogprobRecorder, *, is_eog: Callable[[int], bool]
) -> SampleFn:
    """``sample`` that also records the sampled token's logprobs (not an end-of-generation
    token's: it ends the reply and is never part of it, as ``completion_tokens`` counts)."""

    def sample_recorded(chain: Any, grammar: Any, ctx: Any, stats: Any) -> int:
        token = sample(chain, grammar, ctx, stats)
        if not is_eog(token):
            recorder.record(ctx, token)
        return token

    return sample_recorded


def with_logits_processor(
    sample: SampleFn,
    processor: Callable[[Any, Any], Any],
    *,
    lib: Any,
    n_vocab: int,
    input_ids: Callable[[], Any],
) -> SampleFn:
    """``sample`` after ``processor(input_ids, scores)`` rewrote the logits, as
    llama-cpp-python's ``LogitsProcessorList`` is applied (before any sampler or grammar)."""

    def sample_processed(chain: Any, grammar: Any, ctx: Any, stats: Any) -> int:
        logits = _logits(lib, ctx, n_vocab)
        out = processor(input_ids(), logits)
        if out is not None and out is not logits:
            logits[:] = np.asarray(out, dtype=np.float32)
        return sample(chain, grammar, ctx, stats)

    return sample_processed
