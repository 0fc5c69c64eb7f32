"""Making whole conversations render through templates with their own expectations.

Real templates expect more than ``messages`` and ``tools``, and refuse inputs an OpenAI client sends
as a matter of course. Each adaptation here is read off the template (its variables, the dialect's
id format) or tried when the plain render fails, and is never keyed to a family:

* **Template variables.** A template reading ``functions`` (FireFunction v2: the function
  definitions as one JSON string) gets it from ``tools``; one reading ``datetime`` gets today's
  date; one calling ``generate_schema_from_functions`` gets it (``conventions``). Only variables
  the template reads and the caller did not pass are filled.
* **Tool result names.** A tool result without ``name`` gets the name of the call it answers
  (by ``tool_call_id``): OpenAI clients send none, and templates print it.
* **Call ids.** A dialect that demands nine alphanumerics (``id_format="alnum9"``, Mistral) gets
  every client id (``call_abc123``) mapped to one, the same one for the same id in every turn and
  every request (a hash, so prompts and the KV cache stay stable). :func:`client_call_ids` gives
  the reverse map, so ids in responses can be mapped back.
* **Fallbacks on a template error**, tried in order, each keeping the previous ones: tool schemas
  completed with the optional fields templates read without checking (``description``,
  ``additionalProperties``, ``items``, ``properties``, ``required``: Command R+); call ids mapped
  to nine alphanumerics whatever the dialect says; consecutive turns of the same role merged
  (templates that demand alternation, once the polyfill turned tool results into user turns);
  an empty assistant turn between tool results and the user turn after them, then one holding a
  space (:func:`close_tool_runs`: Mistral templates check that user and assistant turns
  alternate once tool turns and calls are set aside; some refuse an empty turn).
* **System turns folded** (:func:`fold_system_turns`) into the first user turn, for templates that
  raise on a ``system`` (or ``developer``) message or leave it out of the prompt; **tool results
  as user turns** (:func:`tool_results_as_user_turns`) naming the tool and the call, for templates
  that render no tool turn.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import TemplateError
from .conventions import conventional_variables
from .template import ChatTemplate

__all__ = [
    "ALNUM9",
    "alnum9_id",
    "client_call_ids",
    "close_tool_runs",
    "complete_schemas",
    "fold_system_turns",
    "map_call_ids",
    "merge_same_role_turns",
    "name_tool_results",
    "render_adapted",
    "template_variables",
    "tool_results_as_user_turns",
]

ALNUM9 = re.compile(r"[A-Za-z0-9]{9}\Z")
"""A call id Mistral templates accept."""

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

Render = Callable[[list[dict[str, Any]], list[Mapping[str, Any]] | None], str]
"""Renders (messages, OpenAI tools or None) into a prompt."""


# ---------------------------------------------------------------------------------------------
# Template variables


def template_variables(
    template: ChatTemplate,
    tools: Sequence[Mapping[str, Any]] | None,
    given: Mapping[str, Any],
) -> dict[str, Any]:
    """Variables ``template`` reads that a caller passes by convention, filled from ``tools``
    (``conventions``: ``functions``, ``datetime``, ``generate_schema_from_functions``). Variables
    in ``given`` are never touched."""
    return conventional_variables(
        template.variables, tools, given, today=lambda: template.now().strftime("%Y-%m-%d")
    )


# ---------------------------------------------------------------------------------------------
# Tool schemas


def complete_schemas(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``tools`` with the optional JSON Schema fields templates read unchecked filled in.

    Functions and properties get ``description: ""``; object schemas ``properties: {}`` and
    ``additionalProperties: {}`` (any value, which is what an absent key means); array schemas
    ``items: {}``; the parameters object ``required: []``. Input is not mutated.
    """
    out = []
    for tool in tools:
        copy = json.loads(json.dumps(tool))
        fn = copy.get("function") if isinstance(copy.get("function"), dict) else copy
        fn.setdefault("description", "")
        params = fn.setdefault("parameters", {"type": "object"})
        if isinstance(params, dict):
            params.setdefault("required", [])
            _complete(params, top=True)
        out.append(copy)
    return out


def _complete(schema: dict[str, Any], *, top: bool = False) -> None:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if not top:
        schema.setdefault("description", "")
    if "object" in kinds:
        schema.setdefault("properties", {})
        schema.setdefault("additionalProperties", {})
    if "array" in kinds:
        schema.setdefault("items", {})
    for sub in (schema.get("properties") or {}).values():
        if isinstance(sub, dict):
            _complete(sub)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict) and sub:
            _complete(sub)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            if isinstance(sub, dict):
                _complete(sub)


# ---------------------------------------------------------------------------------------------
# Call ids


def alnum9_id(client_id: str) -> str:
    """Nine alphanumerics standing for ``client_id``: itself when it already is nine
    alphanumerics, else a hash (the same id always maps to the same one)."""
    if ALNUM9.match(client_id):
        return client_id
    n = int.from_bytes(hashlib.sha256(client_id.encode("utf-8")).digest()[:12], "big")
    chars = []
    for _ in range(9):
        n, r = divmod(n, 62)
        chars.append(_BASE62[r])
    return "".join(chars)


def _client_ids(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    ids: list[str] = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                ids.append(call["id"])
        if isinstance(m.get("tool_call_id"), str):
            ids.append(m["tool_call_id"])
    return ids


def client_call_ids(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Dialect id -> client id, for every id :func:`map_call_ids` changes in ``messages``."""
    return {alnum9_id(i): i for i in _client_ids(messages) if alnum9_id(i) != i}


def map_call_ids(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every call id (assistant ``tool_calls[].id``, tool ``tool_call_id``)
    replaced by :func:`alnum9_id`; consistent across the conversation. Input is not mutated."""
    out: list[dict[str, Any]] = []
    for m in messages:
        msg = dict(m)
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            msg["tool_calls"] = [
                {**c, "id": alnum9_id(c["id"])}
                if isinstance(c, Mapping) and isinstance(c.get("id"), str)
                else c
                for c in calls
            ]
        if isinstance(msg.get("tool_call_id"), str):
            msg["tool_call_id"] = alnum9_id(msg["tool_call_id"])
        out.append(msg)
    return out


def name_tool_results(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each tool result that lacks a ``name`` given the name of the call it
    answers (matched by ``tool_call_id``): OpenAI clients send no name, templates print one."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        msg = dict(m)
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, Mapping) else None
            name = fn.get("name") if isinstance(fn, Mapping) else None
            if isinstance(name, str) and isinstance(call.get("id"), str):
                names[call["id"]] = name
        cid = msg.get("tool_call_id")
        if msg.get("role") == "tool" and not msg.get("name") and cid in names:
            msg["name"] = names[cid]
        out.append(msg)
    return out


# ---------------------------------------------------------------------------------------------
# Roles


def merge_same_role_turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive ``user`` (or ``system``) turns with text content joined into one, separated
    by a blank line, for templates that demand alternating roles. Other turns are kept."""
    out: list[dict[str, Any]] = []
    for m in messages:
        msg = dict(m)
        prev = out[-1] if out else None
        if (
            prev is not None
            and msg.get("role") in ("user", "system")
            and prev.get("role") == msg.get("role")
            and isinstance(prev.get("content"), str)
            and isinstance(msg.get("content"), str)
            and set(prev) <= {"role", "content"}
            and set(msg) <= {"role", "content"}
        ):
            prev["content"] = f"{prev['content']}\n\n{msg['content']}"
            continue
        out.append(msg)
    return out


def close_tool_runs(
    messages: Sequence[Mapping[str, Any]], *, text: str = ""
) -> list[dict[str, Any]]:
    """``messages`` with an assistant turn saying ``text`` between tool results and a user turn
    right after them, for templates that demand a user turn follow an assistant turn (the results
    answer the assistant's calls, so the assistant's reply to them is what comes next)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "user" and out and out[-1].get("role") == "tool":
            out.append({"role": "assistant", "content": text})
        out.append(dict(m))
    return out


def tool_results_as_user_turns(
    messages: Sequence[Mapping[str, Any]], indices: Sequence[int]
) -> list[dict[str, Any]]:
    """``messages`` with the tool results at ``indices`` as user turns that name the tool and the
    call they answer, for templates that render no tool turn: the model still sees the result,
    and which call it answers. Indices are kept (one message for one)."""
    named = name_tool_results(messages)
    out = [dict(m) for m in named]
    for i in indices:
        m = named[i]
        name = m.get("name") or "a tool"
        call = f" (call {m['tool_call_id']})" if m.get("tool_call_id") else ""
        out[i] = {"role": "user", "content": f"Result of {name}{call}:\n{_text(m.get('content'))}"}
    return out


SYSTEM_ROLES = ("system", "developer")
"""Roles whose text instructs the model; folded into a user turn where a template has no place."""


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, Mapping) and "text" in p)
        )
    return str(content)


def fold_system_turns(
    messages: Sequence[Mapping[str, Any]], *, lead: str = ""
) -> list[dict[str, Any]]:
    """``messages`` without system turns: their text, then ``lead``, opens the first user turn
    (separated by blank lines); a conversation without a user turn gets one at the start."""
    system = [_text(m.get("content")) for m in messages if m.get("role") in SYSTEM_ROLES]
    out = [dict(m) for m in messages if m.get("role") not in SYSTEM_ROLES]
    preamble = "\n\n".join(p for p in [*system, lead] if p)
    if not preamble:
        return out
    for m in out:
        if m.get("role") == "user":
            user = _text(m.get("content"))
            m["content"] = f"{preamble}\n\n{user}" if user else preamble
            return out
    out.insert(0, {"role": "user", "content": preamble})
    return out


# ---------------------------------------------------------------------------------------------
# Rendering with fallbacks


def _completed(tools: list[Mapping[str, Any]] | None) -> list[Mapping[str, Any]] | None:
    return list(complete_schemas(tools)) if tools else tools


def render_adapted(
    render: Render,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    alnum9: bool,
) -> str:
    """``render(messages, tools)``, with ids mapped first when ``alnum9``; on a
    :class:`~tooldialect.TemplateError` the fallbacks of the module docstring are added one by
    one. The error of the plain render is raised when none helps."""
    msgs = name_tool_results(messages)
    if alnum9:
        msgs = map_call_ids(msgs)
    current_tools: list[Mapping[str, Any]] | None = (
        list(tools) if tools is not None else None  # the template copies them
    )
    try:
        return render(msgs, current_tools)
    except TemplateError as exc:
        first = exc
    steps: list[Callable[[], None]] = []
    unclosed = msgs  # the messages before close_tool_runs, for its second try

    def schemas() -> None:
        nonlocal current_tools
        current_tools = _completed(current_tools)

    def ids() -> None:
        nonlocal msgs
        msgs = map_call_ids(msgs)

    def roles() -> None:
        nonlocal msgs
        msgs = merge_same_role_turns(msgs)

    def replies() -> None:
        nonlocal msgs, unclosed
        unclosed = msgs
        msgs = close_tool_runs(msgs)

    def spaced_replies() -> None:
        nonlocal msgs
        # some templates refuse an empty assistant turn too (Ministral 3): the least text instead
        msgs = close_tool_runs(unclosed, text=" ")

    if current_tools:
        steps.append(schemas)
    if not alnum9 and _client_ids(msgs):
        steps.append(ids)
    steps.append(roles)
    if any(m.get("role") == "tool" for m in msgs):
        steps += [replies, spaced_replies]
    for step in steps:
        step()
        try:
            return render(msgs, current_tools)
        except TemplateError:
            continue
    raise first
