"""What every engine takes and yields: the ``Engine`` protocol and its engine-neutral types.

This module is the whole contract between the front end and an engine; an engine's author needs
nothing else.

**The flow.** The front end (``tooldialect.frontend``) renders the prompt, builds the grammar and
resolves its lazy triggers, and hands one ``GenerationRequest`` to :meth:`Engine.run`. The engine
returns a ``Generation``: an iterator of text pieces whose ``GenerationResult`` is complete once
the iterator is exhausted (the front end parses the pieces as they come, and reads the result
for usage and the finish reason).

**Writing an engine.** Implement ``run(request) -> Generation``:

- Everything that can fail before the first token (a prompt longer than the context, a grammar
  the backend rejects, no backend answering) raises in ``run`` (an ``EngineError`` subclass, or
  ``ToolSpecError`` for a request the engine cannot honour); the iterator then only generates.
- Decode ``request.prompt`` as text with special tokens parsed (``request.bos``: strip a leading
  BOS if your tokenizer adds one itself). Constrain with ``request.grammar`` (GBNF, start rule
  ``root``): from the first token, or, where ``grammar.lazy``, from the first match of
  ``request.triggers`` on. Sample with ``request.sampling`` (llama.cpp's meanings).
- Yield the text with special tokens written out (``request.markers`` must reach the caller
  even where they are special tokens), never an end-of-generation token; stop before the first
  of ``request.stop`` and after ``request.max_tokens`` tokens (``None`` or <= 0: until the context
  is full).
- Fill the neutral fields of the result (``text``, ``finish_reason``, ``prompt_tokens``,
  ``completion_tokens``, ``last_prompt_eval_tokens``, ``stopped_by``; ``logprobs`` when
  ``request.logprobs`` is not ``None``). What only your engine measures goes in
  ``result.stats``, an object of your own.
- Options of the engine itself (caches, speed-ups, timeouts) are its constructor's keywords, as
  httpx puts ``verify`` and ``retries`` on its transport: the request stays the same for every
  engine. What a caller passes per request to one engine travels in ``request.extensions``;
  read the keys you know, refuse one you know you cannot honour, ignore the rest.

Implementations: ``in_process.LlamaCppEngine`` (llama-cpp-python in this process),
``llama_server.llama_server_engine.LlamaServerEngine`` (llama.cpp's server over HTTP), and the
scripted engine the tests use (tests/fake_engine.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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
    bos: str = ""
    """The model's BOS text: an engine whose tokenizer adds a BOS strips a leading one."""
    markers: tuple[str, ...] = ()
    """Marker texts the parser must see in the output, even where they are special tokens."""
    prefix: str = ""
    """The head of ``prompt`` every request with these tools and system prompt shares (the
    tool prefix, see ``frontend.prefix``); ``""`` when the front end found none. An engine may
    keep its state there for the next request (the in-process engine's checkpoints)."""
    extensions: Mapping[str, Any] = field(default_factory=dict)
    """What a caller passes per request to one engine, by name; an engine reads the keys it
    knows, refuses one it knows it cannot honour, and ignores the rest. Known keys:
    ``"logits_processor"``: ``f(input_ids, scores) -> scores`` before each step (the in-process
    engine; llama-server refuses it: Python cannot cross HTTP)."""


@dataclass
class GenerationResult:
    """What one generation did, the same for every engine (usage, finish reason, logprobs)."""

    text: str = ""
    """The full generated text (stop string excluded, special tokens visible)."""
    finish_reason: FinishReason = "length"
    """``stop`` (end-of-generation token or stop string) or ``length`` (max_tokens / n_ctx)."""
    prompt_tokens: int = 0
    """Length of the whole prompt in tokens."""
    completion_tokens: int = 0
    """Tokens generated (the end-of-generation token not counted)."""
    discarded_tokens: int = 0
    """Of ``completion_tokens``, those taken back (a steered reply rewound past them): decoded,
    paid for, and not in :attr:`text`."""
    last_prompt_eval_tokens: int = 0
    """Prompt tokens actually decoded; the rest came from a cache (usage's ``cached_tokens``)."""
    stopped_by: str | None = None
    """The stop string that ended generation, if one did."""
    logprobs: list[dict[str, Any]] | None = None
    """OpenAI ``logprobs.content`` entries, one per sampled token, when they were asked for."""
    stats: Any = None
    """The engine's own account, in its own type (``in_process.LlamaCppStats``: forced and
    drafted tokens, the tool-prefix checkpoint); ``None`` where the engine keeps none. Nothing
    above the engine reads it: it is for tests, benchmarks and the engine's users."""


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
    """What decodes (see the module docstring for what an implementation owes). Everything
    that can fail before the first token (a context overflow, a grammar the backend would
    reject, no server answering) raises in :meth:`run`; the returned ``Generation`` then only
    generates. Several threads may call :meth:`run` at once: an engine serializes what its
    backend cannot run concurrently."""

    def run(self, request: GenerationRequest) -> Generation:
        """Start one generation of ``request``."""
        ...
