"""The ASGI plumbing the API endpoints mounted on llama-cpp-python's server share
(``apps.responses``, ``apps.messages``, and the chat layer of ``apps.serve``).

Each endpoint keeps its own error shape: the helpers here that refuse take the endpoint's error
factory (a ``ToolDialectError`` subclass with an HTTP status) and raise what it makes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from ..handler import ToolChatHandler

__all__ = [
    "AsgiMessage",
    "ErrorFactory",
    "ModelLease",
    "Receive",
    "Scope",
    "Send",
    "error_field",
    "find_handler",
    "read_json",
    "request_header",
    "send_json",
    "send_sse",
    "server_api_key",
    "server_lease",
]

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]  # an ASGI event, not a chat message
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
ModelLease = Callable[[], contextlib.AbstractAsyncContextManager[Callable[[str | None], Any]]]
"""An async context manager yielding the server's model proxy (``model alias -> Llama``)."""

ErrorFactory = Callable[[str], Exception]
"""An endpoint's error class (its default status is 400)."""


def error_field(error: Exception) -> str | None:
    """The request field a refusal names: its own ``param``, or the field its text starts with
    (``tools`` for a tool's schema, which the library names as ``tool 'x'``)."""
    given = getattr(error, "param", None)
    if isinstance(given, str):
        return given
    text = str(error)
    for field in ("messages", "tools", "tool_choice", "response_format"):
        if text.startswith(field) or (field == "tools" and text.startswith("tool '")):
            return field
    return None


def find_handler(llama: Any, *, path: str, error: ErrorFactory) -> ToolChatHandler:
    """The ``ToolChatHandler`` a loaded model is served with, or ``error`` saying what to do."""
    from llama_cpp import llama_chat_format

    found: Any = getattr(llama, "chat_handler", None)
    if found is None:
        try:
            found = llama_chat_format.get_chat_completion_handler(llama.chat_format)
        except ValueError:
            found = None
    found = getattr(found, "handler", found)  # the serve layer's RequestExtrasHandler
    if not isinstance(found, ToolChatHandler):
        raise error(
            f"{path} needs the model served with chat_format=tooldialect (the default of "
            f"tooldialect serve); this one uses {getattr(llama, 'chat_format', None)!r}"
        )
    return found


def server_lease() -> contextlib.AbstractAsyncContextManager[Callable[[str | None], Any]]:
    """The server's own model proxy, under its model lock (what its chat route uses)."""
    from llama_cpp.server.app import get_llama_proxy

    return contextlib.asynccontextmanager(get_llama_proxy)()


def server_api_key() -> str | None:
    """The server's ``--api_key`` (``None``: none is required)."""
    from llama_cpp.server import app

    settings = next(getattr(app, "get_server_settings")())  # noqa: B009  (untyped upstream)
    key = getattr(settings, "api_key", None)
    return str(key) if key else None


def request_header(scope: Scope, name: bytes) -> str:
    """A request header's value (``""`` when absent); ``name`` in lower case, as ASGI gives it."""
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
    return headers.get(name, b"").decode("latin-1")


async def read_json(receive: Receive, *, error: ErrorFactory) -> Any:
    """The request body, parsed (``None`` when empty); ``error`` when it is not JSON."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise error("the client went away before sending the request body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    try:
        return json.loads(b"".join(chunks) or b"null")
    except ValueError as exc:  # not JSON, or not UTF-8
        raise error(f"the request body is not JSON: {exc}") from exc


async def send_json(send: Send, status: int, value: Any) -> None:
    """One JSON response."""
    body = json.dumps(value).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _sse(event: Mapping[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


async def send_sse(
    send: Send,
    events: AsyncIterator[Mapping[str, Any]],
    *,
    failure: Callable[[Exception], Mapping[str, Any]],
    refusal: Callable[[Exception], Exception | None] | None = None,
) -> None:
    """The events as SSE. The status line waits for the first event, so an error raised before
    it that ``refusal`` turns into the endpoint's error (a refused prompt) is still answered as
    a JSON error with a 4xx; any other propagates. An error after it is one last event,
    ``failure``'s (the status line is sent, so the stream says it)."""
    try:
        first = await anext(events)
    except StopAsyncIteration:
        first = None
    except Exception as exc:
        refused = refusal(exc) if refusal is not None else None
        if refused is None:
            raise
        raise refused from exc
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    try:
        if first is not None:
            await send({"type": "http.response.body", "body": _sse(first), "more_body": True})
        async for event in events:
            await send({"type": "http.response.body", "body": _sse(event), "more_body": True})
    except Exception as exc:  # mid-stream
        await send({"type": "http.response.body", "body": _sse(failure(exc)), "more_body": True})
    await send({"type": "http.response.body", "body": b""})
