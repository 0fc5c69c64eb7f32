"""What every engine takes and yields: the ``Engine`` protocol and its engine-neutral types.

The front end (``tooldialect.frontend``) prepares a ``GenerationRequest`` (the rendered prompt,
the grammar with its triggers resolved, sampling, stops); an engine decodes it and returns a
``Generation``: an iterator of text pieces whose ``GenerationResult`` is complete once it has
been consumed. The in-process engine (``in_process``) and the llama-server engine
(``llama_server``) implement it, and so does the scripted engine the tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = [
    "Engine",
    "FinishReason",
    "Generation",
    "GenerationRequest",
    "GenerationResult",
    "GrammarLike",
    "SamplingParams",
    "Triggers",
]

FinishReason = Literal["stop", "length"]


@dataclass
class SamplingParams:
    """Sampling options with ``create_chat_completion``'s meaning and defaults: the one place
    the defaults are written (``frontend.options.ChatOptions`` builds them from a request)."""

    temperature: float = 0.2
    """0 means greedy; below 0 samples from the raw distribution."""
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    penalty_last_n: int = 64
    """Window of the penalties (llama-cpp-python's ``last_n_tokens_size``)."""
    mirostat_mode: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    seed: int | None = None
    """RNG seed; ``None`` draws one the way ``create_completion`` does."""
    logit_bias: Mapping[int, float] | None = field(default=None)
    """Token id -> additive bias."""

    @property
    def penalized(self) -> bool:
        """Whether the penalties sampler does anything (it is stateful, so it matters)."""
        return not (
            self.repeat_penalty == 1.0
            and self.presence_penalty == 0.0
            and self.frequency_penalty == 0.0
        )


class GrammarLike(Protocol):
    """What an engine reads from a grammar (``tooldialect.grammar.ToolGrammar``, or a caller's
    ``LlamaGrammar`` passed through)."""

    @property
    def gbnf(self) -> str: ...
    @property
    def root(self) -> str: ...
    @property
    def lazy(self) -> bool: ...
    @property
    def trigger_words(self) -> Sequence[str]: ...
    @property
    def trigger_patterns(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class Triggers:
    """A lazy grammar's triggers as the front end resolved them, the same for every engine."""

    words: tuple[str, ...] = ()
    """Literal trigger words; an engine may use a trigger token where one token spells a word."""
    word_patterns: tuple[str, ...] = ()
    """The full-match pattern of each word (same order), where no single token spells it."""
    patterns: tuple[str, ...] = ()
    """Full-match ECMAScript patterns with llama.cpp's semantics (the grammar starts at the
    first non-empty capture group)."""

    def pattern_of(self, word: str) -> str | None:
        """The full-match pattern of ``word`` (``None`` if it is not one of :attr:`words`)."""
        for known, pattern in zip(self.words, self.word_patterns, strict=True):
            if known == word:
                return pattern
        return None


@dataclass(frozen=True)
class GenerationRequest:
    """Everything one generation takes, prepared by the front end."""

    prompt: str
    """The rendered prompt (special tokens written as text)."""
    grammar: GrammarLike | None = None
    triggers: Triggers = Triggers()
    """The lazy grammar's triggers (empty for a grammar that constrains from the first token)."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_tokens: int | None = None
    """``None`` or <= 0: until the context is full."""
    stop: tuple[str, ...] = ()
    """Stop strings (the caller's and the dialect's): generation ends before the first one."""
    logprobs: int | None = None
    """``None``: none asked; else the number of top alternatives per token (0 for none)."""
    logits_processor: Callable[[Any, Any], Any] | None = None
    """Rewrites the logits before each step (in-process only: it cannot cross HTTP)."""
    bos: str = ""
    """The model's BOS text: an engine whose tokenizer adds a BOS strips a leading one."""
    markers: tuple[str, ...] = ()
    """Marker texts the parser must see in the output, even where they are special tokens."""
    fast_forward: bool = False
    """Decode text the grammar forces in one batch where the engine can (the server engine
    samples every token)."""
    prompt_cache: Any = None
    """The in-process engine's prompt-state cache (``None``: ``Llama.cache``; ``False``: none);
    the server engine keeps its own per-slot cache."""
    prefix: str = ""
    """The head of ``prompt`` every request with these tools and system prompt shares (the
    tool prefix, see ``frontend.prefix``); ``""`` when the front end found none."""
    checkpoints: Any = None
    """The in-process engine's store of tool-prefix states (``engine.in_process.checkpoints``;
    ``None``: none); the server engine ignores it."""


@dataclass
class GenerationResult:
    """What one generation did, for usage accounting, tests and benchmarks."""

    text: str = ""
    """The full generated text (stop string excluded, special tokens visible)."""
    finish_reason: FinishReason = "length"
    """``stop`` (end-of-generation token or stop string) or ``length`` (max_tokens / n_ctx)."""
    prompt_tokens: int = 0
    """Length of the whole prompt in tokens."""
    completion_tokens: int = 0
    """Tokens sampled (the end-of-generation token not counted)."""
    last_prompt_eval_tokens: int = 0
    """Prompt tokens actually decoded; the rest came from the KV cache."""
    prefix_tokens: int = 0
    """Tokens of the prompt's tool prefix (0: none, or the engine keeps no checkpoints)."""
    checkpoint: str = ""
    """What the tool-prefix checkpoint did: ``"loaded"`` (the prefix was not decoded),
    ``"kept"`` (it was decoded and stays live, saved once a later prompt would overwrite it),
    ``"saved"`` (it was decoded and saved at once: memory that cannot be cut back), ``""``
    (neither: the KV cache already held it, or no store wants it)."""
    grammar_resamples: int = 0
    """Steps where the grammar rejected the freely sampled token and the step was resampled."""
    stopped_by: str | None = None
    """The stop string that ended generation, if one did."""
    forced_tokens: int = 0
    """Completion tokens fast-forwarded (appended because the grammar forced them), not sampled."""
    forced_positions: list[int] = field(default_factory=list)
    """1-based completion-token positions that were forced (for per-token records: logprobs)."""
    draft_proposed: int = 0
    """Prompt-lookup draft tokens decoded (``engine.in_process.drafts``)."""
    draft_accepted: list[int] = field(default_factory=list)
    """Draft tokens the sampler chain agreed with, per drafted batch (their sum is the tokens
    that took no step of their own)."""
    logprobs: list[dict[str, Any]] | None = None
    """OpenAI ``logprobs.content`` entries, one per sampled token, when they were asked for."""


class Generation:
    """An iterator of text pieces; :attr:`result` is complete once it is exhausted."""

    def __init__(self, pieces: Iterator[str], result: GenerationResult) -> None:
        self._pieces = pieces
        self.result = result

    def __iter__(self) -> Iterator[str]:
        return self._pieces

    def __next__(self) -> str:
        return next(self._pieces)

    def text(self) -> str:
        """Run to the end and return the whole text."""
        for _ in self._pieces:
            pass
        return self.result.text

    def close(self) -> None:
        """Stop early (frees what the engine holds for it)."""
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()


class Engine(Protocol):
    """What decodes. Everything that can fail before the first token (a context overflow, a
    grammar llama.cpp would reject, no server answering) raises in :meth:`run`; the returned
    ``Generation`` then only generates."""

    def run(self, request: GenerationRequest) -> Generation:
        """Start one generation."""
        ...
