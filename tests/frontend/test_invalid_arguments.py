"""Parsed calls checked against their tool's full JSON Schema in the shared front end
(``frontend.validation``): reported in ``invalid_tool_calls`` (and logged) or raised, batch and
stream, on the in-process engine (scripted) and the llama-server engine (a scripted server).
Model-free: the scripted engines ignore the grammar, which is how text the grammar never saw
(or a keyword it leaves loose) reaches the parser."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from conftest import read_template
from fake_engine import fake_handler
from server.fake import FakeServer
from tooldialect import Agent, CallFinished, InvalidToolCallError, ServerClient, ToolChatHandler
from tooldialect.apps.python_tool import Tool
from tooldialect.errors import OptionError
from tooldialect.tool_defs import ToolDef

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")  # hermes: <tool_call> JSON
FORECAST = {
    "type": "function",
    "function": {
        "name": "forecast",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city"],
        },
    },
}
PARAMETERS: dict[str, Any] = FORECAST["function"]["parameters"]  # type: ignore[index]
ASK = [{"role": "user", "content": "Paris for a month, Rome for three days?"}]


def _call(args: dict[str, Any], name: str = "forecast") -> list[str]:
    """One hermes call, cut into token-like pieces."""
    body = json.dumps({"name": name, "arguments": args})
    return [
        "<tool_call>",
        "\n",
        *[body[i : i + 7] for i in range(0, len(body), 7)],
        "\n</tool_call>",
    ]


BAD = {"city": "Paris", "days": 30}  # maximum 14
GOOD = {"city": "Rome", "days": 3}
REPLY = ["Checking.\n", *_call(BAD), "\n", *_call(GOOD)]


def _run(handler: Any, llama: Any, *, stream: bool, **request: Any) -> Any:
    """The message (batch), or (calls by index, last chunk's delta) (stream)."""
    out = handler(llama=llama, messages=ASK, stream=stream, tools=[FORECAST], **request)
    return _shape(out, stream=stream)


def _shape(out: Any, *, stream: bool) -> Any:
    if not stream:
        return out["choices"][0]["message"]
    from openai.types.chat import ChatCompletionChunk

    chunks = list(out)
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)  # the extra field keeps OpenAI's chunk shape
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls") or []:
            slot = calls.setdefault(part["index"], {"id": "", "arguments": ""})
            slot["id"] = part.get("id") or slot["id"]
            slot["arguments"] += (part.get("function") or {}).get("arguments") or ""
    head = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert all("invalid_tool_calls" not in d for d in head)  # only the last chunk carries it
    return calls, chunks[-1]["choices"][0]["delta"]


def _check_report(invalid: list[dict[str, Any]], ids: list[str], args: list[str]) -> None:
    (entry,) = invalid
    assert entry["id"] == ids[0] and entry["id"] != ids[1]  # the first call, not the valid one
    assert entry["name"] == "forecast"
    assert json.loads(entry["args"]) == BAD and entry["args"] == args[0]
    assert [(p["path"], p["keyword"]) for p in entry["problems"]] == [("/days", "maximum")]
    assert "/days" in entry["error"] and "maximum" in entry["error"]


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_an_invalid_call_is_reported_and_kept(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    handler, llama, _ = fake_handler(TEMPLATE, REPLY)
    with caplog.at_level(logging.WARNING, logger="tooldialect"):
        out = _run(handler, llama, stream=stream)
    if stream:
        calls, last = out
        ids = [calls[i]["id"] for i in sorted(calls)]
        args = [calls[i]["arguments"] for i in sorted(calls)]
        invalid = last["invalid_tool_calls"]
    else:
        ids = [c["id"] for c in out["tool_calls"]]
        args = [c["function"]["arguments"] for c in out["tool_calls"]]
        invalid = out["invalid_tool_calls"]
    assert [json.loads(a) for a in args] == [BAD, GOOD]  # both calls still come back
    _check_report(invalid, ids, args)
    (record,) = [r for r in caplog.records if r.name == "tooldialect"]
    assert record.levelno == logging.WARNING
    assert "'forecast'" in record.getMessage() and "/days" in record.getMessage()


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_raise_names_the_call_and_keyword(stream: bool) -> None:
    handler, llama, _ = fake_handler(TEMPLATE, REPLY, invalid_arguments="raise")
    with pytest.raises(InvalidToolCallError, match=r"'forecast'.*/days.*maximum") as caught:
        _run(handler, llama, stream=stream)
    (entry,) = caught.value.calls
    assert entry["name"] == "forecast" and json.loads(str(entry["args"])) == BAD


@pytest.mark.parametrize(
    ("reply", "request_"),
    [
        (["Hi.", *_call(GOOD)], {}),
        (["Hi.", *_call(BAD)], {"tool_choice": "none"}),  # no call comes back: nothing to check
        (["Hi.", *_call(BAD)[:4]], {"max_tokens": 4}),  # cut by the limit: "length" says it
    ],
    ids=["valid", "choice-none", "truncated"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_nothing_is_reported_without_a_complete_invalid_call(
    reply: list[str], request_: dict[str, Any], stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    handler, llama, _ = fake_handler(TEMPLATE, reply, invalid_arguments="raise")
    with caplog.at_level(logging.WARNING, logger="tooldialect"):
        out = _run(handler, llama, stream=stream, **request_)
    where = out[1] if stream else out
    assert "invalid_tool_calls" not in where
    assert not [r for r in caplog.records if r.name == "tooldialect"]


def test_a_call_of_a_tool_not_offered_is_reported_by_name() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, _call({"q": 1}, name="search"))
    message = _run(handler, llama, stream=False)
    (call,) = message["tool_calls"]  # the parser keeps the name as written
    (entry,) = message["invalid_tool_calls"]
    assert entry["id"] == call["id"] and entry["name"] == "search"
    assert [(p["path"], p["keyword"]) for p in entry["problems"]] == [("", "name")]


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(OptionError, match=r"invalid_arguments='drop'.*'report'.*'raise'"):
        ToolChatHandler(invalid_arguments="drop")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"ServerClient\(invalid_arguments="):
        ServerClient("http://127.0.0.1:9", invalid_arguments="warn")  # type: ignore[arg-type]


# ---- the llama-server engine: the same front end, the same report ------------------------------


def _server(policy: str) -> Iterator[ServerClient]:
    with FakeServer(template=TEMPLATE) as srv:
        srv.behaviour.reply = list(REPLY)
        yield ServerClient(srv.url, invalid_arguments=policy)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_the_server_engine_reports_the_same(stream: bool) -> None:
    for client in _server("report"):
        out = client.create_chat_completion(messages=ASK, stream=stream, tools=[FORECAST])
        got = _shape(out, stream=stream)
        if stream:
            calls, last = got
            ids = [calls[i]["id"] for i in sorted(calls)]
            args = [calls[i]["arguments"] for i in sorted(calls)]
            _check_report(last["invalid_tool_calls"], ids, args)
        else:
            ids = [c["id"] for c in got["tool_calls"]]
            args = [c["function"]["arguments"] for c in got["tool_calls"]]
            _check_report(got["invalid_tool_calls"], ids, args)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_the_server_engine_raises_the_same(stream: bool) -> None:
    for client in _server("raise"):
        with pytest.raises(InvalidToolCallError, match=r"/days"):
            out = client.create_chat_completion(messages=ASK, stream=stream, tools=[FORECAST])
            _shape(out, stream=stream)


# ---- the Agent: an invalid call goes back to the model instead of running ----------------------


class _Llm:
    """The scripted handler as an ``Agent``'s model: ``create_chat_completion`` streams."""

    def __init__(self, replies: list[list[str]]) -> None:
        self.replies = replies

    def create_chat_completion(self, **request: Any) -> Any:
        handler, llama, _ = fake_handler(TEMPLATE, self.replies.pop(0))
        return handler(llama=llama, **request)


def test_the_agent_sends_an_invalid_call_back_instead_of_running_it() -> None:
    ran: list[dict[str, Any]] = []

    def forecast(city: str, days: int = 1) -> str:
        ran.append({"city": city, "days": days})
        return f"sunny in {city}"

    # the function's own model has no bound on days: only the front end's check can stop it
    lenient = pydantic.create_model("ForecastArgs", city=(str, ...), days=(int, 1))
    definition = ToolDef(name="forecast", parameters=PARAMETERS)
    tool = Tool(forecast, definition, lenient)
    llm = _Llm([REPLY, ["Done."]])
    events = list(Agent(llm, tools=[tool]).stream("go"))
    finished = [e for e in events if isinstance(e, CallFinished)]
    assert [f.error for f in finished] == ["invalid_arguments", None]
    assert "/days" in finished[0].result and "maximum" in finished[0].result
    assert ran == [GOOD]  # the invalid call never ran
