"""``LlamaCppEngine``: ``engine.base.Engine`` on a llama-cpp-python ``Llama`` in this process.

The engine's options are its constructor's keywords (fast-forward, the prompt cache, the
tool-prefix checkpoints, the strict switch and drafts); the request it runs is the same as for
any engine. Every engine on one ``Llama`` shares its ``generate.LlamaDecoder`` (what the KV cache
holds, one generation at a time), so engines with different options may serve one model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...errors import ToolSpecError
from ..base import Generation, GenerationRequest, GrammarLike, Triggers
from .checkpoints import PrefixCheckpoints
from .drafts import DraftOptions
from .generate import DEFAULT_DRAFTS, LlamaDecoder, decoder_for

__all__ = ["Constrain", "LlamaCppEngine", "constrained"]

Constrain = Literal["request", "first_token", "off"]
"""How the engine applies a request's grammar (``LlamaCppEngine(constrain=...)``)."""
CONSTRAIN_MODES: tuple[Constrain, ...] = ("request", "first_token", "off")


@dataclass(frozen=True)
class FirstTokenGrammar:
    """A lazy grammar constraining from the first token: its rules and root, no triggers."""

    gbnf: str
    root: str = "root"
    lazy: bool = False
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = ()


def constrained(
    request: GenerationRequest, constrain: Constrain
) -> tuple[GrammarLike | None, Triggers]:
    """The grammar and triggers ``request`` decodes with under ``constrain``: as the request
    says; its grammar active from the first token (a lazy one's root, no trigger awaited); or
    none at all (the parser alone reads the calls)."""
    grammar = request.grammar
    if constrain == "off" or grammar is None:
        return None, Triggers()
    if constrain == "first_token" and grammar.lazy:
        return FirstTokenGrammar(gbnf=grammar.gbnf, root=grammar.root), Triggers()
    return grammar, request.triggers


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
    calls (``drafts``; ``None``: none). ``constrain``: ``"request"`` applies the request's
    grammar as built (lazy under ``tool_choice="auto"``); ``"first_token"`` applies a lazy
    grammar from the first token (the reply must then be what its root allows: a call);
    ``"off"`` decodes without any grammar (the parser alone reads the calls). The last two are
    for measuring what the grammar does to answers (bench/constraint_tax.py).

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
        constrain: Constrain = "request",
    ) -> None:
        if constrain not in CONSTRAIN_MODES:
            raise ToolSpecError(
                f"constrain={constrain!r} is not a mode; pass one of {', '.join(CONSTRAIN_MODES)}",
                param="constrain",
            )
        self.decoder: LlamaDecoder = decoder_for(llama)
        """The ``Llama``'s shared decoder (tokens, KV-cache bookkeeping, one turn at a time)."""
        self.fast_forward = fast_forward
        self.prompt_cache = prompt_cache
        self.checkpoints = checkpoints
        self.strict_calls = strict_calls
        self.drafts = drafts
        self.constrain: Constrain = constrain

    def __repr__(self) -> str:
        return f"LlamaCppEngine(fast_forward={self.fast_forward!r})"

    def run(self, request: GenerationRequest) -> Generation:
        """``engine.base.Engine``: one generation of a request the front end prepared."""
        grammar, triggers = constrained(request, self.constrain)
        return self.decoder.generate(
            request.prompt,
            grammar=grammar,
            triggers=triggers,
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
