"""``/v1/messages`` without a model: request conversion, the event stream and its reassembly,
and the endpoint on a fake handler (real ASGI, real chunk shapes from the parser), driven by
Anthropic's own SDK where it is installed."""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace
from typing import Any

import pytest

from endpoint_fakes import REPLY, endpoint_client, fake_lease, handler_chunks, sse_events
from tooldialect.apps.messages import (
    MessagesEndpoint,
    MessagesError,
    MessageStream,
    count_request,
    messages_request,
    reassemble,
)
from tooldialect.engine.base import GenerationResult
from tooldialect.errors import ToolSpecError
from tooldialect.frontend.pipeline import Completed

HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
# Anthropic's tool shape, the input of the conversions under test
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"name": "get_weather", "description": "Weather in a city", "input_schema": SCHEMA}
TIME = {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}
BASE: dict[str, Any] = {"model": "m", "max_tokens": 50}

# ---- request conversion ------------------------------------------------------------------------


def test_a_whole_conversation_converts() -> None:
    req = messages_request(
        {
            **BASE,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "x"}}],
            "messages": [
                {"role": "user", "content": "Weather in Paris and Lyon?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Two cities.", "signature": "s"},
                        {"type": "text", "text": "Checking."},
                        {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}},
                        {
                            "type": "tool_use",
                            "id": "t2",
                            "name": "get_weather",
                            "input": {"city": "Lyon"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "sun"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "t2",
                            "content": [{"type": "text", "text": "no such city"}],
                            "is_error": True,
                        },
                        {"type": "text", "text": "And?"},
                    ],
                },
            ],
            "tools": [WEATHER, {**TIME, "type": "custom", "cache_control": {"type": "x"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "stop_sequences": ["END"],
            "temperature": 0,
            "top_p": 0.9,
            "top_k": 20,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "metadata": {"user_id": "u"},
            "stream": True,
        }
    )
    assert req.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "Two cities.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                },
                {
                    "id": "t2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "sun"},
        {"role": "tool", "tool_call_id": "t2", "content": "Error: no such city"},
        {"role": "user", "content": "And?"},
    ]
    assert req.kwargs == {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": SCHEMA,
                    "description": "Weather in a city",
                },
            },
            {
                "type": "function",
                "function": {"name": "get_time", "parameters": TIME["input_schema"]},
            },
        ],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "enable_thinking": True,
        "thinking": True,
        "max_tokens": 50,
        "stop": ["END"],
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
    }
    assert (req.model, req.stream, req.stop_sequences) == ("m", True, ("END",))


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "none"}, {"tool_choice": "none"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        (
            {"type": "tool", "name": "get_time", "disable_parallel_tool_use": False},
            {
                "tool_choice": {"type": "function", "function": {"name": "get_time"}},
                "parallel_tool_calls": True,
            },
        ),
    ],
)
def test_tool_choice_forms(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    body = {**BASE, "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER, TIME]}
    kwargs = messages_request({**body, "tool_choice": choice}).kwargs
    assert {k: kwargs[k] for k in expected} == expected


def test_thinking_disabled_and_adaptive() -> None:
    body = {**BASE, "messages": [{"role": "user", "content": "hi"}]}
    off = messages_request({**body, "thinking": {"type": "disabled"}}).kwargs
    assert (off["enable_thinking"], off["thinking"]) == (False, False)
    assert (
        "enable_thinking" not in messages_request({**body, "thinking": {"type": "adaptive"}}).kwargs
    )


USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "m", "messages": USER}, "max_tokens: an integer >= 1 is required, got None"),
        ({**BASE, "max_tokens": 0, "messages": USER}, "max_tokens"),
        ({**BASE, "max_tokens": True, "messages": USER}, "max_tokens"),
        ({"max_tokens": 5, "messages": USER}, "model: a string is required"),
        ({**BASE, "messages": []}, "messages: a non-empty list"),
        ({**BASE, "messages": USER, "temprature": 0.5}, "did you mean 'temperature'"),
        ({**BASE, "messages": USER, "temperature": -1}, "temperature: must be a number from 0"),
        ({**BASE, "messages": USER, "temperature": float("nan")}, "temperature"),
        ({**BASE, "messages": USER, "top_p": 5}, "top_p"),
        ({**BASE, "messages": USER, "top_k": -1}, "top_k"),
        ({**BASE, "messages": USER, "stop_sequences": "END"}, "stop_sequences"),
        ({**BASE, "messages": USER, "stream": "yes"}, "stream: must be a boolean"),
        ({**BASE, "messages": [{"role": "system", "content": "x"}]}, "messages.0.role"),
        (
            {**BASE, "messages": [*USER, {"role": "assistant", "content": "The answer is"}]},
            "prefill",
        ),
        (
            {
                **BASE,
                "messages": [
                    {"role": "user", "content": [{"type": "image", "source": {"type": "base64"}}]}
                ],
            },
            "messages.0.content.0: a 'image' block is not served",
        ),
        (
            {**BASE, "messages": USER, "tools": [{"type": "web_search_20250305", "name": "w"}]},
            "tools.0: a tool of type 'web_search_20250305' runs on Anthropic's side",
        ),
        ({**BASE, "messages": USER, "tools": [{"name": "x"}]}, "tools.0.input_schema"),
        ({**BASE, "messages": USER, "tool_choice": {"type": "tool"}}, "tool_choice.name"),
        ({**BASE, "messages": USER, "tool_choice": "auto"}, "tool_choice: 'auto' is not"),
        ({**BASE, "messages": USER, "thinking": {"type": "enabled"}}, "budget_tokens"),
        (
            {
                **BASE,
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}
                ],
            },
            "messages.0.content.0.tool_use_id",
        ),
        (
            {
                **BASE,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}],
                    },
                    *USER,
                ],
            },
            "messages.0.content.0.input: must be an object",
        ),
        ([1, 2], "the request body must be a JSON object"),
    ],
)
def test_unservable_requests_say_why(body: Any, words: str) -> None:
    with pytest.raises(MessagesError) as err:
        messages_request(body)
    assert words in str(err.value)
    payload = err.value.payload()
    assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
    assert err.value.status == 400


def test_count_request_takes_no_sampling_fields() -> None:
    req = count_request({"model": "m", "messages": USER, "system": "s", "tools": [WEATHER]})
    assert req.messages[0] == {"role": "system", "content": "s"} and "tools" in req.kwargs
    with pytest.raises(MessagesError, match="max_tokens: unknown field"):
        count_request({**BASE, "messages": USER})


# ---- events --------------------------------------------------------------------------------------

CHAT_TOOLS = [
    {"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}}
    for t in (WEATHER, TIME)
]
chunks_for = functools.partial(handler_chunks, tools=CHAT_TOOLS)


def run(
    chunks: list[dict[str, Any]], *, stops: tuple[str, ...] = (), stopped_by: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    stream = MessageStream(model="m", stop_sequences=stops, message_id="msg_1")
    events = stream.run(chunks, stopped_by=lambda: stopped_by)
    return events, stream.message


def test_events_follow_the_messages_sequence() -> None:
    events, message = run(chunks_for(REPLY, 7))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["content"] == [] and events[0]["message"]["stop_reason"] is None
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use", "tool_use"]
    deltas = {e["delta"]["type"] for e in events if e["type"] == "content_block_delta"}
    assert deltas == {"thinking_delta", "text_delta", "input_json_delta"}
    # blocks open and close in turn: a block's deltas come between its start and its stop
    opened: int | None = None
    for e in events:
        if e["type"] == "content_block_start":
            assert opened is None
            opened = e["index"]
        elif e["type"] == "content_block_delta":
            assert e["index"] == opened
        elif e["type"] == "content_block_stop":
            assert e["index"] == opened
            opened = None
    assert opened is None
    thinking, text, weather, time_call = message["content"]
    assert thinking == {"type": "thinking", "thinking": "The user wants weather.", "signature": ""}
    assert text == {"type": "text", "text": "Let me check."}
    assert (weather["name"], weather["input"]) == ("get_weather", {"city": "Paris"})
    assert (time_call["name"], time_call["input"]) == ("get_time", {})
    assert weather["id"] != time_call["id"]
    assert message["stop_reason"] == "tool_use" and message["stop_sequence"] is None
    assert message["usage"] == {
        "input_tokens": 6,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 4,
    }


@pytest.mark.parametrize("size", [1, 3, 11, len(REPLY)])
def test_stream_reassembles_into_the_batch_response(size: int) -> None:
    _, batch = run(chunks_for(REPLY, len(REPLY)))
    events, message = run(chunks_for(REPLY, size))
    assert reassemble(events) == message
    assert stable(message) == stable(batch)  # whatever the chunking (call ids are drawn anew)


def stable(message: dict[str, Any]) -> dict[str, Any]:
    """The message without its generated ids."""
    out: dict[str, Any] = json.loads(json.dumps(message))
    out.pop("id")
    for block in out["content"]:
        block.pop("id", None)
    return out


@pytest.mark.parametrize(
    ("finish", "stopped_by", "expected"),
    [
        ("stop", None, ("end_turn", None)),
        ("stop", "END", ("stop_sequence", "END")),
        ("stop", "<|im_end|>", ("end_turn", None)),  # the template's marker is not the caller's
        ("length", None, ("max_tokens", None)),
    ],
)
def test_stop_reasons(finish: str, stopped_by: str | None, expected: tuple[str, Any]) -> None:
    events, message = run(
        chunks_for("Hello there.", 4, finish=finish), stops=("END",), stopped_by=stopped_by
    )
    assert (message["stop_reason"], message["stop_sequence"]) == expected
    assert message["content"] == [{"type": "text", "text": "Hello there."}]
    assert events[-2]["delta"] == {"stop_reason": expected[0], "stop_sequence": expected[1]}
    assert reassemble(events) == message


def test_an_empty_reply_still_starts_and_stops() -> None:
    events, message = run([{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}])
    assert [e["type"] for e in events] == ["message_start", "message_delta", "message_stop"]
    assert message["content"] == [] and reassemble(events) == message


def test_reassemble_refuses_events_before_message_start() -> None:
    events, _ = run(chunks_for(REPLY, 5))
    with pytest.raises(MessagesError, match="before message_start"):
        reassemble(events[1:])


# ---- the endpoint, on a fake handler -------------------------------------------------------------


class FakeHandler:
    """Answers like ``ToolChatHandler.complete(stream=True)``: refuses what the library refuses,
    records what it was called with, returns each reply with its own result and counts a
    prompt's words as tokens."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []
        self.engine = SimpleNamespace(tokenize_prompt=lambda prompt: prompt.split())

    def complete(self, *, llama: Any, messages: list[dict[str, Any]], **kw: Any) -> Completed:
        self.calls.append({"messages": messages, **kw})
        if kw.get("tool_choice") == {"type": "function", "function": {"name": "nope"}}:
            raise ToolSpecError("tool_choice names unknown function 'nope'")
        if any("\udcff" in str(m.get("content")) for m in messages):
            raise UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed")
        result = GenerationResult(
            prompt_tokens=10, completion_tokens=5, last_prompt_eval_tokens=6, stopped_by=None
        )
        finish = "tool_calls" if "<tool_call>" in self.reply else "stop"
        chunks: Any = iter(chunks_for(self.reply, 4, finish=finish))
        return Completed(chunks, result)

    def prepare(self, *, llama: Any, messages: list[dict[str, Any]], **kw: Any) -> Any:
        return SimpleNamespace(prompt=" ".join(str(m.get("content")) for m in messages))

    def setup(self, llama: Any) -> Any:
        return SimpleNamespace(engine=self.engine)


@pytest.fixture
def served() -> tuple[Any, FakeHandler]:
    handler = FakeHandler(REPLY)
    endpoint = MessagesEndpoint(
        lease=fake_lease, handler_for=lambda llama: handler, api_key=lambda: "k"
    )
    routes = {"/v1/messages": ["POST"], "/v1/messages/count_tokens": ["POST"]}
    return endpoint_client(endpoint, routes, headers={"x-api-key": "k"}), handler


BODY: dict[str, Any] = {**BASE, "messages": USER, "tools": [WEATHER, TIME]}


def test_endpoint_batch_stream_and_count(served: tuple[Any, FakeHandler]) -> None:
    client, handler = served
    batch = client.post("/v1/messages", json=BODY)
    assert batch.status_code == 200, batch.text
    message = batch.json()
    assert message["id"].startswith("msg_") and message["model"] == "m"
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert handler.calls[-1]["stream"] is True and handler.calls[-1]["max_tokens"] == 50
    streamed = client.post("/v1/messages", json={**BODY, "stream": True})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert "event: message_start\ndata: " in streamed.text
    events = sse_events(streamed.text)
    assert stable(reassemble(events)) == stable(message)
    # message_start already carries the prompt's counts (it waits for the first block)
    assert events[0]["message"]["usage"]["input_tokens"] == 6
    counted = client.post(
        "/v1/messages/count_tokens", json={"model": "m", "messages": USER, "system": "a b"}
    )
    assert counted.status_code == 200 and counted.json() == {"input_tokens": 3}


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"{not json", 400, "not JSON"),
        (b"\xff\xfe", 400, "not JSON"),
        ({"model": "m", "messages": USER}, 400, "max_tokens"),
        (
            {**BODY, "tool_choice": {"type": "tool", "name": "nope"}},
            400,
            "unknown function 'nope'",
        ),
        ({**BASE, "messages": [{"role": "user", "content": "\udcff"}]}, 400, "UnicodeEncodeError"),
    ],
)
def test_endpoint_errors_are_anthropic_shaped(
    served: tuple[Any, FakeHandler], body: Any, status: int, words: str
) -> None:
    client, _ = served
    for stream in (False, True):
        raw = json.dumps({**body, "stream": stream}).encode() if isinstance(body, dict) else body
        reply = client.post("/v1/messages", content=raw)
        assert reply.status_code == status, reply.text
        payload = reply.json()
        assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
        assert words in payload["error"]["message"]


def test_endpoint_wants_the_key(served: tuple[Any, FakeHandler]) -> None:
    client, _ = served
    refused = client.post("/v1/messages", json=BODY, headers={"x-api-key": "no"})
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    bearer = client.post(
        "/v1/messages", json=BODY, headers={"Authorization": "Bearer k", "x-api-key": ""}
    )
    assert bearer.status_code == 200


def test_anthropic_sdk_reads_batch_and_stream(served: tuple[Any, FakeHandler]) -> None:
    """Anthropic's own client, on the fake handler: its types parse the Message, and its
    stream accumulator folds the events into the same Message."""
    anthropic = pytest.importorskip("anthropic", reason=HINT)
    testclient, _ = served
    client = anthropic.Anthropic(
        base_url=str(testclient.base_url), api_key="k", http_client=testclient, max_retries=0
    )
    kwargs: dict[str, Any] = {
        "model": "m",
        "max_tokens": 50,
        "messages": USER,
        "tools": [WEATHER, TIME],
    }
    message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.usage.input_tokens == 6 and message.usage.output_tokens == 5
    with client.messages.stream(**kwargs) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and "input_json" in kinds
    assert stable(final.model_dump()) == stable(message.model_dump())
    assert client.messages.count_tokens(model="m", messages=USER).input_tokens == 1
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(
            model="m", max_tokens=5, messages=USER, extra_body={"temperature": 3}
        )
    assert "temperature" in str(err.value)
