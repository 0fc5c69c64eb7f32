"""Tools and a ``response_format`` under ``"auto"`` (``frontend.call_or_answer``): the model's
first free tokens decide whether the call stays reachable. Prose rules every allowed reply out,
so the answer's grammar alone applies; a call opener, a reasoning block or the start of JSON keep
the combined grammar. Scripted engine; the grammars are checked on llama.cpp's sampler."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import model_path, read_template
from fake_engine import fake_handler
from grammar_check import grammar_accepts
from tool_defs import CAPITAL_ANSWER as ANSWER
from tool_defs import CAPITAL_FORMAT as SCHEMA_FORMAT
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect.frontend.call_or_answer import PROBE_TOKENS
from tooldialect.grammar.forced import GbnfAutomaton

QWEN25 = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
QWEN3 = read_template("Qwen-Qwen3-0.6B.jinja")
ASK = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("qwen")), vocab_only=True, verbose=False)


def _pieces(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def _run(template: str, script: str, **request: Any) -> tuple[Any, Any, Any]:
    """The handler, the fake engine after one request, and the spec's call to get_weather."""
    handler, llama, engine = fake_handler(template, _pieces(script))
    request = {"tools": [WEATHER], "response_format": SCHEMA_FORMAT, **request}
    handler(llama=llama, messages=ASK, **request)
    call = handler.setup(llama).spec.render_call("get_weather", {"city": "Paris"})
    return handler, engine, call


@pytest.mark.parametrize("start", ["The capital of France is Paris.", "\n\nParis, of course."])
def test_prose_gets_the_answer_grammar_alone(vocab_llama: Any, start: str) -> None:
    _, engine, call = _run(QWEN25, start)
    probe, job = engine.jobs
    assert (probe.grammar, probe.max_tokens, probe.triggers.words) == (None, PROBE_TOKENS, ())
    assert probe.prompt == job.prompt
    grammar = job.grammar
    assert grammar_accepts(grammar.gbnf, ANSWER, root=grammar.root, llama=vocab_llama)
    # the call that a combined grammar allows is gone: the model meant to answer
    assert not grammar_accepts(grammar.gbnf, call, root=grammar.root, llama=vocab_llama)


@pytest.mark.parametrize(
    "script",
    ["call", ANSWER, "<", ""],
    ids=["call-opener", "json-start", "ambiguous-start", "nothing"],
)
def test_a_start_the_combined_grammar_allows_keeps_the_call_reachable(
    vocab_llama: Any, script: str
) -> None:
    handler, llama, _ = fake_handler(QWEN25, [])
    call = handler.setup(llama).spec.render_call("get_weather", {"city": "Paris"})
    _, engine, _ = _run(QWEN25, call if script == "call" else script)
    assert len(engine.jobs) == 2
    grammar = engine.jobs[-1].grammar
    for text in (call, ANSWER):
        assert grammar_accepts(grammar.gbnf, text, root=grammar.root, llama=vocab_llama), text


def test_a_reasoning_block_keeps_the_call_reachable(vocab_llama: Any) -> None:
    _, engine, call = _run(QWEN3, "<think>\nThe user asks for a capital.")
    grammar = engine.jobs[-1].grammar
    thought = "<think>\nok\n</think>\n\n"
    assert grammar_accepts(grammar.gbnf, thought + call, root=grammar.root, llama=vocab_llama)


@pytest.mark.parametrize(
    "request_",
    [
        {"response_format": None},
        {"tool_choice": "none"},
        {"tool_choice": "required"},
        {"tools": None},
    ],
    ids=["no-schema", "none", "required", "no-tools"],
)
def test_no_probe_where_nothing_is_to_choose(request_: dict[str, Any]) -> None:
    request = {k: v for k, v in request_.items() if v is not None}
    dropped = [k for k, v in request_.items() if v is None]
    handler, llama, engine = fake_handler(QWEN25, _pieces("Paris."))
    full: dict[str, Any] = {"tools": [WEATHER], "response_format": SCHEMA_FORMAT, **request}
    for key in dropped:
        full.pop(key)
    handler(llama=llama, messages=ASK, **full)
    assert len(engine.jobs) == 1


def test_the_automaton_tells_a_viable_start_from_a_dead_one() -> None:
    automaton = GbnfAutomaton('root ::= "<tool_call>" [a-z]+ | "{" [a-z]* "}"')
    assert automaton.viable("<tool") is True
    assert automaton.viable("<tool_call>abc") is True
    assert automaton.viable("<tool_r") is False
    assert automaton.viable("{ab}x") is False
    assert automaton.viable("") is True
    assert automaton.feed("<tool_call>"), "viable() did not advance the automaton"
    assert automaton.viable("{") is False
