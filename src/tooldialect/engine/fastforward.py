"""Fast-forward: append the text the grammar forces in one batch instead of sampling it.

After each sampled token the :class:`~tooldialect.grammar.forced.GbnfAutomaton` (a character
automaton over the request's own GBNF) says which text is the only legal continuation. That
text is tokenized *together with the token just sampled* and used only when the sampled token
stays the first token of that tokenization (the seam is then canonical: the model sees the
tokens it would have produced itself); otherwise nothing is forced this step and the model
writes the next token itself. The last forced token is held back too, unless the grammar ends
right after it: it might merge with the free text that follows.

Every forced token is checked by llama.cpp's grammar sampler (``allows``) before it is
accepted, so an automaton that disagrees with llama.cpp can only lose speed. With a lazy grammar
(``tool_choice="auto"``) nothing is forced until the trigger fired, detected the way llama.cpp
does for trigger tokens and trigger words; grammars with trigger *patterns* (reasoning dialects)
are not fast-forwarded.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

from ..grammar.forced import GbnfAutomaton, GbnfSyntaxError

if TYPE_CHECKING:
    from .generate import Engine
    from .sampling import GrammarLike, GrammarSampler

__all__ = ["FastForward"]


class FastForward:
    """Per-generation fast-forward state."""

    def __init__(self, engine: Engine, grammar: GrammarLike) -> None:
        self._engine = engine
        self._automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.active = not grammar.lazy
        """The grammar is constraining (lazy: its trigger fired)."""
        self._trigger_tokens: set[int] = set()
        self._trigger_words: list[str] = []
        self._seen = ""  # text so far, while waiting for a word trigger
        if grammar.lazy:
            tokens, _ = engine.trigger_arguments(grammar)
            self._trigger_tokens = set(tokens)
            pieces = {engine.piece(t) for t in tokens}
            self._trigger_words = [
                w for w in grammar.trigger_words if w.encode("utf-8") not in pieces
            ]

    @classmethod
    def create(cls, engine: Engine, grammar: GrammarLike | None) -> FastForward | None:
        """A fast-forward for ``grammar``, or ``None`` where it cannot follow it safely."""
        if grammar is None or (grammar.lazy and grammar.trigger_patterns):
            return None
        try:
            return cls(engine, grammar)
        except GbnfSyntaxError:
            return None

    def observe(self, token: int) -> None:
        """Feed a token the grammar accepted (sampled or forced)."""
        text = self._decoder.decode(self._engine.piece(token))
        if self.active:
            self._automaton.feed(text)
            return
        if token in self._trigger_tokens:
            self.active = True
            self._automaton.feed(text)
            return
        if not self._trigger_words:
            return
        self._seen += text
        hits = [i for i in (self._seen.find(w) for w in self._trigger_words) if i >= 0]
        if hits:
            self.active = True
            self._automaton.feed(self._seen[min(hits) :])

    def extend(self, token: int, grammar: GrammarSampler, *, room: int) -> list[int]:
        """Forced tokens to decode right after ``token`` (already accepted), at most ``room``;
        each is accepted by ``grammar`` and fed to the automaton before it is returned."""
        if not self.active or room <= 0 or self._automaton.failed:
            return []
        forced = self._automaton.forced()
        if not forced.text:
            return []
        engine = self._engine
        head = engine.piece(token)
        body = forced.text.encode("utf-8")
        ids = engine.llama.tokenize(head + body, add_bos=False, special=True)
        if not ids or ids[0] != token:
            return []  # the seam would not be canonical: let the model write on
        ids = ids[1:]
        if b"".join(engine.piece(t) for t in ids) != body:
            return []
        if not forced.complete:
            ids = ids[:-1]  # may merge with the free text after it
        out: list[int] = []
        for t in ids[:room]:
            if not grammar.allows(t):
                break
            grammar.accept(t)
            self.observe(t)
            out.append(t)
        return out
