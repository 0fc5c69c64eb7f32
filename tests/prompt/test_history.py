"""ReplyMemory: earlier replies re-render as the model wrote them, so the KV cache stays valid."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldialect import ToolChatHandler
from tooldialect.prompt.history import ReplyMemory

CALL: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}
RAW = '{"name": "get_weather", "arguments": {"city":"Paris"}}'


@pytest.mark.parametrize(
    ("sent_back", "restored"),
    [
        (CALL, True),
        # arguments as a mapping, another id: the same call as far as the model is concerned
        (
            {
                **CALL,
                "tool_calls": [
                    {
                        **CALL["tool_calls"][0],
                        "id": "x",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                    }
                ],
            },
            True,
        ),
        (
            {
                **CALL,
                "tool_calls": [
                    {
                        **CALL["tool_calls"][0],
                        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                    }
                ],
            },
            False,
        ),
        ({**CALL, "reasoning_content": "hmm"}, False),
    ],
    ids=["same", "mapping-arguments-other-id", "edited-arguments", "with-reasoning"],
)
def test_restore_matches_by_content_and_calls(sent_back: Any, restored: bool) -> None:
    memory = ReplyMemory()
    memory.remember(CALL, RAW)
    user = {"role": "user", "content": "Weather in Paris?"}
    out = memory.restore(
        [user, sent_back, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    )
    if restored:
        assert out is not None and out[1] == {"role": "assistant", "content": RAW}
        assert out[0] is user and out[2]["role"] == "tool"
    else:
        assert out is None


def test_memory_is_bounded() -> None:
    memory = ReplyMemory(capacity=2)
    for i in range(3):
        memory.remember({"role": "assistant", "content": f"reply {i}"}, f"raw {i}")
    assert memory.restore([{"role": "assistant", "content": "reply 0"}]) is None
    assert memory.restore([{"role": "assistant", "content": "reply 2"}]) == [
        {"role": "assistant", "content": "raw 2"}
    ]


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module", params=[False, True], ids=["as-written", "steered"])
def qwen(qwen_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Any, bool]]:
    """A Qwen2.5-Coder-0.5B ``Llama``, and whether its handler steers calls."""
    from llama_cpp import Llama

    handler = ToolChatHandler(steer_calls=request.param)
    llm = Llama(str(qwen_path), n_threads=2, n_ctx=4096, verbose=False, chat_handler=handler)
    yield llm, request.param
    llm.close()


@pytest.mark.model
def test_second_turn_decodes_only_the_new_suffix(qwen: tuple[Any, bool]) -> None:
    """Qwen2.5 writes its auto call as fenced JSON; turn 2 must still reuse the cache. As
    written, the memory re-renders the fence, so only the new suffix is decoded. Steered, the
    call was rewritten as ``<tool_call>``, which this model spells in pieces under the grammar
    and the next prompt tokenizes whole: the reply is decoded again once, never more (the
    llama-server engine does the same, as both tokenize the prompt text canonically)."""
    llm, steered = qwen
    handler = llm.chat_handler
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What's the weather in Paris?"}]
    first = llm.create_chat_completion(
        messages=messages, tools=[WEATHER], tool_choice="auto", temperature=0, max_tokens=60
    )
    turn1 = handler.last_result
    message = first["choices"][0]["message"]
    assert message.get("tool_calls"), message
    messages += [
        message,
        {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "18 C, sunny"},
    ]
    llm.create_chat_completion(
        messages=messages, tools=[WEATHER], tool_choice="auto", temperature=0, max_tokens=8
    )
    turn2 = handler.last_result
    # what the KV cache holds after turn 1: its prompt and the reply's tokens (not the ones
    # steering took back, the fenced start)
    reply = turn1.completion_tokens - turn1.discarded_tokens
    new_suffix = turn2.prompt_tokens - (turn1.prompt_tokens + reply)
    assert new_suffix > 0
    excess = turn2.last_prompt_eval_tokens - new_suffix
    bar = reply + 5 if steered else 5
    assert excess <= bar, (turn2.last_prompt_eval_tokens, new_suffix, turn1.text)
