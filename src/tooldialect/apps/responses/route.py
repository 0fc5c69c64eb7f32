"""``/v1/responses`` as an ASGI endpoint mounted on llama-cpp-python's server app.

``POST /v1/responses`` converts the request (``convert``), calls the served ``ToolChatHandler``
with the model the server loaded (under the server's own model lock, as its chat route does),
and converts the chunks back (``events``): an SSE stream of Responses events, or the Response
object the same stream ends with. ``GET`` / ``DELETE /v1/responses/{id}`` read and drop stored
responses. Plain ASGI (not a FastAPI function) so one task holds the lock from the first token
to the last event, and a request the handler refuses is a 400 before any byte is streamed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from ...errors import ToolDialectError
from ...frontend.pipeline import model_name
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
from .convert import ChatRequest, ResponsesError, chat_request
from .events import ResponseStream
from .store import ResponseStore

__all__ = ["RESPONSES_PATH", "ResponsesEndpoint", "mount_responses"]

RESPONSES_PATH = "/v1/responses"

logger = logging.getLogger("tooldialect.serve")


def error_param(exc: Exception) -> str | None:
    """The request field a library error names, in a Responses body (chat ``messages`` come
    from ``input``)."""
    field = error_field(exc)
    return "input" if field == "messages" else field


def served_handler(llama: Any) -> ToolChatHandler:
    """The ``ToolChatHandler`` a loaded model is served with, or a 400 saying what to do."""
    return find_handler(llama, path=RESPONSES_PATH, error=ResponsesError)


def stream_failure(exc: Exception) -> dict[str, Any]:
    """The last event of a stream that broke off."""
    return {
        "type": "error",
        "sequence_number": -1,
        "code": "server_error",
        "message": f"{type(exc).__name__}: {exc}",
        "param": None,
    }


class ResponsesEndpoint:
    """The ASGI app of ``/v1/responses`` and ``/v1/responses/{id}``.

    ``lease``: how to borrow the model (the server's proxy and lock by default); ``handler_for``:
    the handler of a loaded model; ``api_key``: the bearer key to require (by default the
    server's ``--api_key``). Tests pass fakes for the three.
    """

    def __init__(
        self,
        *,
        store: ResponseStore | None = None,
        lease: ModelLease = server_lease,
        handler_for: Callable[[Any], Any] = served_handler,
        api_key: Callable[[], str | None] = server_api_key,
    ) -> None:
        self.store = store if store is not None else ResponseStore()
        self.lease = lease
        self.handler_for = handler_for
        self.api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if not self._authorized(scope):
                raise ResponsesError("Invalid API key", status=401)
            method = scope.get("method")
            rest = str(scope.get("path", "")).rstrip("/").split(RESPONSES_PATH, 1)[-1].strip("/")
            if rest and method == "GET":
                await send_json(send, 200, self.store.get(rest).response)
            elif rest and method == "DELETE":
                if not self.store.delete(rest):
                    self.store.get(rest)  # the 404, worded once
                await send_json(
                    send, 200, {"id": rest, "object": "response.deleted", "deleted": True}
                )
            elif not rest and method == "POST":
                await self._create(await read_json(receive, error=ResponsesError), send)
            else:
                raise ResponsesError(f"{method} {scope.get('path')} is not served", status=405)
        except ResponsesError as exc:
            logger.warning("refused a request (%d): %s", exc.status, exc)  # one line, no trace
            await send_json(send, exc.status, exc.payload())

    def _authorized(self, scope: Scope) -> bool:
        key = self.api_key()
        if not key:
            return True
        return request_header(scope, b"authorization") == f"Bearer {key}"

    async def _create(self, body: Any, send: Send) -> None:
        previous: list[dict[str, Any]] = []
        if isinstance(body, Mapping) and body.get("previous_response_id"):
            previous = self.store.get(str(body["previous_response_id"])).history
        request = chat_request(body, previous=previous)
        from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

        async with self.lease() as proxy:
            llama = proxy(request.model)
            handler = self.handler_for(llama)
            try:
                chunks: Iterator[dict[str, Any]] = await run_in_threadpool(
                    handler, llama=llama, messages=request.messages, stream=True, **request.kwargs
                )
            except ToolDialectError as exc:  # the library's refusal names the bad value
                raise ResponsesError(str(exc), param=error_param(exc)) from exc
            builder = ResponseStream(
                model=request.model or model_name(getattr(llama, "model_path", None)),
                echo=request.echo,
            )
            if request.stream:
                events = self._events(builder, iterate_in_threadpool(chunks), request)
                await send_sse(send, events, failure=stream_failure)
                return
            # a batch response is the stream drained: both are the same object by construction
            try:
                await run_in_threadpool(lambda: builder.run(chunks))
            except ValueError as exc:  # llama-cpp-python's "exceeds context window"...
                raise ResponsesError(f"{type(exc).__name__}: {exc}") from exc
        self._remember(builder, request)
        await send_json(send, 200, builder.response)

    async def _events(
        self, builder: ResponseStream, chunks: AsyncIterator[dict[str, Any]], request: ChatRequest
    ) -> AsyncIterator[dict[str, Any]]:
        for event in builder.start():
            yield event
        async for chunk in chunks:
            for event in builder.feed(chunk):
                yield event
        events = builder.finish()
        self._remember(builder, request)
        for event in events:
            yield event

    def _remember(self, builder: ResponseStream, request: ChatRequest) -> None:
        if request.store:
            self.store.put(builder.response, [*request.history, builder.chat_message()])


def mount_responses(app: Any, *, store: ResponseStore | None = None) -> ResponsesEndpoint:
    """Add ``/v1/responses`` (and ``/v1/responses/{id}``) to llama-cpp-python's FastAPI app."""
    from starlette.routing import Route

    endpoint = ResponsesEndpoint(store=store)
    app.router.routes.append(Route(RESPONSES_PATH, endpoint, methods=["POST"]))
    app.router.routes.append(
        Route(RESPONSES_PATH + "/{response_id}", endpoint, methods=["GET", "DELETE"])
    )
    return endpoint
