"""Structured-output grammars (``response_format``): bare JSON of the schema from the first token,
free reasoning before it, calls as the alternative under ``auto``; on llama.cpp's sampler."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import model_path
from grammar_check import grammar_accepts, validate_grammar, vocab_of
from tooldialect import DialectSpec, UnsupportedSchemaError
from tooldialect.grammar.answer import ANY_OBJECT, build_answer_grammar
from tooldialect.tool_defs import normalize_tools


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("qwen")), vocab_only=True, verbose=False)


CITY = {
    "$defs": {"unit": {"enum": ["c", "f"]}},
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "temp": {"type": "integer", "minimum": -80, "maximum": 60},
        "unit": {"$ref": "#/$defs/unit"},
        "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    },
    "required": ["city", "temp", "unit"],
}
TOOLS = normalize_tools(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
)
GOOD = '{"city": "Paris", "temp": 21, "unit": "c"}'

# (id, dialect, schema, with tools, reasoning_open, accepted, rejected)
CASES: list[tuple[str, str, Any, bool, bool, list[str], list[str]]] = [
    (
        "hermes-schema",
        "hermes",
        CITY,
        False,
        False,
        [GOOD, '{"city":"Oslo","temp":-5,"unit":"f","tags":["x",null]}'],
        [
            "```json\n" + GOOD + "\n```",
            " " + GOOD,
            '{"city": "Paris", "temp": 99, "unit": "c"}',
            '{"city": "Paris", "temp": 21, "unit": "k"}',
            '{"city": "Paris", "unit": "c"}',
            "Sure! " + GOOD,
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        ],
    ),
    (
        "hermes-any-object",
        "hermes",
        ANY_OBJECT,
        False,
        False,
        ['{"anything": [1, 2, {"x": null}]}', "{}"],
        ["[1, 2]", '"text"', "Here is JSON: {}"],
    ),
    (
        "hermes-schema-or-call",
        "hermes",
        CITY,
        True,
        False,
        [
            GOOD,
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            '{"name": "get_weather", "arguments": {"city": "Paris"}}',
            "<think>\nuser wants weather\n</think>\n\n" + GOOD,
        ],
        [
            '<tool_call>\n{"name": "other", "arguments": {}}\n</tool_call>',
            '{"name": "other", "arguments": {}}',
            "I will call a tool " + GOOD,
            "```json\n" + GOOD + "\n```",
        ],
    ),
    (
        "deepseek-r1-reasoning-open",
        "deepseek-r1",
        CITY,
        False,
        True,
        ["Let me think about <b> and </thin.\n</think>\n\n" + GOOD],
        [GOOD + "</think>", "thinking</think>\nThe answer is " + GOOD],
    ),
    (
        "gpt-oss-final-channel",
        "gpt-oss",
        CITY,
        False,
        False,
        [
            "<|channel|>analysis<|message|>Paris, 21C.<|end|><|start|>assistant<|channel|>final"
            "<|message|>" + GOOD,
            GOOD,
        ],
        ["<|channel|>analysis<|message|>Paris<|end|>The answer: " + GOOD],
    ),
]


@pytest.mark.parametrize(
    ("dialect", "schema", "with_tools", "opened", "accepted", "rejected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_answer_grammar(
    vocab_llama: Any,
    dialect: str,
    schema: Any,
    with_tools: bool,
    opened: bool,
    accepted: list[str],
    rejected: list[str],
) -> None:
    spec = DialectSpec.builtin(dialect)
    g = build_answer_grammar(
        spec, schema, tools=TOOLS if with_tools else None, reasoning_open=opened
    )
    assert not g.lazy, "structured output constrains from the first token"
    validate_grammar(g.gbnf, root=g.root, vocab=vocab_of(vocab_llama))
    for text in accepted:
        assert grammar_accepts(g.gbnf, text, root=g.root, llama=vocab_llama), text
    for text in rejected:
        assert not grammar_accepts(g.gbnf, text, root=g.root, llama=vocab_llama), text


def test_unsupported_schema_names_its_pointer() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "string", "pattern": "(?=a)"}}}
    with pytest.raises(UnsupportedSchemaError) as err:
        build_answer_grammar(DialectSpec.builtin("hermes"), schema)
    assert err.value.pointer == "/properties/n/pattern"
