"""One pass over the model: prompt decode with KV-cache reuse, then sample with an optional grammar.

The loop keeps llama-cpp-python's own bookkeeping (``llama.input_ids``/``n_tokens``, KV cache)
exactly as ``Llama.generate`` leaves it, so our turns and plain ``create_completion`` calls can be
interleaved and each reuses the other's prefix.

Output text is detokenized with special tokens *visible* (control markers such as ``[TOOL_CALLS]``
reach the parser) with a buffer that grows for long tokens, through ``engine.text.TextStream``
(incremental UTF-8 with replacement, stop strings). End-of-generation tokens stop and are never
emitted.

``LlamaDecoder`` is the state of one ``Llama`` (its vocabulary's pieces, what its KV cache holds,
whose generation runs on it), one per ``Llama`` (``decoder_for``): every engine on that
``Llama`` shares it. ``llama_cpp_engine.LlamaCppEngine`` is the ``engine.base.Engine`` over it,
with the engine's options.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import ContextOverflowError, EngineBusyError, EngineError, GrammarError
from ..base import Generation, GenerationResult, Triggers
from ..text import TextStream
from .added import AddedTokens, read_added_tokens
from .checkpoints import PrefixCheckpoints, PrefixPoint, prefix_key
from .drafts import DraftOptions, PromptLookup, holds_word, truncate, verify_draft
from .fastforward import FastForward
from .hooks import LogprobRecorder, SampleFn, with_logits_processor, with_logprobs
from .prefill import PromptDecoder
from .prompt_cache import restore_prompt, save_prompt
from .sampling import (
    CandidateBuffer,
    GrammarLike,
    GrammarSampler,
    SamplerChain,
    SamplingParams,
    draw_seed,
)
from .stats import LlamaCppStats
from .strict_sampler import strict_of
from .watched_grammar import WatchedGrammar

__all__ = ["DEFAULT_DRAFTS", "AddedTokens", "LlamaDecoder", "decoder_for"]

DEFAULT_DRAFTS = DraftOptions()
"""Prompt-lookup drafts inside calls, on by default with fast-forward (measured in
docs/fast-forward.md)."""

_GREEDY_PROBE = 64
"""Candidates tried one by one after a greedy rejection before the full-vocabulary mask."""


class LlamaDecoder(PromptDecoder):
    """Per-``Llama`` state: vocab handles, a token-piece cache, the slow-path candidate buffer,
    the live tool prefix, and whose generation runs (see ``decoder_for``)."""

    def __init__(self, llama: Any) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._llama_ref = weakref.ref(llama)
        self.vocab = llama._model.vocab
        self.n_vocab = int(llama.n_vocab())
        self._pieces: dict[int, bytes] = {}
        self._buffer: CandidateBuffer | None = None
        self._piece_buf = ctypes.create_string_buffer(256)
        self._added: AddedTokens | None = None
        # One generation decodes at a time (llama.cpp contexts are not thread-safe): other threads
        # wait for it; in its own thread a newer request supersedes an unfinished older one.
        self._turn = threading.Condition()
        self._owner: tuple[int, object] | None = None
        self._superseded: weakref.WeakSet[Any] = weakref.WeakSet()
        self._prefixes = OrderedDict()
        self._live = None
        self._cuts = None

    @property
    def llama(self) -> Any:
        llama = self._llama_ref()
        if llama is None:
            raise EngineError("the Llama this engine served has been garbage-collected")
        return llama

    # ---- tokens ------------------------------------------------------------------------------

    def piece(self, token: int) -> bytes:
        """The bytes of ``token`` with special tokens rendered, of any length."""
        cached = self._pieces.get(token)
        if cached is not None:
            return cached
        buf = self._piece_buf
        n = self._lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
        if n < 0:
            buf = ctypes.create_string_buffer(-n + 1)
            n = self._lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
        data = bytes(buf.raw[: max(n, 0)])
        self._pieces[token] = data
        return data

    def added_tokens(self) -> AddedTokens:
        """The vocab's added tokens, read once per model, for fast-forward's seam rules."""
        if self._added is None:
            self._added = read_added_tokens(self._lib, self.vocab, self.n_vocab, self.piece)
        return self._added

    def trigger_arguments(
        self, grammar: GrammarLike, triggers: Triggers | None = None
    ) -> tuple[list[int], list[str]]:
        """Trigger words that are one token in this vocab become trigger tokens (cheap, and they
        work for CONTROL tokens); other words become their full-match patterns, which the front
        end resolved (``triggers``; ``None`` reads the grammar's own, whose words must then be
        single tokens)."""
        words = triggers.words if triggers is not None else tuple(grammar.trigger_words)
        patterns = list(triggers.patterns if triggers is not None else grammar.trigger_patterns)
        tokens: list[int] = []
        llama = self.llama
        for word in words:
            ids = llama.tokenize(word.encode("utf-8"), add_bos=False, special=True)
            if len(ids) == 1 and self.piece(ids[0]) == word.encode("utf-8"):
                tokens.append(int(ids[0]))
                continue
            pattern = triggers.pattern_of(word) if triggers is not None else None
            if pattern is None:
                raise GrammarError(
                    f"trigger word {word!r} is not one token in this vocabulary and has no "
                    "full-match pattern; pass triggers= as the front end resolves them"
                )
            patterns.append(pattern)
        return tokens, patterns

    def grammar_sampler(
        self,
        grammar: GrammarLike,
        arguments: tuple[list[int], list[str]] = ([], []),
        *,
        strict: bool = False,
    ) -> GrammarSampler:
        """A grammar sampler with its trigger tokens and patterns (``trigger_arguments``);
        raises ``GrammarError`` instead of handing llama.cpp a grammar it would crash on (the
        sampler checks llama.cpp's NULL answer before anything uses it, so the grammar is parsed
        once, not validated and then parsed again). ``strict``: switch to the lazy grammar's
        strict form once the trigger fired, where it accepts the capture (``strict``)."""
        tokens, patterns = arguments if grammar.lazy else ([], [])
        if grammar.lazy and not tokens and not patterns:
            raise GrammarError("a lazy grammar needs trigger words or patterns; it has none")
        # patterns llama.cpp would scan over the whole text after every token are watched
        # incrementally instead (``triggers``)
        return WatchedGrammar.create(
            self.vocab,
            grammar,
            trigger_tokens=tokens,
            trigger_patterns=patterns,
            piece=self.piece,
            strict=strict_of(grammar) if strict else None,
        )

    # ---- generation --------------------------------------------------------------------------

    def generate(
        self,
        prompt: str | Sequence[int],
        *,
        grammar: GrammarLike | None = None,
        triggers: Triggers | None = None,
        sampling: SamplingParams | None = None,
        max_tokens: int | None = None,
        stop: str | Sequence[str] | None = None,
        prompt_cache: Any = None,
        fast_forward: bool = False,
        logprobs: int | None = None,
        logits_processor: Callable[[Any, Any], Any] | None = None,
        prefix: str = "",
        checkpoints: PrefixCheckpoints | None = None,
        strict_calls: bool = True,
        drafts: DraftOptions | None = DEFAULT_DRAFTS,
    ) -> Generation:
        """Start a generation. Everything that can fail (context overflow, a bad grammar) fails
        here, before the first token is decoded; the returned iterator then only generates.

        ``triggers``: the lazy grammar's triggers as the front end resolved them (``None``: the
        grammar's own, see ``trigger_arguments``).
        ``prompt_cache``: a ``BaseLlamaCache`` to restore the longest cached prefix from and save
        the final state to (``None``: ``Llama.cache`` as ``create_completion``; ``False``: none).
        ``fast_forward``: decode the text the grammar forces in one batch (see ``fastforward``);
        with it a lazy grammar switches to its strict form once its trigger fired, where that
        accepts the capture (``strict``; ``strict_calls=False`` keeps the lenient envelope, for
        A/B measurements), and prompt-lookup ``drafts`` are verified inside calls (``drafts``;
        ``None``: none). Both are off for a request
        that asks for ``logprobs`` or a ``logits_processor``: forced tokens are appended, not
        sampled, so they have no distribution to report or rewrite.

        ``logprobs`` (the number of top alternatives, 0 for none) fills ``result.logprobs``;
        ``logits_processor(input_ids, scores)`` rewrites the logits before each step is sampled
        (see ``hooks`` for the order). Neither costs anything when not given.

        ``prefix``: the head of the prompt text that is its tool prefix; with ``checkpoints``
        the state at its end is saved once and loaded whenever the KV cache falls short of it
        (``checkpoints``), so a changed history never decodes the tool prefix again."""
        llama = self.llama
        params = sampling or SamplingParams()
        tokens = self.tokenize_prompt(prompt) if isinstance(prompt, str) else list(prompt)
        limit = self._token_limit(tokens, max_tokens)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        arguments = self.trigger_arguments(grammar, triggers) if grammar is not None else None
        observed = logprobs is not None or logits_processor is not None
        gsampler = (
            # the strict form only pays where fast-forward forces its text
            self.grammar_sampler(
                grammar, arguments, strict=fast_forward and not observed and strict_calls
            )
            if grammar is not None and arguments is not None
            else None
        )
        cache = getattr(llama, "cache", None) if prompt_cache is None else prompt_cache or None
        if cache is not None:
            self._keep_live_prefix(tokens)  # a restored state would overwrite it
            # before the seed is drawn: a restored state brings its seed, as in create_completion
            restore_prompt(llama, cache, tokens)
        seed = draw_seed(int(llama._seed), params.seed)
        llama.set_seed(seed)
        chain = SamplerChain(n_vocab=self.n_vocab, params=params, seed=seed)
        stats = LlamaCppStats()
        result = GenerationResult(prompt_tokens=len(tokens), stats=stats)
        sample = self._observed(result, logprobs, logits_processor)
        ff = (
            FastForward.create(self, grammar, arguments, sampler=gsampler)
            if fast_forward and gsampler is not None and not observed
            else None
        )
        run = _Run(tokens, chain, gsampler, limit, result, stats, sample, cache, ff)
        if ff is not None and drafts is not None:
            ends = self.added_tokens().ids | {int(llama.token_eos())}
            run.lookup = PromptLookup(
                tokens,
                options=drafts,
                stop_tokens=ends,
                is_word=lambda t: holds_word(self.piece(t)),
            )
        if checkpoints is not None:
            stats.prefix_tokens = self.prefix_length(prefix, tokens)
            if stats.prefix_tokens:
                key = prefix_key(tokens[: stats.prefix_tokens])
                run.point = PrefixPoint(stats.prefix_tokens, key, checkpoints, stats)
        return Generation(self._run(run, TextStream(stops)), result)

    def _token_limit(self, tokens: Sequence[int], max_tokens: int | None) -> int:
        """How many tokens may be generated after ``tokens``; raises when none fits."""
        n_ctx = int(self.llama.n_ctx())
        if not tokens:
            raise ContextOverflowError("the prompt is empty; render at least one token")
        if len(tokens) + 1 > n_ctx:
            raise ContextOverflowError(
                f"the prompt is {len(tokens)} tokens but n_ctx is {n_ctx}; load the model with a "
                f"larger n_ctx (Llama(..., n_ctx=...)) or send fewer messages"
            )
        budget = n_ctx - len(tokens)
        return budget if max_tokens is None or max_tokens <= 0 else min(max_tokens, budget)

    def _observed(
        self,
        result: GenerationResult,
        logprobs: int | None,
        processor: Callable[[Any, Any], Any] | None,
    ) -> SampleFn:
        """The sample function, wrapped only by the hooks this request asked for."""
        sample: SampleFn = self._sample
        if processor is not None:
            llama = self.llama
            sample = with_logits_processor(
                sample,
                processor,
                lib=self._lib,
                n_vocab=self.n_vocab,
                input_ids=lambda: llama._input_ids,
            )
        if logprobs is not None:
            recorder = LogprobRecorder(
                lib=self._lib, n_vocab=self.n_vocab, top=logprobs, piece=self.piece
            )
            result.logprobs = recorder.entries
            lib, vocab = self._lib, self.vocab
            sample = with_logprobs(
                sample, recorder, is_eog=lambda token: bool(lib.llama_vocab_is_eog(vocab, token))
            )
        return sample

    def _candidates(self) -> CandidateBuffer:
        if self._buffer is None:
            self._buffer = CandidateBuffer(self.n_vocab)
        return self._buffer

    def _sample(
        self,
        chain: SamplerChain,
        grammar: GrammarSampler | None,
        ctx: Any,
        stats: LlamaCppStats,
        idx: int = -1,
    ) -> int:
        """Sample from the logits at batch index ``idx`` (a draft's position; -1: the last)."""
        lib = self._lib
        if not chain.stateful:
            # fast path: the chain runs in C over the logits; its accept is a no-op
            token = int(lib.llama_sampler_sample(chain.ptr, ctx, idx))
            if grammar is None or grammar.allows(token):
                return token
        else:
            # penalties remember accepted tokens, so sample without accepting, then accept
            buf = self._candidates()
            buf.fill(ctx, idx)
            lib.llama_sampler_apply(chain.ptr, buf.ref)
            token, _ = buf.selected()
            if grammar is None or grammar.allows(token):
                lib.llama_sampler_accept(chain.ptr, token)
                return token
        # slow path, taken only when the grammar rejected the free choice
        assert grammar is not None
        stats.grammar_resamples += 1
        buf = self._candidates()
        if chain.greedy_only:
            # greedy = best allowed token: walk the top candidates with 1-token checks (cheap)
            # before masking the whole vocabulary
            for candidate in buf.top_tokens(ctx, _GREEDY_PROBE, idx):
                if grammar.allows(candidate):
                    return candidate
        buf.fill(ctx, idx)
        lib.llama_sampler_apply(grammar.ptr, buf.ref)
        lib.llama_sampler_apply(chain.ptr, buf.ref)
        token, logit = buf.selected()
        if token < 0 or logit == float("-inf"):
            raise GrammarError("the grammar allows no token here; the generation cannot continue")
        if chain.stateful:
            lib.llama_sampler_accept(chain.ptr, token)
        return token

    def _run(self, run: _Run, out: TextStream) -> Iterator[str]:
        me = _Turn()
        self._take_turn(me)
        result = run.result
        try:
            batch = self._first_batch(run)
            pending: list[int] = []  # emitted, not yet decoded
            while True:
                last = yield from self._emit(run, out, batch, me)
                if last is not None:  # a stop string ended the text
                    break
                if run.n >= run.limit:
                    result.finish_reason = "length"
                    break
                following = self._step(run, pending) if result.finish_reason != "stop" else None
                if following is None:
                    break
                batch, pending = following
            # (accepted drafts past a stop string are no completion tokens)
            truncate(self.llama, len(run.tokens) + len(run.sampled))
            if run.cache is not None:
                save_prompt(self.llama, run.cache, run.tokens + run.sampled)
            tail = (last or "") + out.finish()
            if out.stopped_by is not None:
                result.finish_reason, result.stopped_by = "stop", out.stopped_by
            if tail:
                yield tail
        finally:
            self._end_turn(me)
            result.text = out.text
            run.chain.close()
            if run.grammar is not None:
                run.grammar.close()

    def _first_batch(self, run: _Run) -> list[int]:
        """Decode the prompt; returns the tokens forced before the first sample (a forced
        grammar's opener), decoded with the prompt in the same batch: completion text all the
        same."""
        ff, grammar = run.ff, run.grammar
        batch = ff.start(grammar, room=run.limit) if ff is not None and grammar is not None else []
        self._accept_forced(run.chain, batch, run.stats, 0)
        # (a KV cache that already holds the forced tokens too decodes fewer than them)
        n_decoded = self._decode_prompt(run.tokens + batch, run.point)
        run.result.last_prompt_eval_tokens = max(n_decoded - len(batch), 0)
        return batch

    def _emit(
        self, run: _Run, out: TextStream, batch: list[int], me: _Turn
    ) -> Generator[str, None, str | None]:
        """Yield the text ``batch`` releases; returns the text up to a stop string that ended
        the generation (yielded by the caller once the state is saved), else ``None``."""
        for t in batch:
            run.n += 1
            run.result.completion_tokens = run.n
            run.sampled.append(t)
            text = out.feed(self.piece(t))
            if out.stopped_by is not None:
                return text
            if text:
                yield text
                self._check_turn(me)
        return None

    def _step(self, run: _Run, pending: list[int]) -> tuple[list[int], list[int]] | None:
        """Sample the next token (after decoding ``pending``); returns the next batch to emit
        (the token and what the grammar forces after it) and the part of it not yet decoded,
        ``None`` at the end."""
        if pending:
            drafted = self._drafted(run, pending)
            if drafted is not None:
                return drafted
            # forced tokens go in the same batch, as prompt tokens do (llama.eval keeps
            # input_ids / n_tokens exactly as Llama.generate would after decoding them)
            self.llama.eval(pending)
        grammar, ff = run.grammar, run.ff
        token = run.sample(run.chain, grammar, self.llama._ctx.ctx, run.stats)
        if self._lib.llama_vocab_is_eog(self.vocab, token):
            run.result.finish_reason = "stop"
            return None
        if grammar is None:
            return [token], [token]
        grammar.accept(token)
        if ff is None:
            return [token], [token]
        ff.observe(token)
        forced = ff.extend(token, grammar, room=run.limit - run.n - 1)
        self._accept_forced(run.chain, forced, run.stats, run.n + 1)
        return [token, *forced], [token, *forced]

    def _drafted(self, run: _Run, pending: list[int]) -> tuple[list[int], list[int]] | None:
        """Inside a call, decode ``pending`` with a prompt-lookup draft after it (``drafts``);
        ``None`` where nothing is drafted (``pending`` is then still to decode)."""
        ff, grammar, lookup, stats = run.ff, run.grammar, run.lookup, run.stats
        if lookup is None or ff is None or grammar is None or len(pending) > 1:
            return None  # (after forced text the grammar writes, not the prompt: no draft)
        if not (ff.active or lookup.options.anywhere):
            return None
        left = run.limit - run.n  # tokens that may still be emitted
        draft = lookup.propose(run.sampled, room=left - 1)
        # a draft token the grammar rejects cannot be sampled: no position spent on it
        draft = draft[: grammar.allowed_prefix(draft)] if draft else draft
        ctx = self.llama._ctx.ctx

        def take(token: int, accepted: int) -> list[int]:
            grammar.accept(token)
            ff.observe(token)
            forced = ff.extend(token, grammar, room=left - accepted - 1)
            self._accept_forced(run.chain, forced, stats, run.n + accepted + 1)
            return forced

        verdict = verify_draft(
            self.llama,
            pending,
            draft,
            sample=lambda idx: self._sample(run.chain, grammar, ctx, stats, idx),
            is_eog=lambda token: bool(self._lib.llama_vocab_is_eog(self.vocab, token)),
            take=take,
        )
        if verdict is None:
            return None
        stats.draft_proposed += len(draft)
        stats.draft_accepted.append(verdict.accepted)
        lookup.record(len(draft), verdict.accepted)
        if verdict.ended:
            run.result.finish_reason = "stop"
        return verdict.emit, verdict.pending

    def _accept_forced(
        self, chain: SamplerChain, forced: list[int], stats: LlamaCppStats, after: int
    ) -> None:
        """Record ``forced`` tokens that follow completion position ``after``."""
        if forced and chain.stateful:
            for t in forced:  # penalties see forced tokens as written text
                self._lib.llama_sampler_accept(chain.ptr, t)
        stats.forced_tokens += len(forced)
        stats.forced_positions.extend(range(after + 1, after + 1 + len(forced)))

    # ---- one generation at a time ------------------------------------------------------------

    def _take_turn(self, me: _Turn) -> None:
        thread = threading.get_ident()
        with self._turn:
            while self._owner is not None and self._owner[0] != thread:
                self._turn.wait()
            if self._owner is not None:  # an unfinished stream of this thread: it is abandoned
                self._superseded.add(self._owner[1])
            self._owner = (thread, me)

    def _check_turn(self, me: _Turn) -> None:
        if me in self._superseded:
            raise EngineBusyError(
                "this stream was left unfinished while a newer request ran on the same Llama, "
                "which reused its context; consume or close() a stream before the next request"
            )

    def _end_turn(self, me: _Turn) -> None:
        with self._turn:
            if self._owner is not None and self._owner[1] is me:
                self._owner = None
                self._turn.notify_all()


class _Turn:
    """Identity of one running generation (weakly referenced by ``LlamaDecoder._superseded``)."""


@dataclass
class _Run:
    """The state of one running generation."""

    tokens: list[int]
    chain: SamplerChain
    grammar: GrammarSampler | None
    limit: int
    result: GenerationResult
    stats: LlamaCppStats
    sample: SampleFn
    cache: Any = None
    ff: FastForward | None = None
    n: int = 0
    """Completion tokens so far."""
    sampled: list[int] = field(default_factory=list)
    """The cache key's tail, as create_completion keys its saves."""
    point: PrefixPoint | None = None
    """The tool prefix's checkpoint (``None``: the prompt has none, or checkpoints are off)."""
    lookup: PromptLookup | None = None
    """Prompt-lookup drafts (``None``: none for this generation)."""


_DECODERS: weakref.WeakKeyDictionary[Any, LlamaDecoder] = weakref.WeakKeyDictionary()
"""One decoder per ``Llama``: a llama.cpp context is one state, so every engine and handler on
it must share the record of what its KV cache holds and whose generation runs."""
_DECODERS_LOCK = threading.Lock()


def decoder_for(llama: Any) -> LlamaDecoder:
    """The decoder of a ``Llama`` (made on first use, shared by every engine on it)."""
    with _DECODERS_LOCK:
        decoder = _DECODERS.get(llama)
        if decoder is None:
            decoder = LlamaDecoder(llama)
            _DECODERS[llama] = decoder
        return decoder
