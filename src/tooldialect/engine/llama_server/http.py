"""A small HTTP/1.1 client for llama-server: JSON requests and server-sent-event streams.

The standard library only (``http.client``): the server engine adds no dependency. Every call has
a timeout; a failure before the response status arrives is a ``Unreachable`` (safe to send the
request elsewhere), anything after it is the caller's to judge.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...errors import ServerError

__all__ = ["HttpStatusError", "Unreachable", "get_json", "open_post", "read_json", "read_sse"]


class Unreachable(ServerError):
    """The server could not be reached or closed the connection before answering."""


@dataclass
class HttpStatusError(ServerError):
    """The server answered with a non-2xx status."""

    status: int
    """The HTTP status code."""
    body: str
    """The response body, for the error message."""

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.body[:300]}"


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(host, parts.port, timeout=timeout)
    return conn, parts.path.rstrip("/")


def _request(
    url: str, method: str, path: str, body: Mapping[str, Any] | None, timeout: float
) -> http.client.HTTPResponse:
    conn, base = _connection(url, timeout)
    data = json.dumps(body).encode("utf-8") if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        conn.request(method, base + path, body=data, headers=headers)
        response = conn.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise Unreachable(f"{url}{path}: {exc}") from exc
    if response.status >= 300:
        text = response.read().decode("utf-8", "replace")
        conn.close()
        raise HttpStatusError(response.status, text)
    # one request per connection: the connection lets go of its socket now, which then closes
    # when the response does (conn.close() would close the response too)
    sock, conn.sock = conn.sock, None
    if sock is not None:
        sock.close()
    return response


def get_json(url: str, path: str, *, timeout: float) -> Any:
    """``GET url+path`` decoded as JSON."""
    return read_json(_request(url, "GET", path, None, timeout))


def open_post(
    url: str, path: str, body: Mapping[str, Any], *, timeout: float
) -> http.client.HTTPResponse:
    """``POST`` a JSON body; returns the open response once its status line arrived (2xx)."""
    return _request(url, "POST", path, body, timeout)


def read_json(response: http.client.HTTPResponse) -> Any:
    """The whole body of ``response`` as JSON."""
    try:
        return json.loads(response.read().decode("utf-8"))
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(f"the connection broke while reading the answer: {exc}") from exc
    finally:
        response.close()


def read_sse(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The ``data:`` events of a server-sent-event stream, decoded as JSON objects."""
    try:
        while True:
            try:
                line = response.readline()
            except (OSError, http.client.HTTPException) as exc:
                raise Unreachable(f"the stream broke: {exc}") from exc
            if not line:
                return
            # a byte that is not UTF-8 is the model's (a token that ended mid-character): it
            # becomes U+FFFD and the reply goes on
            text = line.decode("utf-8", "replace").strip()
            if not text.startswith("data:"):
                continue
            payload = text[5:].strip()
            if payload == "[DONE]":
                return
            event = json.loads(payload)
            if isinstance(event, dict):
                yield event
    finally:
        response.close()
