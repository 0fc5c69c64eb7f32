"""An MCP server that fails: reports an error, hangs, raises, and dies mid-call."""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# quiet: rich tracebacks of the expected crash take seconds to render on a busy machine
server = MCPServer("faulty", log_level="CRITICAL")


@server.tool()
def ok() -> str:
    """Answers."""
    return "fine"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def refuse(item: str) -> str:
    """Reports a failure it expected (isError with a message)."""
    raise ToolError(f"no stock of {item}")


@server.tool()
def crash() -> str:
    """Raises an exception it did not expect."""
    raise RuntimeError("disk on fire")


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "too late"


@server.tool()
def die() -> str:
    """The process exits in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
