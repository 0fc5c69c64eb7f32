"""``/v1/messages`` and ``/v1/messages/count_tokens`` as ASGI endpoints on llama-cpp-python's
server app.

``POST /v1/messages`` converts the request (``convert``), calls the served ``ToolChatHandler``
with the model the server loaded (under the server's own model lock, as its chat route does),
and converts the chunks back (``events``): an SSE stream of Messages events, or the Message the
same stream folds into. ``POST /v1/messages/count_tokens`` renders the same prompt and counts
its tokens. Plain ASGI (not a FastAPI function) so one task holds the lock from the first token
to the last event, and a request the handler refuses is a 400 before any byte is streamed.
Errors are Anthropic's shape (``convert.MessagesError``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ...engine.base import GenerationResult
from ...errors import ToolDialectError
from ...frontend.response import usage as chat_usage
from ...handler import ToolChatHandler
from .convert import ChatRequest, MessagesError, count_request, messages_request
from .events import MessageStream

__all__ = ["COUNT_PATH", "MESSAGES_PATH", "MessagesEndpoint", "mount_messages", "served_handler"]

MESSAGES_PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ModelLease = Callable[[], contextlib.AbstractAsyncContextManager[Callable[[str | None], Any]]]
"""An async context manager yielding the server's model proxy (``model alias -> Llama``)."""

REFUSALS = (ToolDialectError, ValueError)
"""What a request's own content raises: the library's refusals, and llama-cpp-python's
``ValueError`` (a prompt over the context window, text that does not encode)."""


def refusal(exc: Exception) -> MessagesError:
    """A refusal as a 400: the library's errors say what is wrong; another (llama-cpp-python's
    ``ValueError``) is named by its type too."""
    if isinstance(exc, ToolDialectError):
        return MessagesError(str(exc))
    return MessagesError(f"{type(exc).__name__}: {exc}")


def served_handler(llama: Any) -> ToolChatHandler:
    """The ``ToolChatHandler`` a loaded model is served with, or a 400 saying what to do."""
    from llama_cpp import llama_chat_format

    found: Any = getattr(llama, "chat_handler", None)
    if found is None:
        try:
            found = llama_chat_format.get_chat_completion_handler(llama.chat_format)
        except ValueError:
            found = None
    found = getattr(found, "handler", found)  # the serve layer's RequestExtrasHandler
    if not isinstance(found, ToolChatHandler):
        raise MessagesError(
            f"{MESSAGES_PATH} needs the model served with chat_format=tooldialect (the default "
            f"of tooldialect serve); this one uses {getattr(llama, 'chat_format', None)!r}"
        )
    return found


def _server_lease() -> contextlib.AbstractAsyncContextManager[Callable[[str | None], Any]]:
    from llama_cpp.server.app import get_llama_proxy

    return contextlib.asynccontextmanager(get_llama_proxy)()


def _server_api_key() -> str | None:
    from llama_cpp.server import app

    settings = next(getattr(app, "get_server_settings")())  # noqa: B009  (untyped upstream)
    key = getattr(settings, "api_key", None)
    return str(key) if key else None


class MessagesEndpoint:
    """The ASGI app of ``/v1/messages`` and ``/v1/messages/count_tokens``.

    ``lease``: how to borrow the model (the server's proxy and lock by default); ``handler_for``:
    the handler of a loaded model; ``api_key``: the key to require, as ``x-api-key`` (what
    Anthropic's clients send) or a bearer token (by default the server's ``--api_key``). Tests
    pass fakes for the three.
    """

    def __init__(
        self,
        *,
        lease: ModelLease = _server_lease,
        handler_for: Callable[[Any], Any] = served_handler,
        api_key: Callable[[], str | None] = _server_api_key,
    ) -> None:
        self.lease = lease
        self.handler_for = handler_for
        self.api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if not self._authorized(scope):
                raise MessagesError("invalid x-api-key", status=401)
            if scope.get("method") != "POST":
                raise MessagesError(f"{scope.get('method')} is not served here", status=405)
            body = await _read_json(receive)
            if str(scope.get("path", "")).rstrip("/").endswith("/count_tokens"):
                await _send_json(send, 200, await self._count(body))
            else:
                await self._create(body, send)
        except MessagesError as exc:
            await _send_json(send, exc.status, exc.payload())

    def _authorized(self, scope: Scope) -> bool:
        key = self.api_key()
        if not key:
            return True
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        given = headers.get(b"x-api-key", b"").decode("latin-1")
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        return key in (given, bearer.removeprefix("Bearer "))

    async def _count(self, body: Any) -> dict[str, int]:
        request = count_request(body)
        from starlette.concurrency import run_in_threadpool

        async with self.lease() as proxy:
            llama = proxy(request.model)
            handler = self.handler_for(llama)
            try:
                return {"input_tokens": await run_in_threadpool(_count, handler, llama, request)}
            except REFUSALS as exc:
                raise refusal(exc) from exc

    async def _create(self, body: Any, send: Send) -> None:
        request = messages_request(body)
        from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

        async with self.lease() as proxy:
            llama = proxy(request.model)
            handler = self.handler_for(llama)
            try:
                # the engine's account of this request comes with it (usage, the stop string)
                done = await run_in_threadpool(
                    lambda: handler.complete(
                        llama=llama, messages=request.messages, stream=True, **request.kwargs
                    )
                )
            except REFUSALS as exc:  # the library's refusal names the bad value
                raise refusal(exc) from exc
            chunks: Iterator[dict[str, Any]] = done.response
            result: GenerationResult = done.result
            builder = MessageStream(
                model=request.model,
                stop_sequences=request.stop_sequences,
                live_usage=lambda: dict(chat_usage(result)),
            )
            if request.stream:
                events = _events(builder, iterate_in_threadpool(chunks), result)
                await _send_sse(send, events)
                return
            # a batch response is the stream drained: both are the same object by construction
            try:
                await run_in_threadpool(
                    lambda: builder.run(chunks, stopped_by=lambda: result.stopped_by)
                )
            except REFUSALS as exc:
                raise refusal(exc) from exc
        await _send_json(send, 200, builder.message)


def _count(handler: Any, llama: Any, request: ChatRequest) -> int:
    """Tokens of the prompt ``request`` renders, counted as generation counts them."""
    prepared = handler.prepare(llama=llama, messages=request.messages, **request.kwargs)
    engine = handler.setup(llama).engine
    tokenize = getattr(engine, "tokenize_prompt", None)
    if tokenize is not None:
        return len(tokenize(prepared.prompt))
    return len(llama.tokenize(prepared.prompt.encode("utf-8"), add_bos=True, special=True))


async def _events(
    builder: MessageStream, chunks: AsyncIterator[dict[str, Any]], result: GenerationResult
) -> AsyncIterator[dict[str, Any]]:
    async for chunk in chunks:
        for event in builder.feed(chunk):
            yield event
    for event in builder.finish(stopped_by=result.stopped_by):
        yield event


def mount_messages(app: Any) -> MessagesEndpoint:
    """Add ``/v1/messages`` and ``/v1/messages/count_tokens`` to llama-cpp-python's app."""
    from starlette.routing import Route

    endpoint = MessagesEndpoint()
    app.router.routes.append(Route(MESSAGES_PATH, endpoint, methods=["POST"]))
    app.router.routes.append(Route(COUNT_PATH, endpoint, methods=["POST"]))
    return endpoint


async def _read_json(receive: Receive) -> Any:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise MessagesError("the client went away before sending the request body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    try:
        return json.loads(b"".join(chunks) or b"null")
    except ValueError as exc:  # not JSON, or not UTF-8
        raise MessagesError(f"the request body is not JSON: {exc}") from exc


async def _send_json(send: Send, status: int, value: Any) -> None:
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


async def _send_sse(send: Send, events: AsyncIterator[dict[str, Any]]) -> None:
    """The events as SSE. The status line waits for the first event (which comes once the
    prompt is decoded), so a refusal raised before it is still a JSON error with a 4xx."""
    try:
        first = await anext(events)
    except REFUSALS as exc:
        raise refusal(exc) from exc
    except StopAsyncIteration:
        first = None
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
    except Exception as exc:  # mid-stream: the status line is sent, so the stream says it
        status = 400 if isinstance(exc, REFUSALS) else 500
        failure = MessagesError(f"{type(exc).__name__}: {exc}", status=status).payload()
        await send({"type": "http.response.body", "body": _sse(failure), "more_body": True})
    await send({"type": "http.response.body", "body": b""})
