"""The strict switch on llama-server: once a lazy trigger fired, the call goes on under the
grammar's strict form (``ToolGrammar.strict_gbnf``), as the in-process engine does
(``engine.in_process.strict_sampler``), as decoding only.

A server's grammar state cannot be handed over, and its lazy grammar never switches. So the
client watches the streamed text for the same triggers (``engine.base.Triggers``, llama.cpp's
rule: ``engine.trigger_watch.TriggerWatch``); when one completes, it asks whether the
strict form accepts the captured text (``grammar.forced.continuation_gbnf``: the automaton's
parse stacks after the capture, written back as GBNF). If it does, the stream is cancelled and a
second request goes on from the prompt plus the token ids generated so far (the server's KV cache
holds them: one token is re-evaluated), under a non-lazy grammar of exactly what may follow the
capture in the strict form. The lenient grammar's continuation, derived the same way, is the
fallback where the server refuses the strict one. Where the strict form rejects the capture, or
the stream's text and token ids disagree (text held back for a partial stop string, a split
UTF-8 character), nothing is switched: the first stream simply goes on.

The two requests count as one: completion tokens add up, ``max_tokens`` is shared, stop strings
are sent again (none can span the cut: the switch waits while the text ends in a stop string's
prefix) and the second request's end is the reply's (its prompt evaluation is the reply's
``last_prompt_eval_tokens``: the cancelled first request reports none). Logprobs are not
switched (the first stream goes on), so they keep the single request's meaning. Under sampling
the continuation is drawn with a new RNG stream; greedy replies equal the unswitched ones where
the model writes the strict form's layout. Without fast-forward on the server the switch saves
no decoding: it is an option (``LlamaServerEngine(strict_switch=True)``), off by default
(docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...grammar.forced import continuation_gbnf
from ..base import GenerationRequest
from ..trigger_watch import TriggerWatch

__all__ = ["Continuation", "SwitchWatch"]

_WORD = r"^[\s\S]*?({})[\s\S]*"
"""A trigger word watched as text: llama.cpp's pattern for a word that is not one token."""


@dataclass(frozen=True)
class Continuation:
    """The second request of a switched reply."""

    strict: dict[str, Any]
    """``/completion`` body going on under the strict form's continuation."""
    lenient: dict[str, Any]
    """The same under the lenient grammar's continuation (the server refused ``strict``)."""
    tokens: int
    """Completion tokens the first request generated (``strict`` predicts the rest)."""


class SwitchWatch:
    """Watches one reply's stream for a trigger (see the module doc)."""

    def __init__(
        self, body: Mapping[str, Any], watch: TriggerWatch, grammars: tuple[str, str, str, str]
    ) -> None:
        self._body = dict(body)
        self._watch = watch
        self._grammars = grammars  # strict gbnf, strict root, lenient gbnf, lenient root
        self._ids: list[int] = []
        self._text = ""
        self.done = False
        """A trigger fired or the stream can no longer be continued: nothing more is watched."""

    @classmethod
    def create(cls, request: GenerationRequest, body: Mapping[str, Any]) -> SwitchWatch | None:
        """A watch for ``request`` sent as ``body`` (``None``: nothing to switch, because the
        grammar is not lazy or has no strict form, logprobs were asked for, or a trigger pattern
        is not one the watch can search)."""
        grammar = request.grammar
        if grammar is None or not grammar.lazy or request.logprobs is not None:
            return None
        strict = getattr(grammar, "strict_gbnf", "")
        strict_root = getattr(grammar, "strict_root", "")
        if not (isinstance(strict, str) and strict and isinstance(strict_root, str)):
            return None
        words = [_WORD.format(re.escape(w)) for w in request.triggers.words]
        watch = TriggerWatch.create((), [*words, *request.triggers.patterns])
        if watch is None:
            return None
        return cls(body, watch, (strict, strict_root or "root", grammar.gbnf, grammar.root))

    def feed(self, event: Mapping[str, Any]) -> Continuation | None:
        """Read one streamed event; the continuation once a trigger fired and it can switch."""
        if self.done or event.get("stop"):
            return None
        tokens = event.get("tokens") or []
        piece = event.get("content") or ""
        self._ids += [int(t) for t in tokens]
        if (tokens and not piece) or int(event.get("tokens_predicted") or 0) != len(self._ids):
            self.done = True  # the server holds text back, or the ids miss a token
            return None
        if not piece:
            return None
        self._text += piece
        if not self._watch.feed(-1, piece):
            return None
        self.done = True
        return self._continuation(self._watch.text[self._watch.start :])

    def _continuation(self, capture: str) -> Continuation | None:
        body = self._body
        stops = [s for s in body.get("stop") or [] if isinstance(s, str)]
        if any(self._text.endswith(s[:i]) for s in stops for i in range(1, len(s))):
            return None  # a stop string could span the cut
        n_predict = int(body.get("n_predict", -1))
        if 0 < n_predict <= len(self._ids):
            return None
        strict_gbnf, strict_root, lenient_gbnf, lenient_root = self._grammars
        strict = continuation_gbnf(strict_gbnf, strict_root, capture)
        lenient = continuation_gbnf(lenient_gbnf, lenient_root, capture)
        if strict is None or lenient is None:
            return None  # the strict form rejects the capture: the lenient stream goes on
        rest = {k: v for k, v in body.items() if k not in ("grammar_lazy", "grammar_triggers")}
        rest["prompt"] = [body["prompt"], *self._ids]
        rest["n_predict"] = n_predict - len(self._ids) if n_predict > 0 else -1
        rest.pop("return_tokens", None)
        return Continuation(
            strict={**rest, "grammar": strict},
            lenient={**rest, "grammar": lenient},
            tokens=len(self._ids),
        )
