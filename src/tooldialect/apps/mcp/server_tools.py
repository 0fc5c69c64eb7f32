"""``MCPTools``: the tools of MCP servers as ``Tool`` objects an ``Agent`` runs.

Servers start once, on :meth:`MCPTools.start` (or entering the ``with`` block), concurrently.
Their listings are cached until a server announces ``tools/list_changed``. Each MCP tool becomes
an :class:`MCPTool` named ``<server>_<tool>``; its parameters are the server's input schema,
checked against the grammar compiler first. A schema the compiler cannot express is an
``UnsupportedSchemaError`` naming the server and the tool: by default that one tool is skipped
with a warning (listed in :attr:`MCPTools.skipped`) and the others are offered;
``on_unsupported="raise"`` raises instead. A call's failures (``isError``, a timeout, a server
that died, a transport error) come back as ``ToolResult`` s the model reads; they never raise.

Closing (the ``with`` block's end, :meth:`MCPTools.close`, garbage collection or interpreter
exit, also after Ctrl-C) ends every session; the SDK terminates stdio server processes.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, create_model

from ...errors import MCPError, MCPToolNameError, ToolSpecError, UnsupportedSchemaError
from ...tool_defs import normalize_tools
from ..python_tool import Tool, ToolResult, decode_arguments
from .config import MCPServerConfig, load_mcp_config
from .connection import BackgroundLoop, ServerConnection
from .mcp_values import Naming, check_schema, make_name

__all__ = ["MCPServers", "MCPTool", "MCPTools", "require_mcp"]

MCPServers = (
    str | os.PathLike[str] | Mapping[str, Any] | MCPServerConfig | Sequence[MCPServerConfig]
)
"""A path to an ``mcpServers`` JSON file, its parsed object, or server configs."""

_ANY_OBJECT: type[BaseModel] = create_model("MCPArguments", __config__=ConfigDict(extra="allow"))


def require_mcp() -> None:
    """Raise ``MCPError`` with the install hint when the SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise MCPError(
            "MCP tools need the official MCP SDK: pip install 'tooldialect[mcp]' "
            f"(or pip install 'mcp>=2,<3'); importing it failed: {exc}"
        ) from exc


class MCPTool(Tool):
    """One tool of an MCP server. Calling it runs it on the server and returns a ``ToolResult``.

    The arguments are checked to be a JSON object and sent as they are: the server validates
    them against its own schema (and the grammar already held the model to it).
    """

    def __init__(
        self, *, owner: MCPTools, server: str, remote_name: str, name: str, mcp_tool: Any
    ) -> None:
        schema = check_schema(server, remote_name, getattr(mcp_tool, "input_schema", None))
        description = getattr(mcp_tool, "description", None) or ""
        try:
            definition = normalize_tools(
                [{"name": name, "description": description, "parameters": schema}]
            )[0]
        except ToolSpecError as exc:
            raise MCPToolNameError(
                f"MCP server {server!r}, tool {remote_name!r}: {exc}; choose another naming="
            ) from exc

        async def call_on_server(**arguments: Any) -> ToolResult:
            return await owner.acall(server, remote_name, arguments)

        call_on_server.__name__ = name
        super().__init__(call_on_server, definition, _ANY_OBJECT)
        self.server = server
        """The server's name."""
        self.remote_name = remote_name
        """The tool's name on the server."""
        self.mcp_tool = mcp_tool
        """The server's ``mcp.types.Tool`` (annotations, output schema...)."""

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server!r}, tool={self.remote_name!r})"

    def validate(
        self, arguments: str | Mapping[str, Any] | None
    ) -> tuple[list[Any], dict[str, Any]]:
        """The arguments as keyword arguments; only JSON-object-ness is checked here."""
        return [], decode_arguments(self.name, arguments)


class MCPTools:
    """The tools of one or more MCP servers (see the module docstring).

    ``servers``: an ``mcpServers`` JSON path or object, or :class:`MCPServerConfig` s.
    ``naming``: ``"{server}_{tool}"`` or another format string, or ``fn(server, tool)``; two
    tools given one name raise ``MCPToolNameError``. ``timeout``: seconds per call (a server's
    own ``timeout`` wins). ``startup_timeout``: seconds for a server to come up.
    ``on_unsupported``: ``"skip"`` (warn, list in :attr:`skipped`) or ``"raise"``.
    ``errlog``: where stdio servers' stderr goes (default ``sys.stderr``).
    """

    def __init__(
        self,
        servers: MCPServers,
        *,
        naming: Naming = "{server}_{tool}",
        timeout: float = 60.0,
        startup_timeout: float = 30.0,
        on_unsupported: Literal["skip", "raise"] = "skip",
        errlog: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if on_unsupported not in ("skip", "raise"):
            raise MCPError(f"on_unsupported must be 'skip' or 'raise', got {on_unsupported!r}")
        if isinstance(servers, MCPServerConfig):
            configs = [servers]
        elif isinstance(servers, (str, os.PathLike, Mapping)):
            configs = load_mcp_config(servers, environ=environ)
        else:
            configs = list(servers)
        names = [c.name for c in configs]
        if len(set(names)) != len(names):
            raise MCPError(f"two MCP servers share a name: {names!r}")
        self.configs = configs
        self.naming = naming
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.on_unsupported = on_unsupported
        self.skipped: list[UnsupportedSchemaError] = []
        """Tools not offered because the grammar compiler cannot express their schema."""
        self._errlog = errlog
        self._loop: BackgroundLoop | None = None
        self._connections: dict[str, ServerConnection] = {}
        self._listed: dict[str, list[Any]] = {}
        self._tools: list[Tool] | None = None
        self._warned: set[tuple[str, str]] = set()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        state = "running" if self._loop else "stopped"
        return f"MCPTools(servers={[c.name for c in self.configs]}, {state})"

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> MCPTools:
        """Start every server (once) and fetch their tool lists; raises ``MCPError`` for a server
        that does not come up (the others are stopped again)."""
        if self._loop is not None:
            return self
        require_mcp()
        loop = self._loop = BackgroundLoop()
        self._connections = {c.name: ServerConnection(c, errlog=self._errlog) for c in self.configs}
        connections = list(self._connections.values())
        self._finalizer = weakref.finalize(self, _shutdown, loop, connections)
        try:
            loop.run(self._start_all(connections))
            self.tools()
        except BaseException:  # Ctrl-C included: nothing may be left running
            self.close()
            raise
        return self

    async def _start_all(self, connections: list[ServerConnection]) -> None:
        import asyncio

        results = await asyncio.gather(
            *(c.start(timeout=self.startup_timeout) for c in connections), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise failed[0]

    def close(self) -> None:
        """Stop every server. Safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()
        self._loop = None
        self._tools = None

    def __enter__(self) -> MCPTools:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- tools -------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """The offered tools, re-listed from the servers that announced a change."""
        loop = self._require_started()
        stale = [c for c in self._connections.values() if c.stale and c.dead is None]
        for conn in stale:
            try:
                self._listed[conn.name] = loop.run(conn.list_tools(), timeout=self.startup_timeout)
            except Exception as exc:  # keep the old listing: its calls will say what is wrong
                if conn.name not in self._listed:
                    raise MCPError(
                        f"MCP server {conn.name!r}: listing its tools failed: {exc}"
                    ) from exc
        if stale or self._tools is None:
            self._tools = self._build()
        return list(self._tools)

    def _build(self) -> list[Tool]:
        made: dict[str, MCPTool] = {}
        problems: list[UnsupportedSchemaError] = []
        for server, listing in self._listed.items():
            for remote in listing:
                name = make_name(self.naming, server, remote.name)
                try:
                    made_tool = MCPTool(
                        owner=self,
                        server=server,
                        remote_name=remote.name,
                        name=name,
                        mcp_tool=remote,
                    )
                except UnsupportedSchemaError as exc:
                    problems.append(exc)
                    continue
                if name in made:
                    other = made[name]
                    raise MCPToolNameError(
                        f"MCP tools {other.server}:{other.remote_name} and {server}:{remote.name} "
                        f"would both be called {name!r}; pass MCPTools(naming=...) (the default "
                        "'{server}_{tool}' keeps servers apart) or rename a server"
                    )
                made[name] = made_tool
        self.skipped = problems
        if problems and self.on_unsupported == "raise":
            every = "; ".join(str(p) for p in problems)
            raise UnsupportedSchemaError(every, pointer=problems[0].pointer)
        for p in problems:
            key = (str(p), p.pointer)
            if key not in self._warned:
                self._warned.add(key)
                warnings.warn(str(p), stacklevel=3)
        return list(made.values())

    # ---- calls -------------------------------------------------------------------------------

    async def acall(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Run ``tool`` on ``server`` from any event loop; failures come back as results."""
        import asyncio

        loop = self._require_started()
        conn = self._connections[server]
        timeout = conn.config.timeout or self.timeout
        future = loop.submit(conn.call(tool, arguments, timeout=timeout))
        return await asyncio.wrap_future(future)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run the offered tool ``name`` (as the model would) and wait for its result."""
        found = {t.name: t for t in self.tools()}.get(name)
        if not isinstance(found, MCPTool):
            raise MCPToolNameError(
                f"no MCP tool named {name!r}; offered: {sorted(t.name for t in self.tools())}"
            )
        loop = self._require_started()
        conn = self._connections[found.server]
        timeout = conn.config.timeout or self.timeout
        return loop.run(conn.call(found.remote_name, dict(arguments or {}), timeout=timeout))

    def _require_started(self) -> BackgroundLoop:
        if self._loop is None:
            raise MCPError("MCPTools is not started; use it in a 'with' block or call start()")
        return self._loop


def _shutdown(loop: BackgroundLoop, connections: list[ServerConnection]) -> None:
    """Close every session, then the loop (also run by the finalizer at interpreter exit)."""
    import asyncio

    async def stop_all() -> None:
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    try:
        if not loop.loop.is_closed():
            loop.run(stop_all(), timeout=30)
    except Exception as exc:  # a session that will not close must not keep the others open
        warnings.warn(f"closing MCP servers: {exc}", stacklevel=2)
    finally:  # also after a second Ctrl-C here
        loop.stop()
