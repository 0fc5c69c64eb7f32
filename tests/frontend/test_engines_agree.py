"""One front end, two engines: for the same request, ToolChatHandler (in-process engine, here the
scripted one) and ServerClient (the llama-server engine, here a scripted server) hand their
engine the identical prompt, grammar, triggers and stops, and shape the identical reply into
identical OpenAI dicts, batch and stream. Model-free."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import read_template
from fake_engine import fake_handler
from server.fake import FakeServer
from tool_defs import WEATHER_DAYS as WEATHER
from tooldialect import ServerClient
from tooldialect.engine.base import Generation, GenerationRequest

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
ASK = [{"role": "user", "content": "Weather in Paris, and for three days?"}]
REPLY = [
    "Checking. ",
    "<tool_call>",
    '\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
    "\n</tool_call>",
    "\n<tool_call>",
    '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    "\n</tool_call>",
]
REQUESTS: list[dict[str, Any]] = [
    {"tools": [WEATHER]},
    {"tools": [WEATHER], "tool_choice": "required", "parallel_tool_calls": False},
    {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    {"tools": [WEATHER], "tool_choice": "none", "stop": ["STOP"]},
    {"response_format": {"type": "json_object"}, "max_tokens": 4},
]


def _anonymous(value: Any) -> Any:
    """``value`` without what is random or per-run by design (ids, timestamps)."""
    if isinstance(value, dict):
        return {k: ("<id>" if k in ("id", "created") else _anonymous(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_anonymous(v) for v in value]
    return value


def _engines() -> Iterator[tuple[Any, Any, Any, FakeServer, list[GenerationRequest]]]:
    handler, llama, engine = fake_handler(TEMPLATE, REPLY)
    with FakeServer(template=TEMPLATE, model=llama.model_path) as srv:
        srv.behaviour.reply = list(REPLY)
        client = ServerClient(srv.url)
        sent: list[GenerationRequest] = []
        run = client.engine.run

        def recording(request: GenerationRequest) -> Generation:
            sent.append(request)
            return run(request)

        client.engine.run = recording  # type: ignore[method-assign]
        yield handler, llama, client, srv, sent
        del engine


def _pair(request: dict[str, Any], stream: bool) -> tuple[Any, Any]:
    for handler, llama, client, _, _ in _engines():
        local = handler(llama=llama, messages=ASK, stream=stream, **request)
        remote = client.create_chat_completion(messages=ASK, stream=stream, **request)
        if stream:
            return list(local), list(remote)
        return local, remote
    raise AssertionError("unreachable")


@pytest.mark.parametrize("request_", REQUESTS, ids=["auto", "one", "named", "none", "json"])
def test_both_engines_get_the_same_generation_request(request_: dict[str, Any]) -> None:
    for handler, llama, client, srv, sent in _engines():
        handler(llama=llama, messages=ASK, **request_)
        client.create_chat_completion(messages=ASK, **request_)
        local = handler.setup(llama).engine.jobs[-1]
        (remote,) = sent
        assert remote.prompt == local.prompt
        assert (remote.grammar is None) is (local.grammar is None)
        if local.grammar is not None and remote.grammar is not None:
            assert remote.grammar.gbnf == local.grammar.gbnf
            assert remote.grammar.lazy == local.grammar.lazy
        assert remote.triggers == local.triggers
        assert remote.stop == local.stop and remote.markers == local.markers
        assert remote.max_tokens == local.max_tokens and remote.bos == local.bos
        # and the wire carries exactly those: prompt, grammar, triggers, stops
        body = srv.requests[-1]
        assert body["prompt"] == local.prompt
        assert body.get("grammar") == (local.grammar.gbnf if local.grammar else None)
        if local.grammar is not None and local.grammar.lazy:
            triggers = [t["value"] for t in body["grammar_triggers"]]
            assert triggers == [*local.triggers.words, *local.triggers.patterns]
        assert body["stop"] == list(dict.fromkeys(local.stop))


@pytest.mark.parametrize("request_", REQUESTS, ids=["auto", "one", "named", "none", "json"])
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_both_engines_shape_the_same_reply(request_: dict[str, Any], stream: bool) -> None:
    local, remote = _pair(request_, stream)
    assert _anonymous(local) == _anonymous(remote)
    if not stream and request_.get("tool_choice") != "none" and "tools" in request_:
        calls = local["choices"][0]["message"]["tool_calls"]
        assert [json.loads(c["function"]["arguments"])["city"] for c in calls] == ["Paris", "Paris"]
