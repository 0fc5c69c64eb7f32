"""Tool definitions several test modules send (OpenAI's ``{"type": "function", ...}`` shape),
and an answer schema they ask for.

The definitions go into prompts, so a module that needs another description or other
properties builds its own with :func:`function_tool` rather than editing these.
"""

from __future__ import annotations

from typing import Any


def function_tool(
    name: str,
    properties: dict[str, Any],
    *,
    required: list[str],
    description: str | None = None,
) -> dict[str, Any]:
    """An OpenAI tool definition; keys in the order clients send them."""
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": function}


CITY = {"city": {"type": "string"}}

WEATHER = function_tool(
    "get_weather", CITY, required=["city"], description="Get the current weather in a city"
)
"""One string argument, with a description."""

WEATHER_BARE = function_tool("get_weather", CITY, required=["city"])
"""The same without a description."""

WEATHER_UNITS = function_tool(
    "get_weather",
    {**CITY, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    required=["city"],
    description="Get the current weather in a city",
)
"""With an optional enum argument."""

WEATHER_DAYS = function_tool(
    "get_weather", {**CITY, "days": {"type": "integer"}}, required=["city"]
)
"""With an optional integer argument, without a description."""

TIME = function_tool(
    "get_time",
    {"timezone": {"type": "string"}},
    required=["timezone"],
    description="Get the local time in a timezone",
)
"""A second tool, beside ``WEATHER`` or ``WEATHER_UNITS``."""


def anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` in the shape of Anthropic's Messages API (``name``, ``description``,
    ``input_schema``), in the order its client sends them."""
    function = tool["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "input_schema": function["parameters"],
    }


REF_CYCLE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "loop",
        "parameters": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
    },
}
"""A ``$ref`` chain that loops with no structure between (``a -> b -> a``): no grammar is
built for it, so it is refused."""

CAPITAL: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
}
"""An answer schema: a capital and its country."""

CAPITAL_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "City", "schema": CAPITAL},
}
"""``CAPITAL`` as a ``response_format``."""

CAPITAL_ANSWER = '{"city": "Paris", "country": "France"}'
"""An answer that fits ``CAPITAL``."""
