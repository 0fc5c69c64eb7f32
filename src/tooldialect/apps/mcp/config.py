"""MCP server parameters, in code or from the ``mcpServers`` JSON that Claude Desktop, Cursor,
llama.cpp and LM Studio read.

A stdio server has ``command`` (and ``args``, ``env``, ``cwd``); a streamable-HTTP server has
``url`` (and ``headers``). Every string value may use ``${VAR}`` or ``${VAR:-default}``; a variable
that is not set and has no default is an ``MCPConfigError`` naming the server and the field (a
server started with a literal ``${API_KEY}`` fails later, and less clearly).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import MCPConfigError

__all__ = ["MCPServerConfig", "expand_vars", "load_mcp_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp", "streamable_http")


@dataclass(frozen=True)
class MCPServerConfig:
    """How to reach one MCP server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    name: str
    """The server's key; tools are named ``<name>_<tool>`` by default."""
    command: str | None = None
    """The executable of a stdio server."""
    args: tuple[str, ...] = ()
    """Its arguments."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for it, over the SDK's safe default environment."""
    cwd: str | None = None
    """Its working directory."""
    url: str | None = None
    """The endpoint of a streamable-HTTP server (``http://127.0.0.1:8000/mcp``)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """HTTP headers sent with every request (``Authorization``...)."""
    timeout: float | None = None
    """Seconds one call may take; ``None`` takes ``MCPTools(timeout=...)``."""

    def __post_init__(self) -> None:
        where = f"MCP server {self.name!r}"
        if not self.name or not isinstance(self.name, str):
            raise MCPConfigError(f"an MCP server needs a non-empty name, got {self.name!r}")
        if (self.command is None) == (self.url is None):
            raise MCPConfigError(
                f"{where}: give exactly one of 'command' (a stdio server) or 'url' (a "
                f"streamable-HTTP server); got command={self.command!r}, url={self.url!r}"
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise MCPConfigError(f"{where}: 'url' must be http:// or https://, got {self.url!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise MCPConfigError(f"{where}: 'timeout' must be positive, got {self.timeout!r}")

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command is not None else "http"


def expand_vars(value: str, *, environ: Mapping[str, str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` in ``value`` from ``environ``."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise MCPConfigError(
            f"{where} uses ${{{name}}}, which is not set; export {name} or write "
            f"${{{name}:-default}}"
        )

    return _VAR.sub(one, value)


def load_mcp_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
) -> list[MCPServerConfig]:
    """The servers of an ``mcpServers`` document: a path to a JSON file, or the parsed object.

    Reads ``{"mcpServers": {name: {...}}}`` (also VS Code's ``{"servers": ...}``, or the bare
    name-to-entry mapping). Entries with ``"disabled": true`` are left out. ``environ`` (default
    ``os.environ``) feeds ``${VAR}`` expansion.
    """
    env = os.environ if environ is None else environ
    document: Any
    if isinstance(source, Mapping):
        document, origin = source, "the MCP config"
    else:
        path = Path(source)
        origin = str(path)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise MCPConfigError(f"cannot read the MCP config {origin!r}: {exc}") from exc
        except ValueError as exc:
            raise MCPConfigError(f"the MCP config {origin!r} is not valid JSON: {exc}") from exc
    if not isinstance(document, Mapping):
        raise MCPConfigError(f"{origin} must be a JSON object, got {type(document).__name__}")
    servers = document.get("mcpServers", document.get("servers", document))
    if not isinstance(servers, Mapping):
        raise MCPConfigError(f"{origin}: 'mcpServers' must map server names to entries")
    return [
        parse_entry(str(name), entry, environ=env, origin=origin)
        for name, entry in servers.items()
        if not (isinstance(entry, Mapping) and entry.get("disabled") is True)
    ]


def parse_entry(
    name: str, entry: Any, *, environ: Mapping[str, str], origin: str = "the MCP config"
) -> MCPServerConfig:
    """One ``mcpServers`` entry as an :class:`MCPServerConfig`."""
    where = f"{origin}: server {name!r}"
    if not isinstance(entry, Mapping):
        raise MCPConfigError(f"{where} must be an object, got {entry!r}")
    kind = entry.get("type", entry.get("transport"))
    if kind == "sse":
        raise MCPConfigError(
            f"{where}: the legacy SSE transport is not supported; use the server's streamable "
            "HTTP endpoint (type 'http', usually ending in /mcp)"
        )
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise MCPConfigError(f"{where}: unknown type {kind!r}; use 'stdio' or 'http'")

    def text(key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise MCPConfigError(f"{where}: {key!r} must be a string, got {value!r}")
        return expand_vars(value, environ=environ, where=f"{where} field {key!r}")

    def strings(key: str) -> dict[str, str]:
        value = entry.get(key) or {}
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise MCPConfigError(f"{where}: {key!r} must map names to strings, got {value!r}")
        return {
            str(k): expand_vars(v, environ=environ, where=f"{where} {key}[{k!r}]")
            for k, v in value.items()
        }

    args = entry.get("args") or []
    if not isinstance(args, Sequence) or isinstance(args, str):
        raise MCPConfigError(f"{where}: 'args' must be a list of strings, got {args!r}")
    if not all(isinstance(a, str) for a in args):
        raise MCPConfigError(f"{where}: 'args' must be a list of strings, got {args!r}")
    timeout = entry.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)):
        raise MCPConfigError(f"{where}: 'timeout' must be a number of seconds, got {timeout!r}")
    return MCPServerConfig(
        name=name,
        command=text("command"),
        args=tuple(expand_vars(a, environ=environ, where=f"{where} args") for a in args),
        env=strings("env"),
        cwd=text("cwd"),
        url=text("url"),
        headers=strings("headers"),
        timeout=float(timeout) if timeout is not None else None,
    )
