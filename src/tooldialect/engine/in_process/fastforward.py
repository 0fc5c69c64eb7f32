"""Fast-forward: append the text the grammar forces in one batch instead of sampling it.

After each sampled token the :class:`~tooldialect.grammar.forced.GbnfAutomaton` (a character
automaton over the request's own GBNF) says which text is the only legal continuation. That
text is tokenized *together with the token just sampled* and used only when the sampled token
stays the first token of that tokenization (the seam is then canonical: the model sees the
tokens it would have produced itself); otherwise nothing is forced this step and the model
writes the next token itself. The last forced token is held back too, unless the grammar ends
right after it: it might merge with the free text that follows. Forced text never holds one of
the vocab's added tokens (``<tool_call>``; the model writes those itself, whole or spelled in
pieces as it prefers) and stops before a tail that may begin one (``<t``). A forced grammar's
opener is forced before the first token is sampled and decoded with the prompt.

Every forced token is checked by llama.cpp's grammar sampler (``allows``) before it is
accepted, so an automaton that disagrees with llama.cpp can only lose speed. With a lazy grammar
(``tool_choice="auto"``) nothing is forced until the trigger fired, detected the way llama.cpp
does: trigger tokens by id, patterns by a full match of all text so far, the grammar starting at
the first non-empty capture group. As a guard, nothing is forced while llama.cpp's grammar
would accept an end-of-generation token (a grammar still awaiting its trigger accepts anything).
Where the sampler switched to the grammar's strict form once the trigger fired (``strict``),
the automaton follows that form from the capture on: the envelope is then forced too.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Any, Protocol

from ...grammar.forced import ForcedText, GbnfAutomaton, GbnfSyntaxError
from ..trigger_watch import TriggerWatch
from .added import AddedTokens
from .strict_sampler import StrictSwitch

if TYPE_CHECKING:
    from ..base import GrammarLike
    from .sampling import GrammarSampler

__all__ = ["Decoder", "FastForward"]


class Decoder(Protocol):
    """What fast-forward asks of the decoder that runs it (``generate.LlamaDecoder``, which
    imports this module)."""

    @property
    def llama(self) -> Any: ...

    def piece(self, token: int) -> bytes:
        """The bytes of ``token``, special tokens rendered."""
        ...

    def added_tokens(self) -> AddedTokens: ...

    def trigger_arguments(self, grammar: GrammarLike) -> tuple[list[int], list[str]]:
        """The lazy grammar's trigger tokens and patterns, as llama.cpp takes them."""
        ...


class FastForward:
    """Per-generation fast-forward state."""

    def __init__(
        self,
        engine: Decoder,
        grammar: GrammarLike,
        triggers: tuple[list[int], list[str]] | None = None,
        *,
        sampler: GrammarSampler | None = None,
    ) -> None:
        self._engine = engine
        self._automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
        # a sampler that may switch to the grammar's strict form once the trigger fired
        self._sampler = sampler
        self._switched: StrictSwitch | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.active = not grammar.lazy
        """The grammar is constraining (lazy: its trigger fired)."""
        self._trigger_tokens: set[int] = set()
        self._patterns: list[re.Pattern[str]] = []
        self._seen = ""  # text so far, while waiting for a trigger pattern
        self._watch: TriggerWatch | None = None
        self._eog = int(engine.llama.token_eos())
        self._added = engine.added_tokens()
        if grammar.lazy:
            tokens, patterns = (
                triggers if triggers is not None else engine.trigger_arguments(grammar)
            )
            self._trigger_tokens = set(tokens)
            # the engine's patterns are llama.cpp's (ECMAScript); the ones the builder writes
            # mean the same in Python's re, and one that does not compile disables fast-forward
            self._patterns = [re.compile(p) for p in patterns]
            # searched on the tail that can still complete a trigger, not the whole text
            self._watch = TriggerWatch.create((), patterns)

    @classmethod
    def create(
        cls,
        engine: Decoder,
        grammar: GrammarLike | None,
        triggers: tuple[list[int], list[str]] | None = None,
        *,
        sampler: GrammarSampler | None = None,
    ) -> FastForward | None:
        """A fast-forward for ``grammar``, or ``None`` where it cannot follow it safely.
        ``triggers``: the generation's trigger tokens and patterns
        (``LlamaDecoder.trigger_arguments``; ``None`` asks the engine for the grammar's own).
        ``sampler``: the generation's grammar sampler; where it switches to the grammar's strict
        form (``strict``), the forced text is read from that form from then on."""
        if grammar is None:
            return None
        try:
            return cls(engine, grammar, triggers, sampler=sampler)
        except (GbnfSyntaxError, re.error):
            return None

    def observe(self, token: int) -> None:
        """Feed a token the grammar accepted (sampled or forced)."""
        text = self._decoder.decode(self._engine.piece(token))
        switched = getattr(self._sampler, "switched", None)  # (a WatchedGrammar's)
        if switched is not self._switched:
            self._follow(switched)
            return
        if self.active:
            self._automaton.feed(text)
            return
        if token in self._trigger_tokens:
            self.active = True
            self._automaton.feed(text)
            return
        if not self._patterns:
            return
        if self._watch is not None:
            if self._watch.feed(token, text):
                self.active = True
                self._automaton.feed(self._watch.text[self._watch.start :])
            return
        self._seen += text
        for pattern in self._patterns:
            m = pattern.fullmatch(self._seen)
            if m is None:
                continue
            start = next((m.start(i) for i in range(1, len(m.groups()) + 1) if m.group(i)), 0)
            self.active = True
            self._automaton.feed(self._seen[start:])
            self._seen = ""
            return

    def _follow(self, switch: StrictSwitch | None) -> None:
        """The sampler switched to the strict grammar with this token: read that one, from
        the capture on (an automaton that cannot read it forces nothing)."""
        self._switched, self.active = switch, True
        if switch is None:
            return
        try:
            self._automaton = GbnfAutomaton(switch.grammar.gbnf, switch.grammar.root)
        except GbnfSyntaxError:
            self._automaton.failed = True
            return
        self._automaton.feed(switch.capture)

    def start(self, grammar: GrammarSampler, *, room: int) -> list[int]:
        """Forced tokens before the first sampled one (a forced grammar's opener: the prompt
        ends where the completion's first token starts, so the text is tokenized alone)."""
        return self._force(None, grammar, room=room)

    def extend(self, token: int, grammar: GrammarSampler, *, room: int) -> list[int]:
        """Forced tokens to decode right after ``token`` (already accepted), at most ``room``;
        each is accepted by ``grammar`` and fed to the automaton before it is returned."""
        return self._force(token, grammar, room=room)

    def _force(self, token: int | None, grammar: GrammarSampler, *, room: int) -> list[int]:
        if not self.active or room <= 0 or self._automaton.failed:
            return []
        forced = self._automaton.forced()
        text = self._stable(forced.text)
        # nothing the model writes next can merge into the last forced token: the grammar ends
        # right after it, or an added token follows
        sealed = forced.complete and text == forced.text
        if not text or grammar.allows(self._eog):
            return []  # nothing forced, or llama.cpp's grammar is not (or no longer) constraining
        engine = self._engine
        head = b"" if token is None else engine.piece(token)
        body = text.encode("utf-8")
        added = self._added.ids
        ids = self._tokenize(head + body)
        whole = ids  # the tokens of head + body, for the seam check below
        if token is not None:
            if ids and ids[0] != token and ids[0] in added and self._spells(head, ids[0]):
                # The model is spelling an added token's text ("<" of "<tool_call>"): to it the
                # rest is plain text. Tokenize it alone, up to the next added token.
                spelled, rest = self._before_added(body)
                sealed = sealed or len(spelled) < len(body)  # an added token follows
                body, ids = spelled, [token, *rest]
                whole = ids
            if not ids or ids[0] != token:
                return []  # the seam would not be canonical: let the model write on
            ids = ids[1:]
        if b"".join(engine.piece(t) for t in ids) != body:
            return []
        cut = next((i for i, t in enumerate(ids) if t in added), None)
        if cut is not None:
            # The model writes an added token itself, whole or spelled in pieces: a small model
            # that spells it behaves otherwise after the canonical token (Qwen2.5-Coder-0.5B
            # starts calls with "<" "tool" "_call" ">" and, given "<tool_call>", goes on
            # calling). Nothing merges into an added token, so nothing is held back before it.
            ids = ids[:cut]
        elif not sealed and not self._seam_holds(head + body, whole, forced, text):
            ids = ids[:-1]  # may merge with the free text after it
        out: list[int] = []
        for t in ids[:room]:
            if not grammar.allows(t):
                break
            grammar.accept(t)
            self.observe(t)
            out.append(t)
        return out

    def _seam_holds(self, text: bytes, ids: list[int], forced: ForcedText, kept: str) -> bool:
        """Whether the last forced token stays a token whatever the model writes next: the
        grammar allows only a few characters after the forced text, and each of them, with
        what it then forces, tokenizes after ``text`` without changing ``ids`` (``text``'s
        tokens). Then it need not be held back (``}\n`` before a choice of ``` or ``{``)."""
        if kept != forced.text or not forced.next_chars:
            return False
        found = self._automaton.continuations(forced.text, sorted(forced.next_chars))
        if found is None:
            return False
        return all(
            self._tokenize(text + (char + after.text).encode("utf-8"))[: len(ids)] == ids
            for char, after in found.items()
        )

    def _stable(self, text: str) -> str:
        """``text`` up to where an added token (``<tool_call>``) might begin: forcing ``<`` of
        ``<t...`` as a token of its own would keep the model from its one ``<tool_call>``."""
        prefixes, longest = self._added.prefixes, self._added.longest_prefix
        for k in range(min(longest, len(text)), 0, -1):
            if text[-k:] in prefixes:
                return text[:-k]
        return text

    def _tokenize(self, text: bytes) -> list[int]:
        return list(self._engine.llama.tokenize(text, add_bos=False, special=True))

    def _spells(self, head: bytes, added_token: int) -> bool:
        """Whether ``head`` starts the added token's text at a token boundary of its spelling:
        ``<`` + ``tool_call`` tokenizes as ``<`` then the tokens of ``tool_call`` alone."""
        text = self._engine.piece(added_token)
        if not text.startswith(head) or len(text) <= len(head) + 1:
            return False
        rest = text[len(head) : -1]  # without its last character it is no added token
        whole = self._tokenize(head + rest)
        return (
            len(whole) > 1
            and b"".join(self._engine.piece(t) for t in whole[:1]) == head
            and whole[1:] == self._tokenize(rest)
        )

    def _before_added(self, body: bytes) -> tuple[bytes, list[int]]:
        """``body`` up to the first added token in it, and its tokens (an added token is split
        off before the rest is tokenized, so they are the tokens of the text before it)."""
        ids = self._tokenize(body)
        nxt = next((i for i, t in enumerate(ids) if t in self._added.ids), len(ids))
        return b"".join(self._engine.piece(t) for t in ids[:nxt]), ids[:nxt]
