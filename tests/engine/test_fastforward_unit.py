"""Fast-forward without a model: lazy trigger detection, seam check, held-back last token."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tooldialect.engine.in_process.fastforward import FastForward
from tooldialect.engine.in_process.generate import AddedTokens

WORDS = ["<call>", '{"', "name", '":', ' "', "alpha", "beta", '"}', "hi", " "]
VOCAB = {i + 1: w.encode() for i, w in enumerate(WORDS)}
VOCAB.update({100 + c: bytes([c]) for c in range(32, 127)})
EOS = 0
GBNF = 'root ::= "<call>" "{\\"name\\": \\"" ("alpha" | "beta") "\\"}"'
TRIGGER = r"^[\s\S]*?(<call>)[\s\S]*"


class FakeLlama:
    def token_eos(self) -> int:
        return EOS

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = True) -> list[int]:
        """Greedy longest match over the vocabulary."""
        out, i = [], 0
        by_len = sorted(VOCAB.items(), key=lambda kv: -len(kv[1]))
        while i < len(text):
            tid = next(t for t, b in by_len if text.startswith(b, i))
            out.append(tid)
            i += len(VOCAB[tid])
        return out


@dataclass
class FakeEngine:
    llama: FakeLlama = field(default_factory=FakeLlama)

    def piece(self, token: int) -> bytes:
        return VOCAB[token]

    def trigger_arguments(self, grammar: Any) -> tuple[list[int], list[str]]:
        return [], list(grammar.trigger_patterns)

    def added_tokens(self) -> AddedTokens:
        """``<call>`` is an added token."""
        prefixes = frozenset("<call>"[:k] for k in range(1, 6))
        return AddedTokens(ids=frozenset({tok("<call>")}), prefixes=prefixes, longest_prefix=5)


@dataclass(frozen=True)
class Grammar:
    gbnf: str = GBNF
    root: str = "root"
    lazy: bool = True
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = (TRIGGER,)


@dataclass
class FakeSampler:
    """llama.cpp's grammar as the engine sees it: active once triggered, rejects EOS mid-call."""

    active: bool = True
    accepted: list[int] = field(default_factory=list)

    def allows(self, token: int) -> bool:
        return not (self.active and token == EOS)

    def accept(self, token: int) -> None:
        self.accepted.append(token)


def tok(word: str) -> int:
    return next(t for t, b in VOCAB.items() if b == word.encode())


def test_nothing_is_forced_before_the_trigger() -> None:
    ff = FastForward.create(FakeEngine(), Grammar())
    assert ff is not None
    ff.observe(tok("hi"))
    assert not ff.active
    assert ff.extend(tok("hi"), FakeSampler(active=False), room=10) == []  # type: ignore[arg-type]


def test_after_the_trigger_the_forced_text_is_appended() -> None:
    ff = FastForward.create(FakeEngine(), Grammar())
    assert ff is not None
    sampler = FakeSampler()
    for word in ["hi", " ", "<call>"]:
        ff.observe(tok(word))
    assert ff.active
    forced = ff.extend(tok("<call>"), sampler, room=10)  # type: ignore[arg-type]
    # forced text '{"name": "' tokenizes to {" name ": ' "'; only "a" or "b" may follow, and no
    # token spans ' "' and either, so the last forced token is kept
    assert [VOCAB[t] for t in forced] == [b'{"', b"name", b'":', b' "']
    assert sampler.accepted == forced
    # alpha | beta: a branch point
    assert ff.extend(forced[-1], sampler, room=10) == []  # type: ignore[arg-type]


def test_a_last_forced_token_that_may_merge_with_what_follows_is_held_back() -> None:
    """``h`` then ``i`` or ``x``: ``h`` + ``i`` is the token ``hi``, so ``h`` is left to the
    model (forcing it would write ``h`` ``i`` where the tokenizer writes ``hi``)."""
    gbnf = 'root ::= "<call>" "{\\"name\\": \\"" ("alpha" | "beta") "\\"} h" ("i" | "x")'
    ff = FastForward.create(FakeEngine(), Grammar(gbnf=gbnf, lazy=False, trigger_patterns=()))
    assert ff is not None
    sampler = FakeSampler()
    for word in ["<call>", '{"', "name", '":', ' "', "alpha"]:
        ff.observe(tok(word))
    forced = ff.extend(tok("alpha"), sampler, room=10)  # type: ignore[arg-type]
    assert [VOCAB[t] for t in forced] == [b'"}', b" "]


@pytest.mark.parametrize("room", [0, 1, 2], ids=["no-room", "one", "two"])
def test_room_bounds_the_forced_tokens(room: int) -> None:
    ff = FastForward.create(FakeEngine(), Grammar(lazy=False, trigger_patterns=()))
    assert ff is not None
    ff.observe(tok("<call>"))
    assert len(ff.extend(tok("<call>"), FakeSampler(), room=room)) == room  # type: ignore[arg-type]


def test_a_grammar_that_accepts_the_end_is_never_forced() -> None:
    ff = FastForward.create(FakeEngine(), Grammar(lazy=False, trigger_patterns=()))
    assert ff is not None
    ff.observe(tok("<call>"))
    # llama.cpp's grammar accepting EOS means it is not constraining: force nothing
    assert ff.extend(tok("<call>"), FakeSampler(active=False), room=10) == []  # type: ignore[arg-type]


def test_a_forced_grammar_is_forced_from_the_start() -> None:
    """Before the first sample: the opener, tokenized alone (its last token kept: nothing the
    grammar allows next merges into it)."""
    gbnf = 'root ::= "hi{\\"name\\": \\"" ("alpha" | "beta") "\\"}"'
    grammar = Grammar(gbnf=gbnf, lazy=False, trigger_patterns=())
    ff = FastForward.create(FakeEngine(), grammar)
    assert ff is not None
    sampler = FakeSampler()
    forced = ff.start(sampler, room=10)  # type: ignore[arg-type]
    assert [VOCAB[t] for t in forced] == [b"hi", b'{"', b"name", b'":', b' "']
    assert sampler.accepted == forced


def test_an_added_token_is_never_forced() -> None:
    """The model writes ``<call>`` itself (whole or in pieces); forcing stops before it."""
    ff = FastForward.create(FakeEngine(), Grammar(lazy=False, trigger_patterns=()))
    assert ff is not None
    assert ff.start(FakeSampler(), room=10) == []  # type: ignore[arg-type]
    gbnf = 'root ::= "hi " "<call>" " beta"'
    ff = FastForward.create(FakeEngine(), Grammar(gbnf=gbnf, lazy=False, trigger_patterns=()))
    assert ff is not None
    # "hi", " " then the added token: both kept (nothing merges into an added token)
    assert [VOCAB[t] for t in ff.start(FakeSampler(), room=10)] == [b"hi", b" "]  # type: ignore[arg-type]
    ff.observe(tok("<call>"))
    assert [VOCAB[t] for t in ff.extend(tok("<call>"), FakeSampler(), room=10)] == [b" ", b"beta"]  # type: ignore[arg-type]
    lazy = FastForward.create(FakeEngine(), Grammar())
    assert lazy is not None
    assert lazy.start(FakeSampler(active=False), room=10) == []  # type: ignore[arg-type]


def test_forced_text_stops_before_a_possible_added_token() -> None:
    """'hi <c' could become 'hi ' + '<call>': forcing '<' alone would rule the added token out."""
    gbnf = 'root ::= "hi <c" ("all>" | "x") " beta"'
    ff = FastForward.create(
        FakeEngine(),
        Grammar(gbnf=gbnf, lazy=False, trigger_patterns=()),
    )
    assert ff is not None
    forced = ff.start(FakeSampler(), room=10)  # type: ignore[arg-type]
    assert [VOCAB[t] for t in forced] == [b"hi"]  # 'hi ' minus the held-back ' '
    assert b"<" not in b"".join(VOCAB[t] for t in forced)


def test_a_spelled_added_token_is_finished_as_text() -> None:
    """The model wrote "<" rather than the added token "<call>": the rest is plain text to it,
    so it is forced in the tokens of its own spelling (then the held-back last one)."""
    ff = FastForward.create(FakeEngine(), Grammar(lazy=False, trigger_patterns=()))
    assert ff is not None
    sampler = FakeSampler()
    assert ff.start(sampler, room=10) == []  # type: ignore[arg-type]
    ff.observe(tok("<"))
    forced = ff.extend(tok("<"), sampler, room=20)  # type: ignore[arg-type]
    assert b"".join(VOCAB[t] for t in forced) == b'call>{"name":'
    assert tok("<call>") not in forced


LENIENT = 'root ::= "<call>" " "? "{" " "? "\\"name\\":" " "? "\\"" ("alpha" | "beta") "\\"}"'
STRICT = 'strict ::= "<call>" "{\\"name\\": \\"" ("alpha" | "beta") "\\"}"'


@dataclass
class SwitchingSampler(FakeSampler):
    """A sampler that switches to the strict form when the trigger fires (as WatchedGrammar
    does where llama.cpp accepts the capture)."""

    switch: bool = True
    switched: Any = None

    def accept(self, token: int) -> None:
        super().accept(token)
        if self.switch and token == tok("<call>") and self.switched is None:
            from tooldialect.engine.in_process.strict_sampler import StrictGrammar, StrictSwitch

            self.switched = StrictSwitch(StrictGrammar(STRICT, "strict"), "<call>")


@pytest.mark.parametrize("switch", [True, False], ids=["strict", "lenient"])
def test_after_a_switch_the_strict_forms_text_is_forced(switch: bool) -> None:
    """The lenient envelope's optional spaces force nothing; once the sampler switched to the
    strict form, its envelope is forced (from the capture on)."""
    sampler = SwitchingSampler(switch=switch)
    grammar = Grammar(gbnf=LENIENT)
    ff = FastForward.create(FakeEngine(), grammar, sampler=sampler)  # type: ignore[arg-type]
    assert ff is not None
    for word in ["hi", "<call>"]:
        sampler.accept(tok(word))
        ff.observe(tok(word))
    assert ff.active
    forced = ff.extend(tok("<call>"), sampler, room=10)  # type: ignore[arg-type]
    if switch:
        assert [VOCAB[t] for t in forced] == [b'{"', b"name", b'":', b' "']
    else:
        assert forced == []  # ' '? '{': a branch point
