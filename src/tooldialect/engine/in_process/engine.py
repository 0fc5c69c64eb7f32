"""``LlamaCppEngine``: ``engine.base.Engine`` on a llama-cpp-python ``Llama`` in this process.

The engine's options are its constructor's keywords (fast-forward, the prompt cache, the
tool-prefix checkpoints, the strict switch and drafts); the request it runs is the same as for
any engine. Every engine on one ``Llama`` shares its ``generate.LlamaDecoder`` (what the KV cache
holds, one generation at a time), so engines with different options may serve one model.
"""

from __future__ import annotations

from typing import Any

from ..base import Generation, GenerationRequest
from .checkpoints import PrefixCheckpoints
from .drafts import DraftOptions
from .generate import DEFAULT_DRAFTS, LlamaDecoder, decoder_for

__all__ = ["LlamaCppEngine"]


class LlamaCppEngine:
    """Generations on ``llama`` (a ``llama_cpp.Llama``).

    ``fast_forward``: decode the text a call's grammar forces in one batch instead of sampling
    it token by token (docs/fast-forward.md); off by itself for a request with ``logprobs`` or a
    ``logits_processor``. ``prompt_cache``: a ``BaseLlamaCache`` to restore the longest cached
    prefix from and save the final state to (``None``: ``Llama.cache`` as ``create_completion``
    reads it at each request; ``False``: none). ``checkpoints``: the store of tool-prefix states
    (``checkpoints.PrefixCheckpoints``; ``None``: none). ``strict_calls``: with fast-forward,
    switch a lazy grammar to its strict form once its trigger fired (``False`` keeps the lenient
    envelope, for A/B measurements). ``drafts``: with fast-forward, prompt-lookup drafts inside
    calls (``drafts``; ``None``: none).

    Per request it reads ``request.extensions["logits_processor"]``
    (``f(input_ids, scores) -> scores``, as llama-cpp-python's); each result's ``stats`` is a
    ``stats.LlamaCppStats``.
    """

    def __init__(
        self,
        llama: Any,
        *,
        fast_forward: bool = True,
        prompt_cache: Any = None,
        checkpoints: PrefixCheckpoints | None = None,
        strict_calls: bool = True,
        drafts: DraftOptions | None = DEFAULT_DRAFTS,
    ) -> None:
        self.decoder: LlamaDecoder = decoder_for(llama)
        """The ``Llama``'s shared decoder (tokens, KV-cache bookkeeping, one turn at a time)."""
        self.fast_forward = fast_forward
        self.prompt_cache = prompt_cache
        self.checkpoints = checkpoints
        self.strict_calls = strict_calls
        self.drafts = drafts

    def __repr__(self) -> str:
        return f"LlamaCppEngine(fast_forward={self.fast_forward!r})"

    def run(self, request: GenerationRequest) -> Generation:
        """``engine.base.Engine``: one generation of a request the front end prepared."""
        return self.decoder.generate(
            request.prompt,
            grammar=request.grammar,
            triggers=request.triggers,
            sampling=request.sampling,
            max_tokens=request.max_tokens,
            stop=request.stop,
            prompt_cache=self.prompt_cache,
            fast_forward=self.fast_forward,
            logprobs=request.logprobs,
            logits_processor=request.extensions.get("logits_processor"),
            prefix=request.prefix,
            checkpoints=self.checkpoints,
            strict_calls=self.strict_calls,
            drafts=self.drafts,
        )

    def tokenize_prompt(self, prompt: str) -> list[int]:
        """Tokens of a rendered prompt, as :meth:`run` decodes it."""
        return self.decoder.tokenize_prompt(prompt)
