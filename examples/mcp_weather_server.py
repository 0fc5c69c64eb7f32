"""A tiny MCP server for examples/mcp_agent.py: two tools, the weather now and a (pretend)
table booking (``current_weather`` and ``book_table``).

It is an ordinary MCP server, written with the official SDK (the ``mcp`` extra, which ``make demo``
installs into ``.venv``); any MCP client can use it:

    .venv/bin/python examples/mcp_weather_server.py              # stdio (how mcp_agent.py runs it)
    .venv/bin/python examples/mcp_weather_server.py --http 8765  # HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import sys
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather", log_level="WARNING")

_NOW = {"paris": (18, "cloudy"), "tokyo": (25, "sunny"), "oslo": (4, "rain"), "lima": (21, "fog")}


@server.tool()
def current_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """The weather in a city right now.

    Args:
        city: The city name, e.g. Paris.
        unit: The temperature unit.
    """
    found = _NOW.get(city.strip().lower())
    if found is None:
        raise ToolError(f"no station in {city}; known cities: {', '.join(sorted(_NOW))}")
    degrees, sky = found
    if unit == "fahrenheit":
        return f"{degrees * 9 / 5 + 32:.0f} F, {sky}"
    return f"{degrees} C, {sky}"


@server.tool()
def book_table(restaurant: str, people: int, time: str) -> str:
    """Book a restaurant table (a side effect: mcp_agent.py asks before it runs).

    Args:
        restaurant: The restaurant's name.
        people: How many people, 1 to 12.
        time: The time, as HH:MM.
    """
    if not 1 <= people <= 12:
        raise ToolError("people must be between 1 and 12")
    code = 1000 + sum(map(ord, f"{restaurant}{time}")) % 9000
    return f"booked {restaurant} for {people} at {time} (confirmation B-{code})"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run(
            "streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1])
        )
    else:
        server.run()
