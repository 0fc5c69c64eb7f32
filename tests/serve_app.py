"""llama-cpp-python's real server app (routes, pydantic models, SSE, error route) behind the
``RequestRewrite`` layer, with ``/v1/responses`` and ``/v1/messages`` mounted, its one model a
scripted ``FakeLlama`` whose chat handler is the served ``ToolChatHandler``: ``tooldialect serve``
without a GGUF."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from tooldialect.apps.serve import INSTALL_HINT, RequestExtrasHandler, RequestRewrite

UPSTREAM_SSE_LEAK = pytest.mark.filterwarnings(
    "ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"
)
"""llama-cpp-python's streaming route never closes the receive end of its SSE channel."""

MODEL_PATH = "/srv/secret/models/fake-model.gguf"
"""Where the fake model lies: no error body may name it."""


def served_app(monkeypatch: pytest.MonkeyPatch, reply: list[str]) -> Any:
    """The app, its model answering ``reply`` (the pieces it streams)."""
    pytest.importorskip("fastapi", reason=INSTALL_HINT)
    server_app = pytest.importorskip("llama_cpp.server.app", reason=INSTALL_HINT)
    import llama_cpp
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    from conftest import read_template
    from fake_engine import fake_handler
    from tooldialect.apps.messages import mount_messages
    from tooldialect.apps.responses import mount_responses

    handler, fake, _ = fake_handler(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"), reply)
    llama: Any = fake  # given the attributes of a Llama the server reads
    llama.model_path = MODEL_PATH
    llama.chat_handler = RequestExtrasHandler(handler)
    llama.chat_format = "tooldialect"
    llama._chat_handlers = {}
    # the server calls Llama.create_chat_completion on it (bound when batch, unbound streamed)
    llama.create_chat_completion = functools.partial(llama_cpp.Llama.create_chat_completion, llama)

    class OneModel:
        def __init__(self, models: Any) -> None:
            pass

        def __call__(self, model: str | None = None) -> Any:
            return llama

    monkeypatch.setattr(server_app, "LlamaProxy", OneModel)
    app = server_app.create_app(
        server_settings=ServerSettings(), model_settings=[ModelSettings(model="fake.gguf")]
    )
    mount_responses(app)
    mount_messages(app)
    return RequestRewrite(app)


def post(app: Any, raw: bytes, *, path: str = "/v1/chat/completions") -> tuple[int, bytes]:
    """(status, body) of one request; the client stays connected until the app ends."""
    sent: list[Any] = []
    first = [{"type": "http.request", "body": raw}]

    async def receive() -> Any:
        if first:
            return first.pop()
        await asyncio.sleep(3600)  # connected: the stream's disconnect watcher waits here
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "client": ("test", 1),
        "root_path": "",
    }
    asyncio.run(asyncio.wait_for(app(scope, receive, send), timeout=30))
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1  # one answer, never a 200 that turns into something else
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return starts[0]["status"], body
