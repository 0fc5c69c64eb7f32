"""What the tests of the API endpoints (``/v1/responses``, ``/v1/messages``) share without a
model: a hermes reply as the handler streams it (real chunk shapes from the parser), the fake
model lease, an endpoint on Starlette's test client, and the events of an SSE body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.parse import StreamParser

HERMES = get_builtin("hermes")
REPLY = (
    "<think>The user wants weather.</think>Let me check."
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
)
USAGE = {
    "prompt_tokens": 10,
    "completion_tokens": 5,
    "total_tokens": 15,
    "prompt_tokens_details": {"cached_tokens": 4},
}


def handler_chunks(
    text: str, size: int, *, tools: list[dict[str, Any]], finish: str = "tool_calls"
) -> list[dict[str, Any]]:
    """The handler's chunks for ``text`` arriving ``size`` characters at a time (the real
    stream parser makes the deltas; ``tools`` in the chat shape)."""
    parser = StreamParser(HERMES, tools=tools)
    deltas = [{"role": "assistant"}]
    for i in range(0, len(text), size):
        deltas += parser.feed(text[i : i + size])
    deltas += parser.close(truncated=finish == "length")
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    return [
        *chunks,
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": USAGE},
    ]


@asynccontextmanager
async def fake_lease() -> AsyncIterator[Any]:
    """The server's model proxy, faked: every model alias is one stand-in model."""
    yield lambda model: "the-model"


def endpoint_client(
    endpoint: Any, routes: Mapping[str, list[str]], *, headers: dict[str, str]
) -> Any:
    """Starlette's test client of an app serving ``endpoint`` at ``routes`` (path -> methods),
    sending ``headers`` (the key) with every request."""
    testclient = pytest.importorskip("starlette.testclient")
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route(path, endpoint, methods=m) for path, m in routes.items()])
    return testclient.TestClient(app, headers=headers)


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
