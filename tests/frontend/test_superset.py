"""What llama-cpp-python's own handlers honour, through ToolChatHandler on real models:
response_format (three forms, with and without tools), logprobs, logits_processor, every
tool_choice form. Every response and chunk is validated with the OpenAI SDK's types."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from models.schema_check import schema_errors
from tool_defs import WEATHER
from tooldialect import ToolChatHandler, UnsupportedSchemaError

pytestmark = pytest.mark.model

CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "country": {"type": "string", "maxLength": 30},
        "population_millions": {"type": "number"},
    },
    "required": ["city", "country"],
}
FORMATS: list[tuple[str, dict[str, Any]]] = [
    ("json-object", {"type": "json_object"}),
    ("json-object-schema", {"type": "json_object", "schema": CITY}),
    ("json-schema", {"type": "json_schema", "json_schema": {"name": "City", "schema": CITY}}),
]
ASK = [{"role": "user", "content": "Give me the capital of France as JSON."}]
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 48}


def load(path: Path, **options: Any) -> Any:
    from llama_cpp import Llama

    return Llama(str(path), n_threads=2, n_ctx=2048, verbose=False, **options)


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    llm = load(qwen_path, chat_handler=ToolChatHandler())
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def smollm2(smollm2_path: Path) -> Iterator[Any]:
    llm = load(smollm2_path, chat_handler=ToolChatHandler())
    yield llm
    llm.close()


def complete(llm: Any, **kwargs: Any) -> dict[str, Any]:
    from openai.types.chat import ChatCompletion

    response: dict[str, Any] = llm.create_chat_completion(**{"messages": ASK, **GREEDY, **kwargs})
    ChatCompletion.model_validate(response)
    return response


def stream(llm: Any, **kwargs: Any) -> tuple[str, list[dict[str, Any]], list[Any]]:
    """Content, logprob entries and tool-call deltas of a stream (chunks validated)."""
    from openai.types.chat import ChatCompletionChunk

    text = ""
    entries: list[dict[str, Any]] = []
    calls: list[Any] = []
    for chunk in llm.create_chat_completion(
        **{"messages": ASK, **GREEDY, **kwargs, "stream": True}
    ):
        ChatCompletionChunk.model_validate(chunk)
        choice = chunk["choices"][0]
        text += choice["delta"].get("content") or ""
        calls += choice["delta"].get("tool_calls") or []
        if choice["logprobs"] is not None:
            entries += choice["logprobs"]["content"]
    return text, entries, calls


def answer_of(content: str, schema: dict[str, Any]) -> Any:
    """The bare JSON answer, checked against ``schema`` (no fences, nothing around it)."""
    value = json.loads(content)
    assert schema_errors(value, schema) == [], content
    return value


@pytest.mark.parametrize("fmt", [f[1] for f in FORMATS], ids=[f[0] for f in FORMATS])
def test_response_format_gives_bare_schema_json(qwen: Any, fmt: dict[str, Any]) -> None:
    response = complete(qwen, response_format=fmt, max_tokens=64)
    content = response["choices"][0]["message"]["content"]
    schema = fmt.get("schema") or fmt.get("json_schema", {}).get("schema") or {"type": "object"}
    answer_of(content, schema)
    assert response["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("model", ["qwen", "smollm2"])
def test_structured_stream_equals_batch(request: pytest.FixtureRequest, model: str) -> None:
    llm = request.getfixturevalue(model)
    fmt = FORMATS[2][1]
    whole = complete(llm, response_format=fmt, max_tokens=64)["choices"][0]["message"]["content"]
    text, _, _ = stream(llm, response_format=fmt, max_tokens=64)
    assert text == whole
    answer_of(text, CITY)


def test_tools_and_response_format_call_or_answer(qwen: Any) -> None:
    """OpenAI's semantics: a tool may be called; a reply that is no call follows the schema."""
    fmt = FORMATS[2][1]
    called = complete(
        qwen,
        messages=[{"role": "user", "content": "What's the weather in Paris right now?"}],
        tools=[WEATHER],
        response_format=fmt,
    )["choices"][0]
    answered = complete(qwen, tools=[WEATHER], response_format=fmt, max_tokens=64)["choices"][0]
    for choice in (called, answered):
        calls = choice["message"].get("tool_calls")
        if calls:
            assert [c["function"]["name"] for c in calls] == ["get_weather"]
            assert choice["finish_reason"] == "tool_calls"
        else:
            answer_of(choice["message"]["content"], CITY)
    assert called["message"].get("tool_calls"), "the weather question should call the tool"


def test_tool_choice_none_with_response_format_answers(qwen: Any) -> None:
    choice = complete(
        qwen,
        messages=[{"role": "user", "content": "What's the weather in Paris? Answer as JSON."}],
        tools=[WEATHER],
        tool_choice="none",
        response_format=FORMATS[2][1],
        max_tokens=64,
    )["choices"][0]
    assert "tool_calls" not in choice["message"]
    answer_of(choice["message"]["content"], CITY)


def test_unsupported_schema_raises_before_decoding(qwen: Any) -> None:
    handler = qwen.chat_handler
    before = handler.last_result
    # multipleOf compiles now; lookaround is outside the regex subset a grammar can express
    bad = {"type": "json_object", "schema": {"type": "string", "pattern": "^(?!a)"}}
    with pytest.raises(UnsupportedSchemaError) as err:
        qwen.create_chat_completion(messages=ASK, response_format=bad, **GREEDY)
    assert err.value.pointer == "/pattern"
    assert handler.last_result is before, "nothing may be decoded"


def _check_entries(entries: list[dict[str, Any]], k: int) -> None:
    for e in entries:
        assert e["logprob"] <= 0.0 and bytes(e["bytes"]).decode("utf-8", "replace") == e["token"]
        tops = [t["logprob"] for t in e["top_logprobs"]]
        assert len(tops) == k and tops == sorted(tops, reverse=True)
        assert e["logprob"] <= tops[0] + 1e-6


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"tools": [WEATHER], "tool_choice": "required"}],
    ids=["content-turn", "tool-call-turn"],
)
def test_logprobs_in_batch_and_stream(qwen: Any, kwargs: dict[str, Any]) -> None:
    # both from an empty KV cache: a prompt decoded in other batches gives slightly other logits
    qwen.reset()
    response = complete(qwen, logprobs=True, top_logprobs=3, max_tokens=24, **kwargs)
    entries = response["choices"][0]["logprobs"]["content"]
    assert len(entries) == response["usage"]["completion_tokens"] > 0
    _check_entries(entries, 3)
    qwen.reset()
    _, streamed, _ = stream(qwen, logprobs=True, top_logprobs=3, max_tokens=24, **kwargs)
    assert [e["token"] for e in streamed] == [e["token"] for e in entries]
    assert [e["logprob"] for e in streamed] == pytest.approx([e["logprob"] for e in entries])


def test_greedy_free_token_is_its_own_top_logprob(qwen: Any) -> None:
    entries = complete(qwen, logprobs=True, top_logprobs=1, max_tokens=8)["choices"][0]["logprobs"]
    for e in entries["content"]:
        assert e["top_logprobs"][0]["token"] == e["token"]
        assert e["top_logprobs"][0]["logprob"] == pytest.approx(e["logprob"])


def test_no_logprobs_unless_asked(qwen: Any) -> None:
    assert complete(qwen, max_tokens=4)["choices"][0]["logprobs"] is None


def test_logits_processor_applies_and_grammar_wins(qwen: Any) -> None:
    """A processor that pushes end-of-generation stops a free reply at once; under a forced call
    the grammar masks what the processor favours until the call is complete."""
    eos = int(qwen.token_eos())
    seen: list[int] = []

    def push_eos(input_ids: Any, scores: Any) -> Any:
        seen.append(len(input_ids))
        out = np.array(scores, copy=True)
        out[eos] += 1000.0
        return out

    free = complete(qwen, logits_processor=push_eos)
    assert free["usage"]["completion_tokens"] == 0
    assert seen == [free["usage"]["prompt_tokens"]]
    forced = complete(qwen, logits_processor=push_eos, tools=[WEATHER], tool_choice="required")
    calls = forced["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert json.loads(calls[0]["function"]["arguments"])["city"] is not None


def test_named_choice_yields_exactly_one_call(smollm2: Any) -> None:
    """SmolLM2 repeated a named call when the forced grammar allowed several."""
    tools = [WEATHER] + [
        {"type": "function", "function": {"name": f"tool_{i}", "parameters": {"type": "object"}}}
        for i in range(4)
    ]
    for choice in ("tool_3", {"type": "function", "function": {"name": "tool_3"}}):
        msg = complete(smollm2, tools=tools, tool_choice=choice, max_tokens=80)["choices"][0]
        assert [c["function"]["name"] for c in msg["message"]["tool_calls"]] == ["tool_3"]
