"""``/v1/responses`` without a model: request conversion, the event stream and its reassembly,
the store, and the endpoint on a fake handler (real ASGI, real chunk shapes from the parser)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from endpoint_fakes import REPLY, endpoint_client, fake_lease, handler_chunks, sse_events
from tooldialect.apps.responses import (
    ResponsesEndpoint,
    ResponsesError,
    ResponseStore,
    ResponseStream,
    chat_request,
    reassemble,
)
from tooldialect.apps.responses.convert import input_messages
from tooldialect.errors import ToolSpecError

# the Responses API's flat, strict tool (the input these conversions read), not tool_defs' shape
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object"}}


# ---- request conversion ------------------------------------------------------------------------


def test_string_input_instructions_and_options() -> None:
    req = chat_request(
        {
            "model": "m",
            "input": "hi",
            "instructions": "be brief",
            "tools": [WEATHER],
            "tool_choice": {"type": "function", "name": "get_weather"},
            "parallel_tool_calls": False,
            "max_output_tokens": 33,
            "temperature": 0.1,
            "top_p": 0.5,
            "reasoning": {"effort": "low"},
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
        }
    )
    assert req.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert req.history == [{"role": "user", "content": "hi"}]  # a follow-up gets no instructions
    kw = req.kwargs
    assert kw["tools"] == [
        {
            "type": "function",
            "function": {k: WEATHER[k] for k in ("name", "description", "parameters", "strict")},
        }
    ]
    # the Responses form translated here, into the form the handler reads
    assert kw["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (kw["parallel_tool_calls"], kw["max_tokens"], kw["temperature"], kw["top_p"]) == (
        False,
        33,
        0.1,
        0.5,
    )
    assert kw["reasoning_effort"] == "low"
    assert kw["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "x", "schema": {"type": "object"}},
    }
    assert req.echo["tools"] == [WEATHER] and req.echo["parallel_tool_calls"] is False
    assert req.model == "m" and req.store and not req.stream


def test_input_items_become_one_turn_per_chat_message() -> None:
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "think"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "checking", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "rain"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "noon"}],
        },
        {"type": "function_call", "call_id": "c3", "name": "get_time", "arguments": "{}"},
    ]
    assert input_messages(items) == [
        {"role": "system", "content": "d"},
        {"role": "user", "content": "ab"},
        {
            "role": "assistant",
            "content": "checking",
            "reasoning_content": "think",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c3",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                }
            ],
        },
    ]


def test_previous_conversation_comes_first() -> None:
    old = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    req = chat_request({"input": "again", "instructions": "new"}, previous=old)
    assert req.messages == [
        {"role": "system", "content": "new"},
        *old,
        {"role": "user", "content": "again"},
    ]


@pytest.mark.parametrize(
    "kind",
    [
        "web_search",
        "web_search_preview",
        "file_search",
        "computer_use_preview",
        "mcp",
        "code_interpreter",
        "image_generation",
    ],
)
def test_hosted_tools_are_refused_by_name(kind: str) -> None:
    with pytest.raises(ResponsesError) as err:
        chat_request({"input": "x", "tools": [WEATHER, {"type": kind}]})
    assert err.value.status == 400
    assert f"tools[1] (type {kind!r})" in err.value.message and "['function']" in err.value.message
    assert "tools[0]" not in err.value.message


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"instructions": "x"}, "'input' is required"),
        ({"input": 3}, "string or a list"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "'item_reference' item"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"input": [{"type": "function_call_output", "output": "x"}]}, "'call_id'"),
        ({"input": "x", "background": True}, "background"),
        ({"input": "x", "conversation": "conv_1"}, "previous_response_id"),
        ({"input": "x", "tool_choice": {"type": "web_search_preview"}}, "'web_search_preview'"),
        ({"input": "x", "text": {"format": {"type": "yaml"}}}, "text.format"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "'input_file'",
        ),
    ],
)
def test_unservable_requests_say_why(body: dict[str, Any], words: str) -> None:
    with pytest.raises(ResponsesError, match=words.replace("[", r"\[").replace("]", r"\]")):
        chat_request(body)


# ---- events --------------------------------------------------------------------------------------

chunks_for = functools.partial(
    handler_chunks,
    tools=[{"type": "function", "function": WEATHER}, {"type": "function", "function": TIME}],
)


def stable(response: dict[str, Any]) -> dict[str, Any]:
    """The response without its generated ids and clock."""
    out: dict[str, Any] = json.loads(json.dumps(response))
    out.pop("id"), out.pop("created_at")
    for item in out["output"]:
        item.pop("id")
        if item["type"] == "function_call":
            item.pop("call_id")
    return out


def run(chunks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], ResponseStream]:
    stream = ResponseStream(model="m", echo={"tools": [WEATHER, TIME]})
    return stream.run(chunks), stream


def test_events_follow_the_responses_sequence() -> None:
    events, stream = run(chunks_for(REPLY, 7))
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert added == ["reasoning", "message", "function_call", "function_call"]
    for needed in (
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ):
        assert needed in kinds, needed
    # each item is done before the next one is added (the official stream's order)
    opened: list[int] = []
    for e in events:
        if e["type"] == "response.output_item.added":
            assert not opened
            opened.append(e["output_index"])
        elif e["type"] == "response.output_item.done":
            assert opened == [e["output_index"]]
            opened.clear()
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["incomplete_details"] is None
    assert final["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    reasoning, message, weather, time_call = final["output"]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "The user wants weather."}]
    assert message["content"][0]["text"] == "Let me check."
    assert (weather["name"], json.loads(weather["arguments"])) == ("get_weather", {"city": "Paris"})
    assert (time_call["name"], json.loads(time_call["arguments"])) == ("get_time", {})
    assert weather["call_id"] != time_call["call_id"]
    assert stream.chat_message()["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("size", [1, 3, 11, len(REPLY)])
def test_stream_reassembles_into_the_batch_response(size: int) -> None:
    batch_events, _ = run(chunks_for(REPLY, len(REPLY)))
    events, _ = run(chunks_for(REPLY, size))
    rebuilt = reassemble(events)
    assert rebuilt == events[-1]["response"]  # the fold of the deltas is the completed object
    assert stable(rebuilt) == stable(batch_events[-1]["response"])  # whatever the chunking


def test_reassemble_catches_a_done_that_disagrees() -> None:
    events, _ = run(chunks_for(REPLY, 5))
    for e in events:
        if e["type"] == "response.output_text.done":
            e["text"] += "!"
    with pytest.raises(ValueError, match="differs"):
        reassemble(events)


def test_max_output_tokens_cut_is_incomplete() -> None:
    events, _ = run(chunks_for("A long answer that was cut", 4, finish="length"))
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.incomplete"
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"
    assert reassemble(events) == final


def test_text_only_reply_is_one_message() -> None:
    events, stream = run(chunks_for("Hello there.", 2, finish="stop"))
    final = events[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["message"]
    assert final["output"][0]["content"][0]["text"] == "Hello there."
    assert stream.chat_message() == {"role": "assistant", "content": "Hello there."}


# ---- store ---------------------------------------------------------------------------------------


def test_store_is_bounded_lru_and_missing_ids_are_404() -> None:
    store = ResponseStore(capacity=2)
    for rid in ("a", "b"):
        store.put({"id": rid}, [{"role": "user", "content": rid}])
    store.get("a")  # touched: "b" is now the oldest
    store.put({"id": "c"}, [])
    assert len(store) == 2 and store.get("a").history == [{"role": "user", "content": "a"}]
    with pytest.raises(ResponsesError) as err:
        store.get("b")
    assert (
        err.value.status == 404
        and "'b'" in err.value.message
        and "2 most recent" in err.value.message
    )


# ---- the endpoint, on a fake handler -----------------------------------------------------------


class FakeHandler:
    """Answers like ``ToolChatHandler(stream=True)``: refuses what the library refuses, records
    what it was called with."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, *, llama: Any, messages: list[dict[str, Any]], **kw: Any
    ) -> Iterator[dict[str, Any]]:
        self.calls.append({"messages": messages, **kw})
        if kw.get("tool_choice") == {"type": "function", "function": {"name": "nope"}}:
            raise ToolSpecError("tool_choice names unknown function 'nope'")
        return iter(
            chunks_for(
                self.reply, 4, finish="tool_calls" if "<tool_call>" in self.reply else "stop"
            )
        )


@pytest.fixture
def served() -> tuple[Any, FakeHandler]:
    handler = FakeHandler(REPLY)
    endpoint = ResponsesEndpoint(
        lease=fake_lease, handler_for=lambda llama: handler, api_key=lambda: "k"
    )
    routes = {"/v1/responses": ["POST"], "/v1/responses/{rid}": ["GET", "DELETE"]}
    return endpoint_client(endpoint, routes, headers={"Authorization": "Bearer k"}), handler


def test_endpoint_batch_stream_store_and_errors(served: tuple[Any, FakeHandler]) -> None:
    client, handler = served
    body = {"model": "m", "input": "weather?", "tools": [WEATHER, TIME]}
    batch = client.post("/v1/responses", json=body)
    assert batch.status_code == 200, batch.text
    first = batch.json()
    assert (
        handler.calls[-1]["stream"] is True and handler.calls[-1]["tools"][0]["function"]["strict"]
    )
    streamed = client.post("/v1/responses", json={**body, "stream": True})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = sse_events(streamed.text)
    assert stable(reassemble(events)) == stable(first)
    # previous_response_id: the stored turn (with its calls) comes back before the new input
    call_id = first["output"][2]["call_id"]
    follow = client.post(
        "/v1/responses",
        json={
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "sun"}],
            "previous_response_id": first["id"],
            "tools": [WEATHER, TIME],
        },
    )
    assert follow.status_code == 200
    sent = handler.calls[-1]["messages"]
    assert sent[0] == {"role": "user", "content": "weather?"}
    assert sent[1]["role"] == "assistant" and sent[1]["tool_calls"][0]["id"] == call_id
    assert sent[-1] == {"role": "tool", "tool_call_id": call_id, "content": "sun"}
    assert client.get(f"/v1/responses/{first['id']}").json() == first
    assert client.delete(f"/v1/responses/{first['id']}").json()["deleted"] is True
    missing = client.post("/v1/responses", json={"input": "x", "previous_response_id": first["id"]})
    assert missing.status_code == 404 and first["id"] in missing.json()["error"]["message"]
    refused = client.post("/v1/responses", json={"input": "x", "tools": [{"type": "file_search"}]})
    assert refused.status_code == 400 and "file_search" in refused.json()["error"]["message"]
    bad = client.post(
        "/v1/responses",
        json={
            "input": "x",
            "tools": [WEATHER],
            "tool_choice": {"type": "function", "name": "nope"},
        },
    )
    assert bad.status_code == 400 and "'nope'" in bad.json()["error"]["message"]
    unstored = client.post("/v1/responses", json={**body, "store": False}).json()
    assert client.get(f"/v1/responses/{unstored['id']}").status_code == 404
    assert (
        client.post("/v1/responses", json=body, headers={"Authorization": "Bearer no"}).status_code
        == 401
    )


def test_mounted_on_a_fastapi_app() -> None:
    fastapi = pytest.importorskip("fastapi")
    from tooldialect.apps.responses import mount_responses

    app = fastapi.FastAPI()
    endpoint = mount_responses(app)
    paths = {getattr(r, "path", None): getattr(r, "methods", None) for r in app.router.routes}
    assert paths["/v1/responses"] == {"POST"}
    methods = paths["/v1/responses/{response_id}"]
    assert methods is not None and {"GET", "DELETE"} <= methods
    assert isinstance(endpoint.store, ResponseStore)
