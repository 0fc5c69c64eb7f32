"""Which grammar the handler arms for a model: reasoning guards only where the template reasons."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import read_template
from tooldialect import ToolChatHandler

pytestmark = pytest.mark.model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
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
