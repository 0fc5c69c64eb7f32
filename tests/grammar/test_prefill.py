"""A forced grammar after a prompt that already wrote the call opener (Functionary v3.2 `>>>`)."""

from __future__ import annotations

from typing import Any

import pytest

from grammar_check import grammar_accepts
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import DialectSpec, build_grammar, parse_output

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def vocab(smollm2_path: Any) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), vocab_only=True, verbose=False)


def test_forced_grammar_starts_after_prefilled_opener(vocab: Any) -> None:
    spec = DialectSpec.builtin("functionary-v3.2")
    opener = spec.primary.call_open
    g = build_grammar(spec, [WEATHER], tool_choice="required", prefill=opener)
    assert g is not None
    full = spec.render_calls([("get_weather", {"city": "Paris"}, None)])
    assert full.startswith(opener)
    continuation = full[len(opener) :]
    assert grammar_accepts(g.gbnf, continuation, root=g.root, llama=vocab)
    assert not grammar_accepts(g.gbnf, full, root=g.root, llama=vocab)  # opener not written twice
    two = spec.render_calls(
        [("get_weather", {"city": "A"}, None), ("get_weather", {"city": "B"}, None)]
    )
    assert grammar_accepts(g.gbnf, two[len(opener) :], root=g.root, llama=vocab)
    parsed = parse_output(continuation, spec, tools=[WEATHER], prefill=opener)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


def test_without_prefill_the_opener_is_required(vocab: Any) -> None:
    spec = DialectSpec.builtin("functionary-v3.2")
    g = build_grammar(spec, [WEATHER], tool_choice="required")
    assert g is not None
    full = spec.render_call("get_weather", {"city": "Paris"})
    assert grammar_accepts(g.gbnf, full, root=g.root, llama=vocab)
    assert not grammar_accepts(
        g.gbnf, full[len(spec.primary.call_open) :], root=g.root, llama=vocab
    )
