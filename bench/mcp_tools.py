"""Tool definitions shaped like the ones MCP servers publish, for overhead measurements at scale.

Real MCP tool lists (GitHub, filesystem, browser, database servers) carry long descriptions,
nested objects, local ``$ref`` definitions, ``anyOf`` unions with ``null``, enums, arrays of
objects, defaults and bounds. :func:`mcp_tools` makes ``n`` distinct tools (deterministic, so
caches and medians compare across runs) out of a handful of such shapes; 41 of them are about
25 KB of JSON, as reported for real MCP servers.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["mcp_tools"]

_DOMAINS = ("repo", "issue", "file", "page", "table", "ticket", "event", "user", "bucket", "job")
_VERBS = ("list", "get", "create", "update", "delete", "search", "sync", "archive")

_PAGINATION = {
    "type": "object",
    "description": "Pagination of the result list.",
    "properties": {
        "page": {"type": "integer", "minimum": 1, "description": "Page number, from 1."},
        "per_page": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 30,
            "description": "Results per page (at most 100).",
        },
    },
}


def _filter_def(domain: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"A filter over {domain} fields.",
        "properties": {
            "field": {"type": "string", "enum": ["name", "owner", "created", "updated", "state"]},
            "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "contains"]},
            "value": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]},
        },
        "required": ["field", "op", "value"],
        "additionalProperties": False,
    }


def _schema(i: int, domain: str, verb: str) -> dict[str, Any]:
    shape = i % 4
    props: dict[str, Any] = {
        "owner": {"type": "string", "description": f"Account that owns the {domain}."},
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 100,
            "description": f"Name of the {domain}, unique within the owner.",
        },
    }
    required = ["owner", "name"]
    defs: dict[str, Any] = {}
    if shape == 0:
        props["state"] = {
            "type": "string",
            "enum": ["open", "closed", "all"],
            "default": "open",
            "description": f"Only {domain}s in this state.",
        }
        props["pagination"] = _PAGINATION
    elif shape == 1:
        defs["filter"] = _filter_def(domain)
        props["filters"] = {
            "type": "array",
            "items": {"$ref": "#/$defs/filter"},
            "description": "All filters must match.",
        }
        props["sort"] = {"anyOf": [{"type": "string", "enum": ["asc", "desc"]}, {"type": "null"}]}
    elif shape == 2:
        props["body"] = {
            "type": "object",
            "description": f"The {domain} content to write.",
            "properties": {
                "title": {"type": "string"},
                "text": {"type": "string", "description": "Markdown body."},
                "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "assignee": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "metadata": {
                    "type": "object",
                    "properties": {
                        "source": {"type": "string"},
                        "priority": {"type": "integer", "enum": [1, 2, 3, 4]},
                    },
                },
            },
            "required": ["title"],
        }
        required.append("body")
    else:
        defs["ref"] = {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["branch", "tag", "commit"]},
                "id": {"type": "string", "pattern": "^[A-Za-z0-9._/-]+$"},
            },
            "required": ["kind", "id"],
        }
        props["base"] = {"$ref": "#/$defs/ref", "description": "Where to start."}
        props["head"] = {"$ref": "#/$defs/ref", "description": "Where to end."}
        props["dry_run"] = {"type": "boolean", "default": False}
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if defs:
        schema["$defs"] = defs
    return schema


def mcp_tools(n: int) -> list[dict[str, Any]]:
    """``n`` distinct OpenAI tool dicts in MCP servers' style (names ``<verb>_<domain>_<i>``)."""
    tools = []
    for i in range(n):
        domain = _DOMAINS[i % len(_DOMAINS)]
        verb = _VERBS[(i // len(_DOMAINS)) % len(_VERBS)]
        description = (
            f"{verb.capitalize()} {domain}s in the workspace. Use this when the user asks to "
            f"{verb} a {domain} by owner and name."
        )
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": f"{verb}_{domain}_{i}",
                    "description": description,
                    "parameters": _schema(i, domain, verb),
                },
            }
        )
    return tools


if __name__ == "__main__":
    print(len(json.dumps(mcp_tools(41))), "bytes of JSON for 41 tools")
