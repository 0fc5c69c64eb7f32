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

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ...engine.base import GenerationResult
from ...errors import ToolDialectError
from ...frontend.response import usage as chat_usage
from ...handler import ToolChatHandler
from ..asgi import (
    ModelLease,
    Receive,
    Scope,
    Send,
    error_field,
    find_handler,
    read_json,
    request_header,
    send_json,
    send_sse,
    server_api_key,
    server_lease,
)
from .convert import ChatRequest, MessagesError, count_request, messages_request
from .events import MessageStream

__all__ = ["COUNT_PATH", "MESSAGES_PATH", "MessagesEndpoint", "mount_messages", "served_handler"]

MESSAGES_PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"

logger = logging.getLogger("tooldialect.serve")

REFUSALS = (ToolDialectError, ValueError)
"""What a request's own content raises: the library's refusals, and llama-cpp-python's
``ValueError`` (a prompt over the context window, text that does not encode)."""


def refusal(exc: Exception) -> MessagesError:
    """A refusal as a 400: the library's errors say what is wrong, led by the field they name
    as Anthropic's errors are (``tools: tool 'x', ...``); another (llama-cpp-python's
    ``ValueError``) is named by its type too."""
    if not isinstance(exc, ToolDialectError):
        return MessagesError(f"{type(exc).__name__}: {exc}")
    text, field = str(exc), error_field(exc)
    return MessagesError(f"{field}: {text}" if field and not text.startswith(field) else text)


def served_handler(llama: Any) -> ToolChatHandler:
    """The ``ToolChatHandler`` a loaded model is served with, or a 400 saying what to do."""
    return find_handler(llama, path=MESSAGES_PATH, error=MessagesError)


def opening_refusal(exc: Exception) -> MessagesError | None:
    """What an error before the first streamed event is answered with (``None``: a 500)."""
    return refusal(exc) if isinstance(exc, REFUSALS) else None


def stream_failure(exc: Exception) -> dict[str, Any]:
    """The last event of a stream that broke off: a refusal is a 400, anything else a 500."""
    status = 400 if isinstance(exc, REFUSALS) else 500
    return MessagesError(f"{type(exc).__name__}: {exc}", status=status).payload()


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
        lease: ModelLease = server_lease,
        handler_for: Callable[[Any], Any] = served_handler,
        api_key: Callable[[], str | None] = server_api_key,
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
            body = await read_json(receive, error=MessagesError)
            if str(scope.get("path", "")).rstrip("/").endswith("/count_tokens"):
                await send_json(send, 200, await self._count(body))
            else:
                await self._create(body, send)
        except MessagesError as exc:
            logger.warning("refused a request (%d): %s", exc.status, exc)  # one line, no trace
            await send_json(send, exc.status, exc.payload())

    def _authorized(self, scope: Scope) -> bool:
        key = self.api_key()
        if not key:
            return True
        given = request_header(scope, b"x-api-key")
        bearer = request_header(scope, b"authorization")
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
                # the first event comes once the prompt is decoded: a refusal before it is a 4xx
                await send_sse(send, events, failure=stream_failure, refusal=opening_refusal)
                return
            # a batch response is the stream drained: both are the same object by construction
            try:
                await run_in_threadpool(
                    lambda: builder.run(chunks, stopped_by=lambda: result.stopped_by)
                )
            except REFUSALS as exc:
                raise refusal(exc) from exc
        await send_json(send, 200, builder.message)


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
