"""``tooldialect serve`` without a model: the request rewrite, the ASGI layer, settings, the CLI."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from serve_app import UPSTREAM_SSE_LEAK, post, served_app
from tooldialect.apps.serve import (
    INSTALL_HINT,
    RequestExtrasHandler,
    RequestRewrite,
    main,
    rewrite_chat_request,
)
from tooldialect.handler import ToolChatHandler

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
USER = {"role": "user", "content": "hi"}
ALLOWED = {
    "type": "allowed_tools",
    "allowed_tools": {
        "mode": "required",
        "tools": [{"type": "function", "function": {"name": "f"}}],
    },
}

REWRITES = [
    (
        {
            "messages": [USER],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": SCHEMA, "strict": True},
            },
        },
        {"messages": [USER], "response_format": {"type": "json_object", "schema": SCHEMA}},
        {},
    ),
    (
        {
            "messages": [USER],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x"}},
        },
        {"messages": [USER], "response_format": {"type": "json_object"}},
        {},
    ),
    (
        {"messages": [USER], "response_format": {"type": "json_object", "schema": SCHEMA}},
        {"messages": [USER], "response_format": {"type": "json_object", "schema": SCHEMA}},
        {},
    ),
    (
        {
            "messages": [USER],
            "chat_template_kwargs": {"enable_thinking": False},
            "parallel_tool_calls": False,
            "reasoning_effort": "low",
            "temperature": 0,
        },
        {"messages": [USER], "temperature": 0},
        {
            "chat_template_kwargs": {"enable_thinking": False},
            "parallel_tool_calls": False,
            "reasoning_effort": "low",
        },
    ),
    (
        {"messages": [{"role": "developer", "content": "be brief"}, USER]},
        {"messages": [{"role": "system", "content": "be brief"}, USER]},
        {},
    ),
    (
        {"messages": [USER, {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]},
        {"messages": [USER, {"role": "assistant", "tool_calls": [{"id": "c"}]}]},
        {},
    ),
    (
        {
            "messages": [
                {
                    "role": "tool",
                    "tool_call_id": "c",
                    "content": [{"type": "text", "text": "2"}, {"type": "text", "text": "4"}],
                }
            ]
        },
        {"messages": [{"role": "tool", "tool_call_id": "c", "content": "24"}]},
        {},
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]},
        {},
    ),
    (
        {"messages": [USER], "max_completion_tokens": 7},
        {"messages": [USER], "max_tokens": 7},
        {},
    ),
    (
        {"messages": [USER], "max_completion_tokens": 7, "max_tokens": 3},
        {"messages": [USER], "max_tokens": 3},
        {},
    ),
    (
        {"messages": [USER], "tool_choice": ALLOWED},
        {"messages": [USER]},
        {"tool_choice": ALLOWED},
    ),
    (
        {"messages": [USER], "tool_choice": {"type": "function", "name": "f"}},
        {"messages": [USER]},
        {"tool_choice": {"type": "function", "name": "f"}},
    ),
    (
        {"messages": [USER], "tool_choice": {"type": "function", "function": {"name": "f"}}},
        {"messages": [USER]},
        {"tool_choice": {"type": "function", "function": {"name": "f"}}},
    ),
    (
        {"messages": [USER], "tool_choice": "required"},
        {"messages": [USER]},
        {"tool_choice": "required"},
    ),
]


@pytest.mark.parametrize(
    ("body", "expected", "extras"),
    REWRITES,
    ids=[
        "json-schema",
        "json-schema-no-schema",
        "json-object-kept",
        "extras-lifted",
        "developer-role",
        "assistant-null-content",
        "tool-text-parts",
        "user-parts-kept",
        "max-completion-tokens",
        "max-tokens-wins",
        "allowed-tools-lifted",
        "responses-named-choice-lifted",
        "named-choice-lifted",
        "required-lifted",
    ],
)
def test_rewrite_chat_request(
    body: dict[str, Any], expected: dict[str, Any], extras: dict[str, Any]
) -> None:
    before = json.dumps(body, sort_keys=True)
    assert rewrite_chat_request(body) == (expected, extras)
    assert json.dumps(body, sort_keys=True) == before  # the input is not changed


def test_rewritten_body_passes_the_servers_request_model() -> None:
    """What the rewrite produces is what llama-cpp-python's server validates and forwards."""
    types = pytest.importorskip("llama_cpp.server.types", reason=INSTALL_HINT)
    body = {
        "messages": [
            {"role": "developer", "content": "x"},
            USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        ],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}},
        "max_completion_tokens": 5,
    }
    with pytest.raises(ValueError):
        types.CreateChatCompletionRequest.model_validate(body)
    rewritten, _ = rewrite_chat_request(body)
    kwargs = types.CreateChatCompletionRequest.model_validate(rewritten).model_dump()
    assert kwargs["response_format"] == {"type": "json_object", "schema": SCHEMA}
    with pytest.raises(ValueError):  # why allowed_tools is carried beside the body
        types.CreateChatCompletionRequest.model_validate({**rewritten, "tool_choice": ALLOWED})
    assert kwargs["max_tokens"] == 5
    assert [m["role"] for m in kwargs["messages"]] == ["system", "user", "assistant", "tool"]


def run_asgi(body: bytes, *, path: str = "/v1/chat/completions", chunked: bool = False) -> Any:
    """Send one POST through ``RequestRewrite`` to a recording app; return what the app saw."""
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        from tooldialect.apps.serve import _request_extras

        parts = []
        while True:
            message = await receive()
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        seen.update(
            body=b"".join(parts),
            headers=dict(scope["headers"]),
            extras=_request_extras.get(),
            after=await receive(),
        )

    pieces = [body[: len(body) // 2], body[len(body) // 2 :]] if chunked else [body]
    inbox = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ] + [{"type": "http.disconnect"}]

    async def receive() -> Any:
        return inbox.pop(0)

    async def send(message: Any) -> None:
        pass

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-length", str(len(body)).encode())],
    }
    asyncio.run(RequestRewrite(app)(scope, receive, send))
    return seen


@pytest.mark.parametrize("chunked", [False, True], ids=["one-chunk", "two-chunks"])
def test_middleware_rewrites_the_body_and_carries_extras(chunked: bool) -> None:
    body = {
        "messages": [USER],
        "parallel_tool_calls": False,
        "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}},
    }
    seen = run_asgi(json.dumps(body).encode(), chunked=chunked)
    forwarded = json.loads(seen["body"])
    assert forwarded == rewrite_chat_request(body)[0]
    assert seen["headers"][b"content-length"] == str(len(seen["body"])).encode()
    assert seen["extras"] == {"parallel_tool_calls": False}
    assert seen["after"] == {"type": "http.disconnect"}  # disconnects still reach the server


@pytest.mark.parametrize(
    ("path", "raw"),
    [("/v1/completions", b'{"prompt": "x", "parallel_tool_calls": false}')],
    ids=["other-route"],  # a chat body that is not JSON is a 400: test_serve_bad_requests
)
def test_middleware_leaves_other_requests_alone(path: str, raw: bytes) -> None:
    seen = run_asgi(raw, path=path)
    assert seen["body"] == raw
    assert not seen["extras"]


def recording_handler() -> tuple[RequestExtrasHandler, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []

    class Recorder(ToolChatHandler):
        def __call__(
            self, *, llama: Any, messages: Any, temperature: float = 0.2, **kwargs: Any
        ) -> Any:
            calls.append({"messages": messages, "temperature": temperature, **kwargs})
            return {}

    return RequestExtrasHandler(Recorder()), calls


@pytest.mark.parametrize(
    ("model_kwargs", "request_extras", "expected"),
    [
        ({}, None, {}),
        (
            {"enable_thinking": False, "custom_flag": 1},
            None,
            {"chat_template_kwargs": {"enable_thinking": False, "custom_flag": 1}},
        ),
        (
            {"enable_thinking": False},
            {"chat_template_kwargs": {"enable_thinking": True}, "parallel_tool_calls": False},
            {"chat_template_kwargs": {"enable_thinking": True}, "parallel_tool_calls": False},
        ),
        ({}, {"reasoning_effort": "low"}, {"reasoning_effort": "low"}),
    ],
    ids=["nothing", "model-template-kwargs-folded", "request-wins", "reasoning-effort"],
)
def test_extras_handler_merges_model_and_request_extras(
    model_kwargs: dict[str, Any],
    request_extras: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    from tooldialect.apps.serve import _request_extras

    handler, calls = recording_handler()
    token = _request_extras.set(request_extras)
    try:
        handler(llama=None, messages=[], temperature=0.1, **model_kwargs)
    finally:
        _request_extras.reset(token)
    assert calls == [{"messages": [], "temperature": 0.1, **expected}]


def test_settings_default_chat_format_and_pass_through(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp.server.app", reason=INSTALL_HINT)
    from tooldialect.apps.serve import build_parser, read_settings

    parser = build_parser()
    server, models = read_settings(
        parser.parse_args(
            ["--model", "m.gguf", "--port", "9", "--n_ctx", "512", "--interrupt_requests", "false"]
        )
    )
    assert (server.port, server.interrupt_requests) == (9, False)
    model = models[0]
    assert (model.model, model.n_ctx, model.chat_format) == ("m.gguf", 512, "tooldialect")
    _, models = read_settings(parser.parse_args(["--model", "m.gguf", "--chat_format", "chatml"]))
    assert models[0].chat_format == "chatml"

    config = tmp_path / "serve.json"
    config.write_text(
        json.dumps(
            {
                "port": 7,
                "models": [{"model": "a.gguf"}, {"model": "b.gguf", "chat_format": "chatml"}],
            }
        )
    )
    server, models = read_settings(parser.parse_args(["--config_file", str(config)]))
    assert server.port == 7
    assert [m.chat_format for m in models] == ["tooldialect", "chatml"]


def test_missing_server_extra_prints_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # makes `import uvicorn` raise ImportError
    assert main(["--model", "m.gguf"]) == 2
    assert INSTALL_HINT in capsys.readouterr().err


def test_cli_dispatches_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    import tooldialect.apps.serve
    from tooldialect.apps.cli import main as cli_main

    got: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        got.append(list(argv))
        return 0

    monkeypatch.setattr(tooldialect.apps.serve, "main", fake_main)
    assert cli_main(["serve", "--model", "m.gguf", "--port", "1"]) == 0
    assert got == [["--model", "m.gguf", "--port", "1"]]


@pytest.mark.parametrize("handled", [True, False], ids=["handler-reply", "no-handler-reply"])
def test_non_streamed_reply_goes_out_as_the_handler_made_it(handled: bool) -> None:
    """The server trims replies to its TypedDict; the layer sends the handler's own dict."""
    full = {
        "choices": [{"message": {"content": "x", "reasoning_content": "why"}}],
        "usage": {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}},
    }
    trimmed = json.dumps({"choices": [{"message": {"content": "x"}}]}).encode()

    class Reply(ToolChatHandler):
        def __call__(self, **kwargs: Any) -> Any:
            return full

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        if handled:
            RequestExtrasHandler(Reply())(llama=None, messages=[])
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(trimmed)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": trimmed[:5], "more_body": True})
        await send({"type": "http.response.body", "body": trimmed[5:]})

    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": json.dumps({"messages": [USER]}).encode()}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
    asyncio.run(RequestRewrite(app)(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    length = int(dict(sent[0]["headers"])[b"content-length"])
    assert json.loads(body) == (full if handled else json.loads(trimmed))
    assert length == len(body)


# ---- requests the library refuses are answered 400, never 500 -------------------------------

CALL_TURN = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
MALFORMED = [
    ([USER, {"role": "tool", "tool_call_id": "c1", "content": "4"}], "messages[1]"),
    ([USER, CALL_TURN, {"role": "tool", "tool_call_id": "zz", "content": "4"}], "tool_call_id"),
    (
        [
            USER,
            {
                **CALL_TURN,
                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{"}}],
            },
        ],
        "messages[1].tool_calls[0].function.arguments",
    ),
    ([USER, CALL_TURN, {"role": "function", "name": "g", "content": "4"}], "messages[2]"),
]


def _post(app: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any], bool]:
    """(status, JSON body, whether the app was reached) of one chat request through the layer."""
    reached: list[bool] = []
    sent: list[Any] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)
        await app(scope, receive, send)

    async def receive() -> Any:
        return {"type": "http.request", "body": json.dumps(body).encode()}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "root_path": "",
    }
    asyncio.run(RequestRewrite(inner)(scope, receive, send))
    raw = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(raw), bool(reached)


@pytest.mark.parametrize(("messages", "named"), MALFORMED, ids=["orphan", "id", "args", "fn"])
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_malformed_history_is_a_400_before_the_server_runs(
    messages: list[dict[str, Any]], named: str, stream: bool
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:  # never reached
        raise AssertionError("the server should not see this request")

    status, body, reached = _post(app, {"messages": messages, "stream": stream})
    assert (status, reached) == (400, False)
    assert body["error"]["type"] == "invalid_request_error"
    assert named in body["error"]["message"]


def test_a_refusal_raised_in_the_handler_is_a_400_through_the_servers_error_route() -> None:
    """The server's own route class answers 500 for any exception; the layer makes it 400."""
    fastapi = pytest.importorskip("fastapi", reason=INSTALL_HINT)
    errors = pytest.importorskip("llama_cpp.server.errors", reason=INSTALL_HINT)
    from starlette.concurrency import run_in_threadpool

    from tooldialect.errors import ToolSpecError

    class Refuses(ToolChatHandler):
        def __call__(self, **kwargs: Any) -> Any:
            raise ToolSpecError("messages[0] (role 'wizard') does not reach the prompt")

    router = fastapi.APIRouter(route_class=errors.RouteErrorHandler)
    served = RequestExtrasHandler(Refuses())

    async def chat(request: Any) -> Any:
        body = await request.json()
        return await run_in_threadpool(served, llama=None, messages=body["messages"])

    chat.__annotations__ = {"request": fastapi.Request}  # resolved here, not from a string
    router.add_api_route("/v1/chat/completions", chat, methods=["POST"])

    app = fastapi.FastAPI()
    app.include_router(router)
    status, body, _ = _post(app, {"messages": [USER]})
    assert status == 400
    assert body["error"] == {
        "message": "messages[0] (role 'wizard') does not reach the prompt",
        "type": "invalid_request_error",
        "param": "messages",
        "code": None,
    }

    class Breaks(ToolChatHandler):
        def __call__(self, **kwargs: Any) -> Any:
            raise RuntimeError("a server bug")

    served.handler = Breaks()
    status, _, _ = _post(app, {"messages": [USER]})
    assert status == 500  # what is the server's fault stays a 500


# ---- through llama-cpp-python's own server app: the streamed path too --------------------------

WIZARD = {"role": "wizard", "content": "Cast a spell on the forecast."}


LOOKAHEAD_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "(?=A)[A-Z]+"}},
        },
    },
}


@UPSTREAM_SSE_LEAK
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_refusal_the_handler_raises_is_a_400_through_the_real_server(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """The handler refuses the request (a tool schema no grammar expresses); streamed, the
    server has already started its 200 by then, and the layer still answers 400."""
    app = served_app(monkeypatch, ["never sent"])
    body = {"messages": [USER], "tools": [LOOKAHEAD_TOOL], "stream": stream}
    status, raw = post(app, json.dumps(body).encode())
    assert status == 400
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error"
    assert "'(?=A)[A-Z]+'" in error["message"] and "lookaround" in error["message"]


@UPSTREAM_SSE_LEAK
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_role_the_server_does_not_take_is_a_400_naming_the_message(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """The server's request model would refuse the role with a 500; the layer says which
    message first (the handler refuses a role its template drops: test_request_messages)."""
    app = served_app(monkeypatch, ["never sent"])
    body = {"messages": [USER, WIZARD], "stream": stream}
    status, raw = post(app, json.dumps(body).encode())
    assert status == 400
    error = json.loads(raw)["error"]
    assert error["param"] == "messages" and "messages[1] has role 'wizard'" in error["message"]


@UPSTREAM_SSE_LEAK
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_good_request_still_streams_through_the_real_server(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    app = served_app(monkeypatch, ["Sunny", " in Oslo."])
    status, raw = post(app, json.dumps({"messages": [USER], "stream": stream}).encode())
    assert status == 200
    if not stream:
        assert json.loads(raw)["choices"][0]["message"]["content"] == "Sunny in Oslo."
        return
    events = [line[len(b"data: ") :] for line in raw.splitlines() if line.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    assert text == "Sunny in Oslo."
