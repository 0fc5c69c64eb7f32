"""MCP values as tooldialect ones: a tool's name and schema, a call's result as a ``ToolResult``.

Kept free of the SDK's imports (it reads attributes), so the rules are testable without it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ...errors import UnsupportedSchemaError
from ..python_tool import ToolResult

__all__ = ["Naming", "check_schema", "failure", "make_name", "result_from_mcp"]

Naming = Callable[[str, str], str] | str
"""``"{server}_{tool}"`` (the default), another format string, or ``fn(server, tool) -> name``."""

_BAD_CHARS = re.compile(r"[^0-9A-Za-z_\-.:]+")


def make_name(naming: Naming, server: str, tool: str) -> str:
    """The function name the model calls for ``tool`` of ``server``.

    A format string's result has characters outside ``[A-Za-z0-9_-.:]`` replaced by ``_``
    (server keys such as ``my server`` or ``web/fetch`` are common); a callable's is used as is.
    """
    if callable(naming):
        return naming(server, tool)
    return _BAD_CHARS.sub("_", naming.format(server=server, tool=tool)).strip("_") or "tool"


def check_schema(server: str, tool: str, schema: Any) -> dict[str, Any]:
    """``schema`` as a tool's parameters, or ``UnsupportedSchemaError`` naming server and tool.

    Compiles the schema once, as the grammar builder will; the result is not kept (the builder
    caches its own).
    """
    from ...grammar.schema import schema_grammar

    where = f"MCP server {server!r}, tool {tool!r}"
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise UnsupportedSchemaError(
            f"{where}: the input schema must describe an object, got {schema!r}", pointer=""
        )
    try:
        schema_grammar(schema)
    except UnsupportedSchemaError as exc:
        raise UnsupportedSchemaError(
            f"{where}: {exc} (the tool is not offered)", pointer=exc.pointer
        ) from exc
    except (RecursionError, ValueError, TypeError, KeyError) as exc:  # a malformed schema
        raise UnsupportedSchemaError(
            f"{where}: the input schema cannot be compiled ({type(exc).__name__}: {exc}); "
            "the tool is not offered",
            pointer="",
        ) from exc
    return schema


def result_from_mcp(server: str, tool: str, result: Any) -> ToolResult:
    """A ``CallToolResult`` as the model reads it.

    ``structuredContent`` goes back as JSON; text parts as text; images, audio and binary
    resources as a one-line note (the model is text-only), with the parts kept in ``media``;
    ``isError`` is marked ``tool_error`` with the server's words.
    """
    pairs = [(p, n) for p in getattr(result, "content", None) or [] if (n := _part_text(p))]
    media = [p for p, _ in pairs if getattr(p, "type", "") != "text"]
    structured = getattr(result, "structured_content", None)
    if structured is not None:  # the text parts then repeat it; media notes still say more
        notes = [n for p, n in pairs if getattr(p, "type", "") != "text"]
        text = "\n".join([json.dumps(structured, ensure_ascii=False), *notes])
    else:
        text = "\n".join(n for _, n in pairs)
    if getattr(result, "is_error", False):
        return ToolResult(
            text=f"Error: {tool} (MCP server {server!r}) failed: {text or 'no details given'}",
            is_error=True,
            error="tool_error",
            structured=structured,
            media=tuple(media),
            raw=result,
        )
    return ToolResult(text=text, structured=structured, media=tuple(media), raw=result)


def failure(code: str, text: str, *, raw: Any = None) -> ToolResult:
    """A call that did not produce a result (timeout, a dead server, a transport error)."""
    return ToolResult(text=f"Error: {text}", is_error=True, error=code, raw=raw)


def _part_text(part: Any) -> str | None:
    """One content block as text; ``None`` for a block that says nothing."""
    kind = getattr(part, "type", None)
    if kind == "text":
        return str(getattr(part, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(part, "mime_type", None) or kind
        size = len(getattr(part, "data", "") or "") * 3 // 4  # base64 to bytes, roughly
        return f"[{kind} {mime}, {_size(size)}: not shown to the model, kept for the caller]"
    if kind == "resource":
        inner = getattr(part, "resource", None)
        uri = getattr(inner, "uri", "")
        body = getattr(inner, "text", None)
        if body is not None:
            return f"[resource {uri}]\n{body}"
        mime = getattr(inner, "mime_type", None) or "binary"
        return f"[resource {uri} ({mime}): not shown to the model, kept for the caller]"
    if kind == "resource_link":
        name = getattr(part, "name", "") or ""
        return f"[resource link {getattr(part, 'uri', '')} {name}]".replace(" ]", "]")
    return None


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"
