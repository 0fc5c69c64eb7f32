"""Which grammar the handler arms for a model: reasoning guards only where the template reasons."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import read_template
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import ToolChatHandler

pytestmark = pytest.mark.model

TOOLS = [WEATHER]
USER = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture(scope="module")
def qwen_vocab(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(str(qwen_path), vocab_only=True, verbose=False)
    yield llm
    llm.close()


def test_template_without_reasoning_keeps_token_trigger(qwen_vocab: Any) -> None:
    """Qwen2.5's template never reasons: `<tool_call>` stays a (cheap) trigger token."""
    request = ToolChatHandler().prepare(llama=qwen_vocab, messages=USER, tools=TOOLS)
    assert request.setup.spec.id == "hermes" and request.setup.spec.reasoning is not None
    assert request.grammar is not None and request.grammar.trigger_words == ["<tool_call>"]
    assert not any("think" in p for p in request.grammar.trigger_patterns)


def test_reasoning_template_guards_triggers(qwen_vocab: Any) -> None:
    """Qwen3's template reasons: no trigger may fire inside <think>, so all are patterns."""
    handler = ToolChatHandler(chat_template=read_template("Qwen-Qwen3-0.6B.jinja"))
    request = handler.prepare(llama=qwen_vocab, messages=USER, tools=TOOLS)
    assert request.grammar is not None and request.grammar.trigger_words == []
    assert request.grammar.trigger_patterns
    assert all("think" in p for p in request.grammar.trigger_patterns)


ANSWER = {
    "type": "json_schema",
    "json_schema": {
        "name": "City",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TWO_CALLS = CALL + "\n" + CALL


def _accepts(request: Any, text: str, llama: Any) -> bool:
    from grammar_check import grammar_accepts

    g = request.grammar
    return grammar_accepts(g.gbnf, text, root=g.root, llama=llama)


# (id, request keywords, accepted replies, rejected replies)
ARMED: list[tuple[str, dict[str, Any], list[str], list[str]]] = [
    ("answer-only", {"response_format": ANSWER}, ['{"city": "Paris"}'], [CALL, "Paris"]),
    (
        "answer-or-call",
        {"response_format": ANSWER, "tools": TOOLS},
        ['{"city": "Paris"}', CALL],
        ["I'll check. " + CALL, '```json\n{"city": "Paris"}\n```'],
    ),
    (
        "none-hides-tools-answer-only",
        {"response_format": ANSWER, "tools": TOOLS, "tool_choice": "none"},
        ['{"city": "Paris"}'],
        [CALL],
    ),
    (
        "required-ignores-answer",
        {"response_format": ANSWER, "tools": TOOLS, "tool_choice": "required"},
        [CALL, TWO_CALLS],
        ['{"city": "Paris"}'],
    ),
    ("named-one-call", {"tools": TOOLS, "tool_choice": "get_weather"}, [CALL], [TWO_CALLS]),
    (
        "named-object-one-call-despite-parallel",
        {
            "tools": TOOLS,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": True,
        },
        [CALL],
        [TWO_CALLS],
    ),
    ("any-is-required-parallel", {"tools": TOOLS, "tool_choice": "any"}, [CALL, TWO_CALLS], ["hi"]),
    (
        "legacy-functions",
        {"functions": [TOOLS[0]["function"]], "function_call": {"name": "get_weather"}},
        [CALL],
        [TWO_CALLS],
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "accepted", "rejected"), [a[1:] for a in ARMED], ids=[a[0] for a in ARMED]
)
def test_request_arms_the_grammar(
    qwen_vocab: Any, kwargs: dict[str, Any], accepted: list[str], rejected: list[str]
) -> None:
    request = ToolChatHandler().prepare(llama=qwen_vocab, messages=USER, **kwargs)
    assert request.grammar is not None and not request.grammar.lazy
    for text in accepted:
        assert _accepts(request, text, qwen_vocab), text
    for text in rejected:
        assert not _accepts(request, text, qwen_vocab), text


def test_unsupported_answer_schema_fails_in_prepare(qwen_vocab: Any) -> None:
    from tooldialect import UnsupportedSchemaError

    # `not` compiles now; lookaround is outside the regex subset a grammar can express
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(?!a)"}}}
    bad = {"type": "json_object", "schema": schema}
    with pytest.raises(UnsupportedSchemaError) as err:
        ToolChatHandler().prepare(llama=qwen_vocab, messages=USER, response_format=bad)
    assert err.value.pointer == "/properties/x/pattern"
