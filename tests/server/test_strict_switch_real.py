"""The llama-server engine's strict switch against a real llama-server (Qwen2.5-Coder-0.5B):
a switched greedy reply equals the unswitched one, and its usage counts as one request's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldialect import ServerClient
from tooldialect.engine.llama_server import LlamaServer, find_llama_server
from tooldialect.engine.llama_server.launch import BUILD_HINT

pytestmark = pytest.mark.model

ARGS = ["-t", "1", "-c", "4096", "--parallel", "1"]


def _tool(name: str, key: str) -> dict[str, Any]:
    params = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": params},
    }


TOOLS = [_tool("get_weather", "city"), _tool("get_time", "timezone")]
ASKS = [
    [{"role": "user", "content": "What is the weather in Paris right now?"}],
    [{"role": "user", "content": "What time is it in Tokyo? Use the tool."}],
]


@pytest.fixture(scope="module")
def server(qwen_path: Path) -> Iterator[LlamaServer]:
    binary = find_llama_server()
    if binary is None:
        pytest.skip(f"no llama-server binary; build or copy one with `{BUILD_HINT}`")
    with LlamaServer(qwen_path, binary=binary, args=ARGS) as srv:
        yield srv


def _without_ids(out: Any) -> Any:
    """The choices with each call's id (random per reply) left out."""
    choices = [dict(c, message=dict(c["message"])) for c in out["choices"]]
    for c in choices:
        calls = c["message"].get("tool_calls") or []
        c["message"]["tool_calls"] = [{k: v for k, v in t.items() if k != "id"} for t in calls]
    return choices


def _complete(client: ServerClient, messages: Any, **kw: Any) -> Any:
    request: dict[str, Any] = {"temperature": 0, "max_tokens": 80, **kw}
    done = client.complete(messages=messages, tools=TOOLS, tool_choice="auto", **request)
    assert isinstance(done.response, dict)
    return done


def _reply(client: ServerClient, messages: Any, **kw: Any) -> Any:
    return _complete(client, messages, **kw).response


# The switch is what these tests check, so steering is off in them: steered, Qwen's fenced
# call is taken back at its capture and rewritten under a forced grammar, which needs no switch.
UNSTEERED: dict[str, Any] = {"steer_calls": False}


@pytest.mark.parametrize("ask", range(len(ASKS)))
def test_a_switched_reply_equals_the_unswitched_one(server: LlamaServer, ask: int) -> None:
    plain = ServerClient(server.url, **UNSTEERED)
    switched = ServerClient(server.url, strict_switch=True, **UNSTEERED)
    messages = ASKS[ask]
    _reply(plain, messages)  # both from a slot that holds the prompt (cold prefill logits differ)
    plain_done = _complete(plain, messages)
    switched_done = _complete(switched, messages)
    expected, got = plain_done.response, switched_done.response
    assert switched.engine.switches == 1, "the trigger fired and the strict form took over"
    assert expected["choices"][0]["message"].get("tool_calls"), "Qwen calls here"
    assert _without_ids(got) == _without_ids(expected)
    assert got["usage"] == expected["usage"]
    assert switched_done.result.text == plain_done.result.text


@pytest.mark.parametrize("ask", range(len(ASKS)))
def test_a_steered_reply_is_the_same_with_the_switch(server: LlamaServer, ask: int) -> None:
    plain, switched = ServerClient(server.url), ServerClient(server.url, strict_switch=True)
    _reply(plain, ASKS[ask])
    expected, got = _reply(plain, ASKS[ask]), _reply(switched, ASKS[ask])
    assert expected["choices"][0]["message"].get("tool_calls"), "Qwen calls here"
    assert _without_ids(got) == _without_ids(expected)


def test_max_tokens_is_shared_across_the_two_requests(server: LlamaServer) -> None:
    plain = ServerClient(server.url, **UNSTEERED)
    switched = ServerClient(server.url, strict_switch=True, **UNSTEERED)
    _reply(plain, ASKS[0], max_tokens=12)
    expected = _reply(plain, ASKS[0], max_tokens=12)
    got = _reply(switched, ASKS[0], max_tokens=12)
    assert switched.engine.switches == 1
    assert got["usage"]["completion_tokens"] == expected["usage"]["completion_tokens"] == 12
    assert got["choices"][0]["finish_reason"] == expected["choices"][0]["finish_reason"]
    assert _without_ids(got) == _without_ids(expected)


def test_logprobs_are_not_switched(server: LlamaServer) -> None:
    switched = ServerClient(server.url, strict_switch=True)
    out = _reply(switched, ASKS[0], logprobs=True, top_logprobs=1)
    assert switched.engine.switches == 0
    assert out["choices"][0]["logprobs"]["content"]
