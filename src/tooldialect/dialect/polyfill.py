"""Carry tools through a chat template that has no tool support (SmolLM2, Gemma 2/3, Phi-3.5, RWKV).

Everything the model sees about tools becomes ordinary text in ordinary turns, driven by
``spec.polyfill`` and written with ``spec.render_calls`` (so the grammar and the parser, which read
the same spec, agree with what the prompt teaches):

* the tool guide (``{tools}``: one JSON signature per line, ``{example}``: a rendered call)
  joins the system message, or the first user message when the template has no system role;
* an earlier assistant turn's ``tool_calls`` are appended to its content as the model would write
  them;
* ``role: "tool"`` results become ``result_role`` turns through ``result_template``; consecutive
  results share one turn, joined by ``result_separator``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import DialectError
from ..prompt.compat import fold_system_turns
from ..shapes import Message
from ..tool_defs import ToolDef
from .spec import DialectSpec, Polyfill, format_template

__all__ = ["apply_polyfill", "assistant_as_text", "example_arguments", "render_guide"]


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a tool's parameter schema (required keys, else the first one)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        return {}
    required = [k for k in schema.get("required", []) if k in props]
    keys = required or list(props)[:1]
    return {key: _example_value(props[key], key) for key in keys}


def _example_value(schema: Any, key: str) -> Any:
    if not isinstance(schema, Mapping):
        return "..."
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [_example_value(schema.get("items", {}), key)]
    if kind == "object":
        return example_arguments(schema)
    return f"<{key}>"


def render_guide(spec: DialectSpec, tools: Sequence[ToolDef]) -> str:
    """The polyfill guide for ``tools`` ('' without tools or without a polyfill)."""
    if spec.polyfill is None or not tools:
        return ""
    signatures = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters},
            ensure_ascii=False,
        )
        for t in tools
    )
    first = tools[0]
    example = spec.render_call(first.name, example_arguments(first.parameters), index=0)
    return format_template(spec.polyfill.guide, tools=signatures, example=example)


def apply_polyfill(
    messages: Sequence[Mapping[str, Any]],
    spec: DialectSpec,
    tools: Sequence[ToolDef],
    *,
    system_role: bool = True,
) -> list[Message]:
    """``messages`` rewritten so a template without tool support renders the whole conversation.

    Input messages are not mutated. Raises ``DialectError`` if ``spec`` has no ``polyfill``.
    """
    if spec.polyfill is None:
        raise DialectError(f"dialect {spec.id!r} has no polyfill; use the template's own tools")
    poly = spec.polyfill
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_call_id -> function name, for result templates
    results: list[str] = []
    for raw in messages:
        msg = dict(raw)
        role = msg.get("role")
        if role == "tool":
            results.append(_render_result(poly, msg, names))
            continue
        if results:
            out.append({"role": poly.result_role, "content": poly.result_separator.join(results)})
            results = []
        if role == "assistant" and msg.get("tool_calls"):
            msg = assistant_as_text(spec, msg, names)
        out.append(msg)
    if results:
        out.append({"role": poly.result_role, "content": poly.result_separator.join(results)})
    guide = render_guide(spec, tools)
    if guide:
        out = _inject_guide(out, guide, system_role=system_role)
    elif not system_role:
        out = _inject_guide(out, "", system_role=False)
    return out


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return str(content)


def assistant_as_text(spec: DialectSpec, msg: Message, names: dict[str, str]) -> Message:
    """``msg`` with its ``tool_calls`` written after its content as the model writes them
    (``spec.render_calls``); ``names`` learns each call id's function name."""
    calls: list[tuple[str, Mapping[str, Any] | str, str | None]] = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function", call) if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise DialectError(f"assistant tool call {call!r} has no function name")
        cid = call.get("id") if isinstance(call.get("id"), str) else None
        if cid:
            names[cid] = fn["name"]
        args = fn.get("arguments", {})
        calls.append((fn["name"], args if args is not None else {}, cid))
    content = _text(msg.get("content"))
    rendered = spec.render_calls(calls)
    joined = content + ("\n" if content and not content.endswith("\n") else "") + rendered
    out = {k: v for k, v in msg.items() if k != "tool_calls"}
    out["content"] = joined
    return out


def _render_result(poly: Polyfill, msg: Message, names: dict[str, str]) -> str:
    cid = msg.get("tool_call_id") or ""
    name = msg.get("name") or names.get(str(cid), "")
    return format_template(
        poly.result_template, content=_text(msg.get("content")), name=name, id=cid
    )


def _inject_guide(messages: list[Message], guide: str, *, system_role: bool) -> list[Message]:
    out = [dict(m) for m in messages]
    if system_role:
        if out and out[0].get("role") == "system":
            base = _text(out[0].get("content"))
            out[0]["content"] = f"{base}\n\n{guide}" if base else guide
        else:
            out.insert(0, {"role": "system", "content": guide})
        return out
    # no system role: system text and the guide lead the first user message
    return fold_system_turns(out, lead=guide)
