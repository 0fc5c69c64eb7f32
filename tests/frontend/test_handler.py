"""ToolChatHandler on real models: OpenAI shapes, forced and automatic calls, streaming, KV reuse,
errors that leave the process running, registration and missing templates."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import tooldialect
from models.schema_check import schema_errors
from tool_defs import WEATHER_UNITS as WEATHER
from tooldialect.errors import (
    ContextOverflowError,
    MissingTemplateError,
    TemplateError,
    ToolDialectError,
    ToolSpecError,
    UnsupportedSchemaError,
)
from tooldialect.handler import ToolChatHandler, register

TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Get the local time in a timezone",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}, "hours24": {"type": "boolean"}},
            "required": ["timezone"],
        },
    },
}
TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
PROMPTS = [
    "What's the weather in Paris?",
    "Is it raining in London right now?",
    "How hot is it in Cairo?",
    "What time is it in Tokyo?",
    "Tell me the weather for Berlin in fahrenheit.",
    "Do I need an umbrella in Seattle today?",
    "What is the current time in New York?",
    "Weather report for Sydney, please.",
    "Is it snowing in Oslo?",
    "What's the time in UTC?",
]
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 40}


def load(path: Path, **options: Any) -> Any:
    from llama_cpp import Llama

    return Llama(str(path), n_threads=2, n_ctx=4096, verbose=False, **options)


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    llm = load(qwen_path, chat_handler=ToolChatHandler())
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def smollm2(smollm2_path: Path) -> Iterator[Any]:
    # one call per reply: the 135M model otherwise repeats its call until max_tokens
    llm = load(smollm2_path, chat_handler=ToolChatHandler(parallel_tool_calls=False))
    yield llm
    llm.close()


@pytest.fixture(params=["qwen", "smollm2"])
def llm(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def valid_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message's calls, each checked against its tool's schema."""
    calls = message.get("tool_calls") or []
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        assert schema_errors(args, SCHEMAS[call["function"]["name"]]) == [], call
    return calls


def collect(chunks: Iterator[dict[str, Any]]) -> tuple[dict[str, Any], str | None, list[Any]]:
    """Rebuild a message from stream chunks (validating each with openai's types)."""
    from openai.types.chat import ChatCompletionChunk

    message: dict[str, Any] = {"role": None, "content": None}
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    seen = []
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
        seen.append(chunk)
        choice = chunk["choices"][0]
        delta = choice["delta"]
        finish = choice["finish_reason"] or finish
        if "role" in delta:
            message["role"] = delta["role"]
        if delta.get("content"):
            message["content"] = (message["content"] or "") + delta["content"]
        for tc in delta.get("tool_calls") or []:
            slot = calls.setdefault(tc["index"], {"function": {"arguments": ""}})
            if "id" in tc:
                slot.update(id=tc["id"], type=tc["type"], name=tc["function"]["name"])
            slot["function"]["arguments"] += tc["function"].get("arguments", "")
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["function"]["arguments"]},
            }
            for _, c in sorted(calls.items())
        ]
    return message, finish, seen


def pairs(message: dict[str, Any]) -> list[tuple[str, str]]:
    calls = message.get("tool_calls") or []
    return [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


def chat(llm: Any, prompt: str, **kwargs: Any) -> dict[str, Any]:
    from openai.types.chat import ChatCompletion

    response: dict[str, Any] = llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}], **{"tools": TOOLS, **GREEDY, **kwargs}
    )
    ChatCompletion.model_validate(response)
    return response


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_required_always_calls_with_valid_arguments(llm: Any, stream: bool) -> None:
    made = 0
    for prompt in PROMPTS:
        if stream:
            message, finish, _ = collect(
                llm.create_chat_completion(
                    messages=[{"role": "user", "content": prompt}],
                    tools=TOOLS,
                    tool_choice="required",
                    stream=True,
                    **GREEDY,
                )
            )
        else:
            choice = chat(llm, prompt, tool_choice="required")["choices"][0]
            message, finish = choice["message"], choice["finish_reason"]
        calls = valid_calls(message)
        assert finish == "tool_calls"
        made += bool(calls)
    assert made == len(PROMPTS)


@pytest.mark.model
@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_stream_equals_non_stream(llm: Any, tool_choice: str) -> None:
    prompt = PROMPTS[0]
    whole = chat(llm, prompt, tool_choice=tool_choice)["choices"][0]
    streamed, finish, chunks = collect(
        llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            tools=TOOLS,
            tool_choice=tool_choice,
            stream=True,
            **GREEDY,
        )
    )
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert finish == whole["finish_reason"]
    expected = whole["message"]
    assert streamed["content"] == expected["content"]
    assert pairs(streamed) == pairs(expected)


@pytest.mark.model
def test_auto_calls_are_valid_and_text_stays_free(qwen: Any) -> None:
    handler = qwen.chat_handler
    called = 0
    for prompt in [PROMPTS[1], "Say hello in French.", PROMPTS[3]]:
        message = chat(qwen, prompt, tool_choice="auto")["choices"][0]["message"]
        raw = handler.last_result.text
        calls = valid_calls(message)
        called += bool(calls)
        if not calls:
            assert message["content"] == raw.strip()
        elif "<tool_call>" in raw:
            before = raw[: raw.index("<tool_call>")].strip()
            assert (message["content"] or "") == before
    assert called >= 1


@pytest.mark.model
def test_named_choice_calls_that_tool(smollm2: Any) -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    message = chat(smollm2, PROMPTS[0], tool_choice=named)["choices"][0]["message"]
    assert [c["function"]["name"] for c in valid_calls(message)] == ["get_time"]


@pytest.mark.model
def test_second_turn_reuses_the_kv_cache(qwen: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What's the weather in Lima?"}]
    first = qwen.create_chat_completion(
        messages=messages, tools=TOOLS, tool_choice="required", **GREEDY
    )
    call = first["choices"][0]["message"]["tool_calls"][0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": '{"sky": "clear", "temp_c": 19}'},
    ]
    second = qwen.create_chat_completion(messages=messages, tools=TOOLS, **GREEDY)
    result = qwen.chat_handler.last_result
    usage = second["usage"]
    # the finish reason the reply earns (the model may call again or answer; either is fine)
    calls = second["choices"][0]["message"].get("tool_calls")
    earned = "length" if result.finish_reason == "length" else "tool_calls" if calls else "stop"
    assert second["choices"][0]["finish_reason"] == earned
    assert result.prompt_tokens == usage["prompt_tokens"]
    assert result.last_prompt_eval_tokens < first["usage"]["prompt_tokens"] / 2
    assert usage["prompt_tokens_details"]["cached_tokens"] >= first["usage"]["prompt_tokens"] - 1


BAD_INPUTS = [
    ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, ToolSpecError),
    (
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
        ToolSpecError,
    ),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, ToolSpecError),
    (
        {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"x": {"type": "string", "pattern": "^(?!a)"}},
                        },
                    },
                }
            ],
            "tool_choice": "required",
        },
        UnsupportedSchemaError,
    ),
    ({"messages": [{"role": "user", "content": "word " * 5000}]}, ContextOverflowError),
]


@pytest.mark.model
@pytest.mark.parametrize(
    ("kwargs", "error"),
    BAD_INPUTS,
    ids=["tool-name", "unknown-choice", "choice-mode", "lookaround", "n_ctx"],
)
def test_bad_input_raises_and_process_continues(
    smollm2: Any, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], **kwargs}
    # each is also the ValueError llama-cpp-python's own callers catch
    with pytest.raises(ValueError) as caught:
        smollm2.create_chat_completion(**request, max_tokens=4)
    assert isinstance(caught.value, error) and isinstance(caught.value, ToolDialectError)
    ok = smollm2.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=4)
    assert ok["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.model
def test_template_that_raises_is_template_error(smollm2_path: Path) -> None:
    broken = ToolChatHandler(chat_template="{{ raise_exception('no') }}")
    llm = load(smollm2_path, chat_handler=broken)
    with pytest.raises(TemplateError, match="no"):
        llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}])
    llm.close()


@pytest.mark.model
def test_register_makes_chat_format_work(smollm2_path: Path) -> None:
    handler = register()
    assert register() is handler and tooldialect.register is register
    llm = load(smollm2_path, chat_format="tooldialect")
    response = llm.create_chat_completion(
        messages=[{"role": "user", "content": PROMPTS[0]}],
        tools=[WEATHER],
        tool_choice="required",
        **GREEDY,
    )
    assert valid_calls(response["choices"][0]["message"])
    # create_chat_completion passes no extra keywords; calling the handler directly does
    direct = handler(
        llama=llm,
        messages=[{"role": "user", "content": PROMPTS[0]}],
        tools=[WEATHER],
        tool_choice="required",
        parallel_tool_calls=False,
        chat_template_kwargs={"x": 1},
        **GREEDY,
    )
    assert isinstance(direct, dict)
    assert len(valid_calls(direct["choices"][0]["message"])) == 1
    assert handler.setup(llm).spec.polyfill is not None
    llm.close()


@pytest.mark.model
def test_missing_template_uses_architecture_fallback(gemma3_path: Path) -> None:
    llm = load(gemma3_path)
    with pytest.warns(UserWarning, match="gemma3.jinja"):
        setup = ToolChatHandler().setup(llm)
    assert setup.template_origin == "fallback:gemma3.jinja"
    assert setup.template.render([{"role": "user", "content": "hi"}]).endswith(
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    )
    with pytest.raises(MissingTemplateError, match=r"ToolChatHandler\(chat_template="):
        ToolChatHandler(fallback=False).setup(llm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mine = ToolChatHandler(chat_template="{{ messages[0].content }}").setup(llm)
    assert mine.template_origin == "user"
    # the fallback template carries a polyfilled call through the base model too
    llm.chat_handler = ToolChatHandler(parallel_tool_calls=False)
    with pytest.warns(UserWarning):
        response = chat(llm, PROMPTS[0], tools=[WEATHER], tool_choice="required")
    assert valid_calls(response["choices"][0]["message"])
    llm.close()


def test_repr_names_the_dialect() -> None:
    assert repr(ToolChatHandler(dialect="hermes")) == "ToolChatHandler(dialect='hermes')"
