"""A lazy grammar made strict once its trigger fired: the call's envelope is then forced.

A lazy grammar (``tool_choice="auto"``) keeps its envelope's whitespace free, because llama.cpp
replays the model's own text from the trigger into it and aborts the process on a replay it
rejects; so fast-forward forces little there. Once the trigger fired, the captured text is
known. If the grammar's strict form (``ToolGrammar.strict_gbnf``: the same formats with the
exact envelope of a forced call, a JSON envelope compact or indented) accepts it, the rest of
the call is constrained by the strict form instead, and fast-forward forces its names, keys and
punctuation as it does in a forced call.

Acceptance is decided by llama.cpp itself, never by a guess: a fresh (not lazy) sampler of the
strict grammar is asked about every token from the one the capture starts in (``allows``, a
1-candidate apply that cannot abort) before it accepts it. The text of that first token before
the capture is a literal the seeding rule puts in front of the strict root. Only a sampler that
accepted every token replaces the lenient one; otherwise the lenient grammar goes on as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import GrammarError
from ...grammar.gbnf import literal
from .sampling import GrammarSampler

__all__ = ["StrictGrammar", "StrictSwitch", "seed_strict", "strict_of"]

_SEED = "tooldialect-seed"
"""The seeding rule's name (``literal(prefix) strict-root``)."""


@dataclass(frozen=True)
class StrictGrammar:
    """A grammar that constrains from its first character (``GrammarLike``)."""

    gbnf: str
    root: str
    lazy: bool = False
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class StrictSwitch:
    """A switch that happened: the strict grammar and the text it was seeded with (the capture
    up to the end of the token that completed the trigger), for fast-forward's automaton."""

    grammar: StrictGrammar
    capture: str


def strict_of(grammar: Any) -> StrictGrammar | None:
    """The strict form of a lazy ``grammar`` (``None``: it has none, or it is not lazy)."""
    gbnf = getattr(grammar, "strict_gbnf", "")
    root = getattr(grammar, "strict_root", "")
    if not (getattr(grammar, "lazy", False) and isinstance(gbnf, str) and gbnf and root):
        return None
    return StrictGrammar(gbnf=gbnf, root=str(root))


def seed_strict(
    vocab: Any, strict: StrictGrammar, tokens: Sequence[int], before: str
) -> GrammarSampler | None:
    """A sampler of ``strict`` that accepted ``tokens`` (whose text is ``before`` followed by
    the capture), or ``None`` where llama.cpp rejects one of them (or the grammar)."""
    if "\ufffd" in before:
        return None  # bytes that are no UTF-8 text cannot be spelled as a literal
    grammar = strict
    if before:
        if _SEED in strict.gbnf:
            return None
        seeded = f"{strict.gbnf.rstrip()}\n{_SEED} ::= {literal(before)} {strict.root}\n"
        grammar = StrictGrammar(gbnf=seeded, root=_SEED)
    try:
        sampler = GrammarSampler(vocab, grammar)
    except GrammarError:  # llama.cpp rejected the grammar (a NULL sampler): keep the lenient one
        return None
    for t in tokens:
        if not sampler.allows(t):
            sampler.close()
            return None
        sampler.accept(t)
    return sampler
