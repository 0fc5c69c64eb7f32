"""Tools and a ``response_format`` under ``"auto"``: the model decides freely whether it calls.

OpenAI's semantics for the pair is "a call, or an answer that matches the schema". A grammar of
exactly that from the first token takes the model's own first choice away: a model that would
answer in prose has its prose masked, and greedy decoding then picks whichever allowed start
the model ranks higher, often a call opener. SmolLM2-135M, offered ``get_weather`` and asked a
question it answers in prose without ``response_format``, called the tool on all three such
questions with it. That is the constraint tax in the call/answer choice, and its remedy is the
one the lazy grammar applies to calls: let the model write freely, constrain late.

So the front end first lets the model write a few tokens with no grammar (the prompt is cached by
then, so this costs those tokens): if no reply the combined grammar allows starts so (prose),
the model meant to answer, and the answer's grammar alone applies; if they can start a call or
the answer (a call opener, a reasoning block, ``{"``), the combined grammar applies as before,
and the choice within it stays the model's. Nothing here knows a dialect: the grammars come
from the spec, and the choice is read off the combined one with ``GbnfAutomaton``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..engine.base import GenerationRequest, Triggers
from ..grammar.forced import GbnfAutomaton

if TYPE_CHECKING:
    from ..engine.base import Engine
    from .request import Request

__all__ = ["PROBE_TOKENS", "choose_answer_or_call"]

PROBE_TOKENS = 8
"""Free tokens read before the choice: enough for a multi-token call opener (``[TOOL_CALLS]``,
``<|python_tag|>``, ``{"name"``) to tell itself apart from an answer's first JSON."""


def choose_answer_or_call(
    request: Request, job: GenerationRequest, engine: Engine
) -> GenerationRequest:
    """``job`` with the answer's grammar alone where the model's free start cannot be a call;
    ``job`` unchanged otherwise (no combined grammar, a call started, or no telling)."""
    alone = request.answer_alone
    if alone is None or job.grammar is None or job.grammar.lazy:
        return job
    return replace(job, grammar=alone) if _answers(job, engine) else job


def _answers(job: GenerationRequest, engine: Engine) -> bool:
    """Whether the model's first free tokens rule out every reply the combined grammar allows
    (a call and the answer's JSON alike): the model meant to answer in prose."""
    assert job.grammar is not None
    both = GbnfAutomaton(job.grammar.gbnf, job.grammar.root)
    probe = replace(job, grammar=None, triggers=Triggers(), max_tokens=PROBE_TOKENS, logprobs=None)
    generation = engine.run(probe)
    text = ""
    try:
        for piece in generation:
            text += piece
            start = text.lstrip()  # intent, not layout: the grammar places the whitespace
            if not start:
                continue
            either = both.viable(start)
            if not either:
                # no reply starts so: prose, which the answer's grammar turns into the answer;
                # None (the automaton cannot tell) keeps every option open
                return either is False
    finally:
        generation.close()
    # a start the combined grammar allows (a call opener, ``{"``, ``<``): the call stays
    # reachable, and the model's choice between the two is its own
    return False
