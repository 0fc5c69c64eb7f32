"""Live MCP sessions on a private event loop, reachable from sync code.

The SDK is async and its contexts (the stdio child process, the HTTP session) must be entered
and left by one task, so each server gets a task that opens its ``Client``, waits for ``stop``,
and closes it; calls run as other tasks on the same loop. The loop lives in a daemon thread,
because ``Agent`` is sync and may itself run inside a notebook's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any, TextIO, TypeVar

from ...errors import MCPError
from ..python_tool import ToolResult
from . import supervise
from .config import MCPServerConfig
from .mcp_values import failure, result_from_mcp

__all__ = ["BackgroundLoop", "ServerConnection"]

log = logging.getLogger("tooldialect.mcp")
T = TypeVar("T")


class BackgroundLoop:
    """An asyncio loop in a daemon thread; ``run(coro)`` waits for a result from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="tooldialect-mcp", daemon=True
        )
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for it (a Ctrl-C while waiting cancels it)."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop and its thread (after the sessions were closed)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class ServerConnection:
    """One MCP server: its session, its tool listing, and whether it is still there."""

    def __init__(self, config: MCPServerConfig, *, errlog: TextIO | None = None) -> None:
        self.config = config
        self.client: Any = None
        self.dead: str | None = None
        """Why the server can no longer be used (``None`` while it can)."""
        self.stale = True
        """The tool listing must be fetched again (set by ``list_changed``)."""
        self._errlog = errlog
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stderr: StderrTail | None = None

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self, *, timeout: float) -> None:
        """Open the session; raises ``MCPError`` saying why a server did not come up."""
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except asyncio.TimeoutError:
            await self.stop()
            raise MCPError(
                f"MCP server {self.name!r} did not answer within {timeout:g} s of starting "
                f"({self._how()}); check it runs on its own, or raise startup_timeout"
            ) from None
        except MCPError:
            raise
        except Exception as exc:
            said, ended = "", None
            if self._stderr is not None:
                said, ended = self._stderr.tail(), self._stderr.ending()
            said = f"; its stderr ended with:\n{said}" if said else ""
            why = f"{ended} (the session saw {cause(exc)})" if ended else cause(exc)
            raise MCPError(
                f"MCP server {self.name!r} could not be started ({self._how()}): {why}{said}"
            ) from exc

    def _how(self) -> str:
        c = self.config
        return f"command {' '.join([c.command or '', *c.args])!r}" if c.command else f"url {c.url}"

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Enter the client, hold it open until ``stop``, leave it (in this one task)."""
        from mcp import Client

        assert self._stop is not None
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(transport, message_handler=self._on_message)
                self.client = await stack.enter_async_context(client)
                if self._stderr is not None:  # the child holds its own copy now
                    self._stderr.close_writer()
                listener = None
                if _listens(client):
                    listener = asyncio.create_task(self._listen(client))
                ready.set_result(None)
                await self._stop.wait()
                if listener is not None:
                    listener.cancel()
                    with contextlib.suppress(BaseException):
                        await listener
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPError(repr(exc)))
            elif not self._stop.is_set():
                self.dead = self.dead or f"its session ended ({type(exc).__name__}: {exc})"
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None
            self.dead = self.dead or "it was closed"

    async def _transport(self, stack: AsyncExitStack) -> Any:
        c = self.config
        if c.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # through the supervisor, which tells the exit code the SDK keeps to itself
            params = StdioServerParameters(
                command=sys.executable,
                args=["-I", supervise.__file__, "--", c.command, *c.args],
                env=dict(c.env) or None,
                cwd=c.cwd,
            )
            self._stderr = StderrTail(self._errlog or sys.stderr)
            stack.callback(self._stderr.close_writer)
            return stdio_client(params, errlog=self._stderr.writer)
        import httpx2  # the SDK's HTTP client
        from mcp.client.streamable_http import streamable_http_client

        # the SDK's own defaults: 30 s to connect and write, 300 s for a held-open event stream
        timeouts = httpx2.Timeout(30.0, read=300.0)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(c.headers), timeout=timeouts)
        )
        assert c.url is not None
        return streamable_http_client(c.url, http_client=http)

    async def _on_message(self, message: Any) -> None:
        """Session-era servers push ``notifications/tools/list_changed`` here."""
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            self.stale = True

    async def _listen(self, client: Any) -> None:
        """2026-era servers announce changes on a ``subscriptions/listen`` stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.stale = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no subscription: the listing is then fetched once
            log.debug("MCP server %r: no change subscription (%s)", self.name, exc)

    async def list_tools(self) -> list[Any]:
        """Every tool the server publishes (all pages)."""
        if self.client is None:
            raise MCPError(f"MCP server {self.name!r} is not running: {self.dead}")
        self.stale = False  # a change announced while listing marks it stale again
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(1000):
            page = await self.client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> ToolResult:
        """Run ``tool``; every failure comes back as a ``ToolResult`` the model can read."""
        from mcp.shared.exceptions import MCPError as SDKError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        where = f"{tool} on MCP server {self.name!r}"
        if self.client is None or self.dead is not None:
            return failure("server_down", f"{where} cannot run: the server is down ({self.dead})")
        try:
            result = await asyncio.wait_for(
                self.client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                timeout + 1.0,  # the SDK's own timeout should fire first; this one is a backstop
            )
        except (asyncio.TimeoutError, TimeoutError):
            return failure("timeout", f"{where} did not answer within {timeout:g} s")
        except SDKError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return failure("timeout", f"{where} did not answer within {timeout:g} s")
            if exc.code == CONNECTION_CLOSED:
                self.dead = f"it exited or closed the connection during a call to {tool}"
                return failure("server_down", f"{where}: the server died during the call")
            return failure("tool_error", f"{where} failed: {exc.message}", raw=exc)
        except Exception as exc:  # a transport error, a malformed reply
            if self.dead is not None:
                return failure("server_down", f"{where}: the server is down ({self.dead})")
            return failure("tool_error", f"{where} failed: {type(exc).__name__}: {exc}")
        return result_from_mcp(self.name, tool, result)

    async def stop(self) -> None:
        """Close the session (a stdio server's process is ended by the SDK)."""
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 15)
            self._task = None


class StderrTail:
    """A stdio server's stderr: passed on to ``errlog`` as it comes, its last lines kept, so a
    server that dies at start says why (a ``ModuleNotFoundError``, a bad path...), and the
    supervisor's exit status taken out of it."""

    def __init__(self, errlog: TextIO, *, lines: int = 12) -> None:
        read, write = os.pipe()
        self.writer = os.fdopen(write, "w")
        self._errlog = errlog
        self._lines: deque[str] = deque(maxlen=lines)
        self.status: dict[str, Any] | None = None
        """How the server ended, as the supervisor told it (``code``, maybe ``error``)."""
        self._thread = threading.Thread(target=self._pump, args=(read,), daemon=True)
        self._thread.start()

    def _pump(self, fd: int) -> None:
        with os.fdopen(fd, encoding="utf-8", errors="replace") as source:
            for line in source:
                text, status = supervise.read_mark(line)
                if status is not None:
                    self.status = status
                    if not text:
                        continue
                    text += "\n"
                self._lines.append(text.rstrip("\n"))
                with contextlib.suppress(Exception):  # a closed errlog must not stop the pump
                    self._errlog.write(text)
                    self._errlog.flush()

    def close_writer(self) -> None:
        """Drop this process's copy of the write end: the pump ends when the server exits."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def tail(self, *, wait: float = 2.0) -> str:
        """The last lines written (waiting up to ``wait`` s for a server that is exiting)."""
        self.close_writer()
        self._thread.join(wait)
        return "\n".join(f"  {line}" for line in self._lines)

    def ending(self) -> str | None:
        """How the server ended, in words (``None`` while it runs or if it was not told)."""
        if self.status is None:
            return None
        code = self.status["code"]
        if "error" in self.status:
            return f"it could not be run, exit code {code}: {self.status['error']}"
        if code < 0:
            return f"it was killed by {signal_name(-code)} (exit code {128 - code})"
        return f"it exited with code {code}"


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9 (the number itself where the platform has no name for it)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def cause(exc: BaseException) -> str:
    """``Type: message`` of what really failed: the leaves of an ``ExceptionGroup`` (anyio
    wraps a dead server's or a refused connection's error in one)."""
    leaves = getattr(exc, "exceptions", None)  # an ExceptionGroup (or its backport on 3.10)
    if isinstance(leaves, (list, tuple)) and leaves:
        return "; ".join(cause(e) for e in leaves)
    if exc.__cause__ is not None and not str(exc):
        return cause(exc.__cause__)
    said = f"{type(exc).__name__}: {exc}"
    system = system_error(exc)
    return f"{said} ({type(system).__name__}: {system})" if system is not None else said


def system_error(exc: BaseException) -> OSError | None:
    """The operating system's own error under ``exc`` (a refused connection under httpx's
    ``ConnectError: All connection attempts failed``), when it is not ``exc`` itself."""
    found: OSError | None = None
    seen: set[int] = set()
    link = exc.__cause__ or exc.__context__
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, OSError) and link.errno is not None:
            found = link
        link = link.__cause__ or link.__context__
    return found if not isinstance(exc, OSError) or exc.errno is None else None


def _listens(client: Any) -> bool:
    """The server is 2026-era and announces tool list changes."""
    try:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        return bool(tools and tools.list_changed) and (
            client.protocol_version in MODERN_PROTOCOL_VERSIONS
        )
    except Exception:
        return False
