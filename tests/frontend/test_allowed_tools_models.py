"""``allowed_tools`` on a real model, through both engines: asked about the weather with only
``get_time`` allowed, Qwen2.5-Coder-0.5B calls ``get_time`` (unrestricted, it calls
``get_weather``), and the prompt is the same as without the subset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldialect import ServerClient, ToolChatHandler
from tooldialect.engine.llama_server import LlamaServer, find_llama_server
from tooldialect.engine.llama_server.launch import BUILD_HINT

pytestmark = pytest.mark.model

# not tool_defs.WEATHER: strict, and this description; the replies these tests expect were
# measured with this prompt
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "strict": True,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a timezone",
            "parameters": {
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"],
            },
        },
    },
]
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]
ONLY_TIME = {
    "type": "allowed_tools",
    "allowed_tools": {
        "mode": "required",
        "tools": [{"type": "function", "function": {"name": "get_time"}}],
    },
}


def names(reply: Any) -> list[str]:
    assert isinstance(reply, dict)
    calls = reply["choices"][0]["message"].get("tool_calls") or []
    for c in calls:
        json.loads(c["function"]["arguments"])
    return [c["function"]["name"] for c in calls]


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(
        str(qwen_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=ToolChatHandler()
    )
    yield llm
    llm.close()


def test_in_process_handler(qwen: Any) -> None:
    handler = qwen.chat_handler
    plain = handler.prepare(llama=qwen, messages=ASK, tools=TOOLS, tool_choice="required")
    subset = handler.prepare(llama=qwen, messages=ASK, tools=TOOLS, tool_choice=ONLY_TIME)
    assert plain.prompt == subset.prompt
    free = qwen.create_chat_completion(
        messages=ASK, tools=TOOLS, tool_choice="required", temperature=0, max_tokens=40
    )
    assert names(free)[:1] == ["get_weather"]  # what the subset has to overrule
    reply = handler(
        llama=qwen, messages=ASK, tools=TOOLS, tool_choice=ONLY_TIME, temperature=0, max_tokens=40
    )
    assert names(reply) and set(names(reply)) == {"get_time"}


def test_server_engine(qwen_path: Path) -> None:
    binary = find_llama_server()
    if binary is None:
        pytest.skip(f"no llama-server binary; build or copy one with `{BUILD_HINT}`")
    with LlamaServer(qwen_path, binary=binary, args=["-t", "1", "-c", "2048"]) as server:
        client = ServerClient(server.url)
        reply = client.create_chat_completion(
            messages=ASK, tools=TOOLS, tool_choice=ONLY_TIME, temperature=0, max_tokens=40
        )
    assert names(reply) and set(names(reply)) == {"get_time"}
