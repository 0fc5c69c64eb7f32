"""Prompt-lookup drafts: inside a call, propose the prompt's own tokens as the next ones.

Argument values often quote the user's words (a city, a path, an id). When the last few tokens
generated match a span of the prompt, the prompt tokens that followed that span are a likely
continuation: :class:`PromptLookup` proposes them, the engine decodes them in one batch with
logits at every position (:func:`decode_with_logits`) and keeps the longest prefix the normal
sampler chain agrees with (the token sampled at each position from the logits given the accepted
prefix, the grammar consulted as for any sampled token; the first disagreement is the next token
itself). That is exact for any sampler and nothing can abort: a wrong draft only costs the batch.
The KV cache then drops the rejected tokens (:func:`truncate`).

On 2 cores a batch of 2 costs about 1.6x one token, so a draft is proposed only after a match of
``min_match`` tokens, which makes the copy likely, only right after a token the model sampled
(text the grammar forced follows the grammar, not the prompt: the schema's or the system
prompt's example would be proposed), only when ``min_words`` of the matched tokens are words
(JSON punctuation matches the tool definitions), and cut where the grammar rejects it. Each
generation adapts: a draft that kept nothing halves the next one's length and skips ``min_match``
proposals, one kept whole doubles it, and once drafts stop paying (under ``min_acceptance`` of
the proposed tokens kept) the generation drafts no more.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import EngineError, OptionError

__all__ = [
    "DraftOptions",
    "PromptLookup",
    "Verdict",
    "decode_with_logits",
    "holds_word",
    "truncate",
    "verify_draft",
]


@dataclass(frozen=True)
class DraftOptions:
    """How prompt-lookup drafts are proposed (``LlamaCppEngine(drafts=...)``; ``None`` there:
    none)."""

    min_match: int = 3
    """Generated tokens that must match a span of the prompt before its sequel is proposed."""
    max_draft: int = 8
    """Tokens proposed at most per batch."""
    context: int = 16
    """How far back a match is compared to pick among a span's occurrences."""
    anywhere: bool = False
    """Draft outside calls too (prose that quotes the prompt); else only where the grammar
    constrains (inside a call, or a forced one)."""
    min_acceptance: float = 0.4
    """Once ``judge_after`` draft tokens were proposed in a generation, it drafts no more while
    fewer than this share of them were accepted (a mostly rejected draft costs more than it
    saves; see the module's docstring)."""
    judge_after: int = 16
    """Draft tokens proposed before ``min_acceptance`` is applied."""
    min_words: int = 2
    """Of the last ``min_match`` tokens generated, how many must hold a letter or a digit
    (:func:`holds_word`) before a draft: a match made of JSON punctuation and one word
    (``": "The``, ``"name": "get``) is found mostly in the tool definitions, whose sequel is
    the schema's text, not the answer's (``bench/auto_spread.py``: such drafts kept none)."""


class PromptLookup:
    """Drafts read from ``prompt``: the tokens that followed the latest occurrence of the
    generated tail (the one sharing the longest context with it, ties to the latest)."""

    def __init__(
        self,
        prompt: Sequence[int],
        *,
        options: DraftOptions | None = None,
        stop_tokens: Collection[int] = (),
        is_word: Callable[[int], bool] | None = None,
    ) -> None:
        """``is_word(token)``: whether the token holds a letter or digit (``holds_word`` on its
        bytes); ``None``: every token counts as a word (``min_words`` off)."""
        self.options = options or DraftOptions()
        if self.options.min_match < 1 or self.options.max_draft < 1:
            raise OptionError(
                f"DraftOptions: min_match and max_draft must be at least 1, got "
                f"{self.options.min_match} and {self.options.max_draft}; pass larger values"
            )
        if not 0 <= self.options.min_words <= self.options.min_match:
            raise OptionError(
                f"DraftOptions: min_words counts among the last min_match tokens, so it lies "
                f"between 0 and min_match ({self.options.min_match}), got "
                f"{self.options.min_words}"
            )
        if not 0.0 <= self.options.min_acceptance <= 1.0:
            raise OptionError(
                f"DraftOptions: min_acceptance is a share between 0 and 1, got "
                f"{self.options.min_acceptance}"
            )
        self._prompt = list(prompt)
        self._stops = frozenset(stop_tokens)
        self._is_word = is_word
        self._index: dict[tuple[int, ...], list[int]] | None = None  # built on first use
        self._length = self.options.max_draft
        """Tokens the next draft may hold: halved after a draft that kept none, doubled after
        one kept whole (up to ``max_draft``), one more than was kept otherwise."""
        self._pause = 0
        """Proposals still skipped after a draft that kept none."""
        self.proposed = 0
        """Draft tokens proposed in this generation."""
        self.accepted = 0
        """Of those, the ones the sampler chain agreed with."""

    def record(self, proposed: int, accepted: int) -> None:
        """What the last draft gave: its length and how many of its tokens were kept."""
        self.proposed += proposed
        self.accepted += accepted
        if accepted >= proposed:
            self._length = min(self.options.max_draft, 2 * self._length)
        elif accepted:
            self._length = accepted + 1
        else:
            self._length = max(1, self._length // 2)
            self._pause = self.options.min_match  # the tail must move on before a new match

    @property
    def paying(self) -> bool:
        """Whether drafts still pay in this generation (``min_acceptance``)."""
        o = self.options
        return self.proposed < o.judge_after or self.accepted >= o.min_acceptance * self.proposed

    def _positions(self) -> dict[tuple[int, ...], list[int]]:
        if self._index is None:
            m, p = self.options.min_match, self._prompt
            index: dict[tuple[int, ...], list[int]] = {}
            for end in range(m, len(p)):  # a span with at least one token after it
                index.setdefault(tuple(p[end - m : end]), []).append(end)
            self._index = index
        return self._index

    def propose(self, history: Sequence[int], *, room: int) -> list[int]:
        """Up to ``room`` draft tokens to follow ``history`` (the tokens generated so far);
        ``[]`` when its last ``min_match`` tokens occur nowhere in the prompt or fewer than
        ``min_words`` of them are words."""
        m = self.options.min_match
        if self._pause:
            self._pause -= 1
            return []
        if room <= 0 or len(history) < m or not self.paying:
            return []
        tail = tuple(history[-m:])
        ends = self._positions().get(tail)
        if not ends or self._count_words(tail) < self.options.min_words:
            return []
        end = max(reversed(ends[-8:]), key=lambda e: self._shared(history, e))
        draft: list[int] = []
        for t in self._prompt[end : end + min(room, self._length)]:
            if t in self._stops:
                break  # an end-of-turn or control token ends what can be copied
            draft.append(t)
        return draft

    def _count_words(self, tokens: Sequence[int]) -> int:
        is_word = self._is_word
        return len(tokens) if is_word is None else sum(map(is_word, tokens))

    def _shared(self, history: Sequence[int], end: int) -> int:
        """How many tokens before ``end`` in the prompt equal the tail of ``history``."""
        n, p = 0, self._prompt
        limit = min(self.options.context, len(history), end)
        while n < limit and p[end - 1 - n] == history[-1 - n]:
            n += 1
        return n


def holds_word(piece: bytes) -> bool:
    """Whether a token's bytes hold a letter or a digit (any non-ASCII byte counts: a letter
    of another script), not only punctuation, quotes and spaces."""
    return any(b >= 0x80 or chr(b).isalnum() for b in piece)


def decode_with_logits(llama: Any, tokens: Sequence[int], *, n_logits: int) -> bool:
    """Decode ``tokens`` in one batch with logits at the last ``n_logits`` of them (batch
    index ``i`` holds the logits after ``tokens[i]``), keeping ``Llama``'s bookkeeping
    (``input_ids``, ``n_tokens``) as ``Llama.eval`` does; ``False`` (nothing decoded) where
    they do not fit one batch or the context."""
    import llama_cpp

    n_past = int(llama.n_tokens)
    n = len(tokens)
    if not 0 < n <= int(llama.n_batch) or n_past + n > int(llama.n_ctx()):
        return False
    llama._ctx.kv_cache_seq_rm(-1, n_past, -1)
    batch = llama._batch.batch
    batch.n_tokens = n
    for i, t in enumerate(tokens):
        batch.token[i] = t
        batch.pos[i] = n_past + i
        batch.seq_id[i][0] = 0
        batch.n_seq_id[i] = 1
        batch.logits[i] = i >= n - n_logits
    rc = llama_cpp.llama_decode(llama._ctx.ctx, batch)
    if rc != 0:
        raise EngineError(
            f"llama_decode returned {rc} while verifying a draft; the context may be full "
            "(raise n_ctx) or turn drafts off (LlamaCppEngine(llama, drafts=None))"
        )
    llama.input_ids[n_past : n_past + n] = tokens
    llama.n_tokens = n_past + n
    llama._requires_eval = False
    return True


def truncate(llama: Any, n_tokens: int) -> None:
    """Drop what the KV cache holds after its first ``n_tokens`` (rejected draft tokens)."""
    if int(llama.n_tokens) > n_tokens:
        llama._ctx.kv_cache_seq_rm(-1, n_tokens, -1)
        llama.n_tokens = n_tokens


@dataclass(frozen=True)
class Verdict:
    """What a verified draft leaves: the tokens to emit and those of them still to decode."""

    emit: list[int]
    pending: list[int]
    accepted: int
    """Draft tokens kept."""
    ended: bool
    """An end-of-generation token was sampled (not emitted)."""


def verify_draft(
    llama: Any,
    pending: Sequence[int],
    draft: Sequence[int],
    *,
    sample: Callable[[int], int],
    is_eog: Callable[[int], bool],
    take: Callable[[int, int], list[int]],
) -> Verdict | None:
    """Decode ``pending`` + ``draft`` in one batch and keep the draft's longest prefix the
    sampler agrees with; ``None`` (nothing decoded) when there is no draft or it does not fit.

    ``sample(idx)``: the token the sampler chain picks (the grammar consulted) from the logits
    at batch index ``idx``; ``take(token, accepted)``: accept a sampled token (grammar,
    fast-forward) after ``accepted`` kept draft tokens, returning the tokens the grammar forces
    after it. A draft token is kept while the sample equals it and nothing is forced after it
    (forced text is appended, not sampled: the draft's next position is then no sample); the
    first sample that differs is the next token itself. The KV cache keeps only what is kept."""
    if not draft:
        return None
    base = int(llama.n_tokens) + len(pending)  # the KV cache's length before the draft
    if not decode_with_logits(llama, [*pending, *draft], n_logits=len(draft) + 1):
        return None
    accepted: list[int] = []
    for j in range(len(draft) + 1):
        token = sample(len(pending) - 1 + j)
        if is_eog(token):
            truncate(llama, base + len(accepted))
            return Verdict(accepted, [], len(accepted), ended=True)
        forced = take(token, len(accepted))
        drafted = j < len(draft) and token == draft[j]
        if drafted and not forced:
            accepted.append(token)
            continue
        kept = len(accepted) + drafted
        truncate(llama, base + kept)
        rest = forced if drafted else [token, *forced]  # a kept token is decoded already
        return Verdict([*accepted, token, *forced], rest, kept, ended=False)
    raise EngineError("draft verification ended without a verdict (a bug: please report it)")
