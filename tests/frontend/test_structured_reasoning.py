"""``response_format`` on a reasoning template (Qwen3's) and beside tools under ``"auto"``, through
the handler with a scripted engine: the reasoning stays free and comes back as
``reasoning_content``, the answer after it follows the schema, batch and stream alike; thinking
turned off (``enable_thinking=False``) leaves no room for a second block; a call stays reachable
(issue 31). The grammar each request hands the engine is checked on llama.cpp's sampler."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import ROOT, model_path, read_template
from fake_engine import fake_handler
from grammar_check import grammar_accepts
from tool_defs import CAPITAL as CITY
from tool_defs import CAPITAL_ANSWER as ANSWER
from tool_defs import CAPITAL_FORMAT as SCHEMA_FORMAT
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect.grammar.validate import validate_value

QWEN3 = read_template("Qwen-Qwen3-0.6B.jinja")  # thinks unless enable_thinking=False
QWEN25 = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
# a Qwen3 template whose generation prompt opens the block (``<think>\n\n``); the corpus is shared,
# not vendored: tests that need it skip without it
OPENING = ROOT.parent / "shared" / "templates-corpus" / "axolotl-qwen3.jinja"

ASK = [{"role": "user", "content": "What is the capital of France? Answer as JSON."}]
# reasoning that no JSON schema would let through: a brace left open, prose
THOUGHT = "The user wants {city, country. France's capital: Paris"


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("qwen")), vocab_only=True, verbose=False)


def _tokens(text: str) -> list[str]:
    """``text`` cut as a tokenizer might: markers whole, the rest in short pieces."""
    out: list[str] = []
    for part in (
        text.replace("<think>", "\0<think>\0").replace("</think>", "\0</think>\0").split("\0")
    ):
        out += [part[i : i + 3] for i in range(0, len(part), 3)]
    return [p for p in out if p]


def _reply(template: str, script: str, *, stream: bool, **request: Any) -> tuple[Any, Any, Any]:
    """``(content, reasoning_content, tool_calls)`` of one request, and the grammar it used."""
    handler, llama, engine = fake_handler(template, _tokens(script))
    out: Any = handler(llama=llama, messages=request.pop("messages", ASK), stream=stream, **request)
    if stream:
        content, reasoning, calls = "", "", list[Any]()
        for chunk in out:
            delta = chunk["choices"][0]["delta"]
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            calls += delta.get("tool_calls") or []
        return (content or None, reasoning or None, calls), engine.jobs[-1].grammar, engine
    message = out["choices"][0]["message"]
    got = (message.get("content"), message.get("reasoning_content"), message.get("tool_calls"))
    return got, engine.jobs[-1].grammar, engine


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize(
    "response_format", [SCHEMA_FORMAT, {"type": "json_object"}], ids=["schema", "object"]
)
def test_reasoning_is_free_and_the_answer_follows_the_schema(
    vocab_llama: Any, stream: bool, response_format: Any
) -> None:
    script = f"<think>\n{THOUGHT}\n</think>\n\n{ANSWER}"
    (content, reasoning, _), grammar, _ = _reply(
        QWEN3, script, stream=stream, response_format=response_format
    )
    assert reasoning == THOUGHT
    assert not validate_value(CITY, json.loads(content))
    assert grammar_accepts(grammar.gbnf, script, root=grammar.root, llama=vocab_llama)
    # the schema still binds after the block
    bad = f"<think>\n{THOUGHT}\n</think>\n\n" + "Paris"
    assert not grammar_accepts(grammar.gbnf, bad, root=grammar.root, llama=vocab_llama)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_block_the_prompt_opened_is_free(vocab_llama: Any, stream: bool) -> None:
    if not OPENING.exists():
        pytest.skip(f"the shared template corpus is not at {OPENING.parent}")
    script = f"{THOUGHT}\n</think>\n\n{ANSWER}"
    (content, reasoning, _), grammar, engine = _reply(
        OPENING.read_text(encoding="utf-8"), script, stream=stream, response_format=SCHEMA_FORMAT
    )
    assert engine.jobs[-1].prompt.rstrip().endswith("<think>")
    assert (reasoning, json.loads(content)) == (THOUGHT, json.loads(ANSWER))
    assert grammar_accepts(grammar.gbnf, script, root=grammar.root, llama=vocab_llama)
    assert not grammar_accepts(
        grammar.gbnf, ANSWER + "</think>", root=grammar.root, llama=vocab_llama
    )


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize("with_tools", [False, True], ids=["answer", "answer-or-call"])
def test_thinking_off_constrains_from_the_first_token(
    vocab_llama: Any, stream: bool, with_tools: bool
) -> None:
    tools = {"tools": [WEATHER]} if with_tools else {}
    (content, reasoning, calls), grammar, engine = _reply(
        QWEN3,
        ANSWER,
        stream=stream,
        response_format=SCHEMA_FORMAT,
        chat_template_kwargs={"enable_thinking": False},
        **tools,
    )
    assert engine.jobs[-1].prompt.endswith("<think>\n\n</think>\n\n")
    assert (content, reasoning, calls or None) == (ANSWER, None, None)
    assert not grammar.lazy
    assert grammar_accepts(grammar.gbnf, ANSWER, root=grammar.root, llama=vocab_llama)
    # the prompt closed the block: a second one is no longer free text before the answer
    again = f"<think>\n{THOUGHT}\n</think>\n\n{ANSWER}"
    assert not grammar_accepts(grammar.gbnf, again, root=grammar.root, llama=vocab_llama)


@pytest.mark.parametrize(
    ("template", "thinks"), [(QWEN25, False), (QWEN3, True)], ids=["qwen2.5", "qwen3"]
)
def test_tools_and_a_schema_under_auto_allow_a_call_or_a_valid_answer(
    vocab_llama: Any, template: str, thinks: bool
) -> None:
    handler, llama, engine = fake_handler(template, _tokens(ANSWER))
    handler(llama=llama, messages=ASK, tools=[WEATHER], response_format=SCHEMA_FORMAT)
    grammar = engine.jobs[-1].grammar
    assert grammar is not None
    spec = handler.setup(llama).spec
    call = spec.render_call("get_weather", {"city": "Paris"})
    assert not grammar.lazy, "the answer is constrained from the first token"
    thought = f"<think>\n{THOUGHT}\n</think>\n\n"
    for text in (call, ANSWER, *([thought + call, thought + ANSWER] if thinks else [])):
        assert grammar_accepts(grammar.gbnf, text, root=grammar.root, llama=vocab_llama), text
    for text in ('{"city": "Paris"}', "Paris", spec.render_call("other", {"city": "Paris"})):
        assert not grammar_accepts(grammar.gbnf, text, root=grammar.root, llama=vocab_llama), text


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_call_under_auto_with_a_schema_comes_back_as_tool_calls(stream: bool) -> None:
    handler, llama, _ = fake_handler(QWEN3, [])
    call = handler.setup(llama).spec.render_call("get_weather", {"city": "Paris"})
    (content, reasoning, calls), _, _ = _reply(
        QWEN3,
        f"<think>\n{THOUGHT}\n</think>\n\n{call}",
        stream=stream,
        tools=[WEATHER],
        response_format=SCHEMA_FORMAT,
    )
    assert (content, reasoning) == (None, THOUGHT)
    assert [c["function"]["name"] for c in calls if c.get("function", {}).get("name")] == [
        "get_weather"
    ]
