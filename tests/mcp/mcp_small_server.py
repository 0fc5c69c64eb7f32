"""A small MCP server for the tests, written with the SDK's ``MCPServer`` (FastMCP in mcp 1.x).

stdio by default; ``--http PORT`` serves streamable HTTP on 127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Literal

from mcp.server.mcpserver import Context, Image, MCPServer
from pydantic import BaseModel

server = MCPServer("small", log_level="WARNING")

# a 1x1 transparent PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
WEATHER = {"paris": "18 C, cloudy", "tokyo": "25 C, sunny"}


class Forecast(BaseModel):
    city: str
    days: int
    summary: str


@server.tool()
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return WEATHER.get(city.strip().lower(), f"no data for {city}")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def forecast(city: str, days: int = 3, unit: Literal["C", "F"] = "C") -> Forecast:
    """A forecast, as structured content."""
    return Forecast(city=city, days=days, summary=f"mild for {days} days ({unit})")


@server.tool(structured_output=False)
def snapshot(camera: str) -> list[object]:
    """A picture from a camera, with a caption."""
    return [f"camera {camera}", Image(data=PIXEL, format="png")]


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def whoami(ctx: Context) -> str:
    """The X-Token header of the HTTP request (stdio has none)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return headers.get("x-token", "no token") if headers is not None else "stdio"


@server.tool()
async def grow(ctx: Context) -> str:
    """Publish one more tool (and announce that the list changed)."""

    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    server.add_tool(shout)
    await ctx.notify_tools_changed()
    return "added shout"


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
