"""``WatchedGrammar``: llama.cpp's lazy grammar sampler with its trigger patterns watched here.

llama.cpp runs every trigger pattern as a full match over the whole generated text after each
token, so a long prose answer costs quadratic time; ``engine.trigger_watch.TriggerWatch`` finds
the same capture searching only the tail that can still complete one.

:class:`WatchedGrammar` gives llama.cpp only the trigger tokens and watches the patterns itself.
When one completes it builds a sampler lazy on that one pattern and replays the tokens from the
one where the capture starts: llama.cpp then captures exactly what it would have, and feeds it to
the grammar the same way (so whatever the trigger captures, the grammar still accepts). It is used
only when every pattern has the searchable shape; otherwise llama.cpp scans as before. Given the
grammar's strict form, it watches trigger tokens too, and once a trigger fired it switches to the
strict form where llama.cpp accepts the capture there (``strict_sampler``), else replays as above.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from typing import Any

from ..trigger_watch import TriggerWatch
from .sampling import GrammarLike, GrammarSampler
from .strict_sampler import StrictGrammar, StrictSwitch, seed_strict

__all__ = ["WatchedGrammar"]


class WatchedGrammar(GrammarSampler):
    """A lazy grammar sampler whose trigger patterns are watched here (see the module doc)."""

    def __init__(
        self,
        vocab: Any,
        grammar: GrammarLike,
        *,
        trigger_tokens: Sequence[int],
        trigger_patterns: Sequence[str],
        watch: TriggerWatch,
        piece: Callable[[int], bytes],
        strict: StrictGrammar | None = None,
    ) -> None:
        super().__init__(vocab, grammar, trigger_tokens=trigger_tokens, trigger_patterns=())
        self._vocab = vocab
        self._grammar = grammar
        self._patterns = list(trigger_patterns)
        self._watch = watch
        self._piece = piece
        self._strict = strict
        self.switched: StrictSwitch | None = None
        """The switch to the strict grammar, once it happened."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._fed: list[int] = []
        self._clean: list[bool] = []  # no UTF-8 bytes were pending before the token

    @classmethod
    def create(
        cls,
        vocab: Any,
        grammar: GrammarLike,
        *,
        trigger_tokens: Sequence[int],
        trigger_patterns: Sequence[str],
        piece: Callable[[int], bytes],
        strict: StrictGrammar | None = None,
    ) -> GrammarSampler:
        """A watched sampler where every pattern is searchable, else llama.cpp's own.
        ``strict``: the grammar's strict form, switched to once a trigger fired where it accepts
        the capture (see ``strict``); then trigger tokens are watched here too."""
        watch = TriggerWatch.create(trigger_tokens, trigger_patterns) if grammar.lazy else None
        if watch is None or not (trigger_patterns or strict is not None):
            return GrammarSampler(
                vocab, grammar, trigger_tokens=trigger_tokens, trigger_patterns=trigger_patterns
            )
        return cls(
            vocab,
            grammar,
            trigger_tokens=trigger_tokens,
            trigger_patterns=trigger_patterns,
            watch=watch,
            piece=piece,
            strict=strict,
        )

    def accept(self, token: int) -> None:
        super().accept(token)
        watch = self._watch
        if watch.fired:
            return
        self._fed.append(token)
        self._clean.append(not self._decoder.getstate()[0])
        text = self._decoder.decode(self._piece(token))
        if not watch.feed(token, text):
            return
        fed, self._fed, clean, self._clean = self._fed, [], self._clean, []
        if watch.pattern is None:
            # a trigger token: llama.cpp armed the grammar itself, the capture is the token
            if self._strict is not None:
                self._switch(StrictSwitch(self._strict, text), [token], "")
            return
        first = watch.first_token()
        while first > 0 and not clean[first]:
            first -= 1  # the captured character's first bytes came with an earlier token
        if self._strict is not None:
            head = watch.offsets[first]
            before, capture = watch.text[head : watch.start], watch.text[watch.start :]
            if self._switch(StrictSwitch(self._strict, capture), fed[first:], before):
                return
        # a sampler lazy on the pattern that fired, replayed from the token the capture starts
        # in: llama.cpp captures and feeds the grammar exactly what it would have
        armed = GrammarSampler(
            self._vocab, self._grammar, trigger_patterns=[self._patterns[watch.pattern]]
        )
        for t in fed[first:]:
            armed.accept(t)
        self._replace(armed)

    def _switch(self, switch: StrictSwitch, tokens: list[int], before: str) -> bool:
        """Constrain by the strict grammar from here, if llama.cpp accepts ``tokens`` in it."""
        seeded = seed_strict(self._vocab, switch.grammar, tokens, before)
        if seeded is None:
            return False
        self._replace(seeded)
        self.switched = switch
        return True

    def _replace(self, other: GrammarSampler) -> None:
        self._lib.llama_sampler_free(self.ptr)
        self.ptr, other.ptr = other.ptr, None
