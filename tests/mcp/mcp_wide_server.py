"""An MCP server publishing 60 CRUD tools with realistic input schemas ($ref/$defs, anyOf,
enums, const, patterns, formats, bounds), plus one whose schema no grammar can express.

Written on the SDK's low-level ``Server`` so the schemas are exactly these JSON documents.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

DOMAINS = [
    "users",
    "orders",
    "invoices",
    "tickets",
    "files",
    "calendar",
    "emails",
    "repos",
    "deployments",
    "metrics",
    "contacts",
    "products",
]
ID = {"type": "string", "pattern": "^[a-z]{3}_[0-9a-f]{8}$", "description": "Object id."}
ADDRESS = {
    "type": "object",
    "properties": {
        "street": {"type": "string", "minLength": 1, "maxLength": 120},
        "city": {"type": "string"},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "postcode": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["street", "city", "country"],
    "additionalProperties": False,
}


def item(domain: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 80},
            "email": {"type": "string", "format": "email"},
            "due": {"type": "string", "format": "date"},
            "priority": {"enum": ["low", "normal", "high", "urgent"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "address": {"$ref": "#/$defs/Address"},
            "amount": {"type": "number", "minimum": 0, "maximum": 1000000},
        },
        "required": ["name", "priority"],
        "additionalProperties": False,
        "description": f"A {domain[:-1] if domain.endswith('s') else domain} record.",
    }


def schema(domain: str, verb: str) -> dict[str, Any]:
    defs = {"Address": ADDRESS, "Item": item(domain)}
    if verb == "get":
        fields = {"type": "array", "items": {"enum": ["name", "email", "tags"]}}
        props = {"id": ID, "fields": fields}
        return {"type": "object", "properties": props, "required": ["id"]}
    if verb == "list":
        filt = {
            "type": "object",
            "properties": {
                "field": {"enum": ["name", "priority", "created"]},
                "op": {"enum": ["eq", "ne", "lt", "gt", "contains"]},
                "value": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]},
            },
            "required": ["field", "op", "value"],
        }
        props = {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "sort": {"enum": ["created", "-created", "name"]},
            "since": {"type": "string", "format": "date-time"},
            "filter": {"$ref": "#/$defs/Filter"},
        }
        return {"type": "object", "properties": props, "$defs": {"Filter": filt}}
    if verb == "create":
        props = {"item": {"$ref": "#/$defs/Item"}, "notify": {"type": "boolean"}}
        return {"type": "object", "properties": props, "required": ["item"], "$defs": defs}
    if verb == "update":
        props = {
            "id": ID,
            "patch": {"$ref": "#/$defs/Item"},
            "if_match": {"type": "string", "format": "uuid"},
        }
        return {"type": "object", "properties": props, "required": ["id", "patch"], "$defs": defs}
    props = {
        "id": ID,
        "confirm": {"const": True},
        "reason": {"anyOf": [{"enum": ["duplicate", "spam", "requested"]}, {"type": "null"}]},
    }
    return {"type": "object", "properties": props, "required": ["id", "confirm"]}


TOOLS = [
    types.Tool(
        name=f"{domain}_{verb}",
        description=f"{verb.capitalize()} {domain}.",
        input_schema=schema(domain, verb),
    )
    for domain in DOMAINS
    for verb in ("list", "get", "create", "update", "delete")
]
# `not` has no grammar: this one must be reported and left out, the others kept
TOOLS.append(
    types.Tool(
        name="search_exclusive",
        description="Search, excluding a term.",
        input_schema={
            "type": "object",
            # a negative lookahead: outside the regex subset a grammar can express
            "properties": {"query": {"type": "string", "pattern": "^(?!admin$).*"}},
            "required": ["query"],
        },
    )
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    body = {"tool": params.name, "arguments": args}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body))], structured_content=body
    )


server = Server("wide", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
