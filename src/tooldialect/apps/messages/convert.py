"""An Anthropic Messages API request as a chat completion request for the handler.

``messages_request`` reads the body of ``POST /v1/messages``: ``system`` becomes a system
message, ``tool_use`` blocks the assistant turn's ``tool_calls``, ``tool_result`` blocks ``tool``
messages (``is_error`` written into the text the model reads), ``thinking`` blocks the turn's
``reasoning_content``; ``tools``, ``tool_choice``, ``thinking`` and the sampling fields become
handler keywords. ``count_request`` reads the body of ``/v1/messages/count_tokens`` the same
way. What cannot be served raises ``MessagesError``, which the route answers in Anthropic's
error shape; a request is refused, never silently trimmed.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ...errors import ToolDialectError

__all__ = [
    "COUNT_FIELDS",
    "IGNORED_FIELDS",
    "MESSAGE_FIELDS",
    "ChatRequest",
    "MessagesError",
    "chat_messages",
    "chat_tool_choice",
    "chat_tools",
    "count_request",
    "messages_request",
]

COUNT_FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking")
"""The fields of ``/v1/messages/count_tokens``."""
MESSAGE_FIELDS = (
    *COUNT_FIELDS,
    "max_tokens",
    "stop_sequences",
    "stream",
    "temperature",
    "top_p",
    "top_k",
)
"""The fields of ``/v1/messages`` that are served."""
IGNORED_FIELDS = (
    "metadata",
    "service_tier",
    "cache_control",
    "context_management",
    "diagnostics",
    "inference_geo",
    "speed",
    "user_profile_id",
    "workspace_id",
)
"""Fields taken and ignored: hints about billing, tracking, routing and Anthropic's own caches,
which do not change what a local model answers."""

ERROR_PREFIX = "Error: "
"""Written before a ``tool_result`` with ``is_error``: chat templates have no error flag, so the
model reads it in the text."""

_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
}


class MessagesError(ToolDialectError, ValueError):
    """A request the endpoint cannot serve: an HTTP ``status`` and Anthropic's error body."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def payload(self) -> dict[str, Any]:
        """``{"type": "error", "error": {"type": ..., "message": ...}}``."""
        kind = _ERROR_TYPES.get(self.status, "invalid_request_error")
        if self.status >= 500:
            kind = "api_error"
        return {"type": "error", "error": {"type": kind, "message": self.message}}


@dataclass
class ChatRequest:
    """A Messages request converted: what the handler is called with."""

    messages: list[dict[str, Any]]
    """Chat messages: ``system`` first, then the conversation."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Handler keywords: tools, tool_choice, max_tokens, stop, sampling, thinking flags."""
    model: str = ""
    stream: bool = False
    stop_sequences: tuple[str, ...] = ()


def messages_request(body: Any) -> ChatRequest:
    """Convert the body of ``POST /v1/messages``."""
    request = _read(body, MESSAGE_FIELDS)
    request.kwargs["max_tokens"] = _max_tokens(body)
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
            raise MessagesError("stop_sequences: must be a list of non-empty strings")
        request.stop_sequences = tuple(stops)
        if stops:
            request.kwargs["stop"] = list(stops)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise MessagesError(f"stream: must be a boolean, got {stream!r}")
    request.stream = stream
    for key, low, high in (("temperature", 0.0, 1.0), ("top_p", 0.0, 1.0)):
        if body.get(key) is not None:
            request.kwargs[key] = _number(body[key], key, low, high)
    top_k = body.get("top_k")
    if top_k is not None:
        if not _is_int(top_k) or top_k < 0:
            raise MessagesError(f"top_k: must be an integer >= 0, got {top_k!r}")
        request.kwargs["top_k"] = top_k
    return request


def count_request(body: Any) -> ChatRequest:
    """Convert the body of ``POST /v1/messages/count_tokens`` (no sampling fields)."""
    return _read(body, COUNT_FIELDS)


def _read(body: Any, served: Sequence[str]) -> ChatRequest:
    """What both endpoints share: fields checked, model, system, messages, tools, thinking."""
    if not isinstance(body, Mapping):
        raise MessagesError("the request body must be a JSON object")
    _refuse_unknown(body, served)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise MessagesError("model: a string is required")
    messages = chat_messages(body.get("messages"))
    system = _system_text(body.get("system"))
    if system:
        messages.insert(0, {"role": "system", "content": system})
    kwargs: dict[str, Any] = {}
    tools = body.get("tools")
    if tools:
        kwargs["tools"] = chat_tools(tools)
    if body.get("tool_choice") is not None:
        kwargs.update(chat_tool_choice(body["tool_choice"]))
    kwargs.update(_thinking(body.get("thinking")))
    return ChatRequest(messages=messages, kwargs=kwargs, model=model)


def _refuse_unknown(body: Mapping[str, Any], served: Sequence[str]) -> None:
    """Anthropic answers an unknown field with a 400; so does this, naming the nearest one."""
    known = (*served, *IGNORED_FIELDS)
    for key in body:
        if key in known:
            continue
        near = difflib.get_close_matches(str(key), known, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else f"; fields: {', '.join(served)}"
        raise MessagesError(f"{key}: unknown field{hint}")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _max_tokens(body: Mapping[str, Any]) -> int:
    value = body.get("max_tokens")
    if not _is_int(value) or value < 1:
        raise MessagesError(f"max_tokens: an integer >= 1 is required, got {value!r}")
    return int(value)


def _number(value: Any, key: str, low: float, high: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not low <= value <= high:
        raise MessagesError(f"{key}: must be a number from {low} to {high}, got {value!r}")
    return float(value)


def _thinking(thinking: Any) -> dict[str, Any]:
    """``thinking`` as the template flags the library reads (``enable_thinking``, ``thinking``);
    ``adaptive`` leaves the template's default. ``budget_tokens`` is checked, not enforced
    apart from ``max_tokens`` (a template has no budget to set)."""
    if thinking is None:
        return {}
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not _is_int(budget) or budget < 1:
            raise MessagesError(
                f"thinking.budget_tokens: an integer >= 1 is required, got {budget!r}"
            )
        return {"enable_thinking": True, "thinking": True}
    if kind == "disabled":
        return {"enable_thinking": False, "thinking": False}
    if kind == "adaptive":
        return {}
    raise MessagesError(
        f"thinking: {thinking!r} is not understood; pass {{'type': 'enabled', "
        "'budget_tokens': N}, {'type': 'disabled'} or {'type': 'adaptive'}"
    )


def _system_text(system: Any) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    if isinstance(system, list):
        return "\n\n".join(_text_block(b, "system") for b in system)
    raise MessagesError("system: must be a string or a list of text blocks")


def _text_block(block: Any, where: str) -> str:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind != "text" or not isinstance(block.get("text"), str):
        raise MessagesError(f"{where}: expected a text block, got one of type {kind!r}")
    return str(block["text"])


# ---- messages ------------------------------------------------------------------------------------


def chat_messages(messages: Any) -> list[dict[str, Any]]:
    """The conversation as chat messages. The last turn must be the user's: a trailing assistant
    turn asks Anthropic's API to continue it, which the chat handler cannot do."""
    if not isinstance(messages, list) or not messages:
        raise MessagesError("messages: a non-empty list of messages is required")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            raise MessagesError(f"messages.{i}.role: must be 'user' or 'assistant', got {role!r}")
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise MessagesError(f"messages.{i}.content: must be a string or a list of blocks")
        where = f"messages.{i}.content"
        out += _user_turn(blocks, where) if role == "user" else [_assistant_turn(blocks, where)]
    if messages[-1].get("role") == "assistant":
        raise MessagesError(
            f"messages.{len(messages) - 1}: a final assistant turn (prefill) is not served; "
            "end the conversation with a user turn"
        )
    return out


def _user_turn(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """Tool results as ``tool`` messages, then the text as one user message."""
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            texts.append(_text_block(block, f"{where}.{j}"))
        elif kind == "tool_result":
            results.append(_tool_message(block, f"{where}.{j}"))
        else:
            raise MessagesError(
                f"{where}.{j}: a {kind!r} block is not served in a user turn; served blocks: "
                "text and tool_result (tooldialect serve runs text-only models)"
            )
    return results + ([{"role": "user", "content": "\n\n".join(texts)}] if texts else [])


def _tool_message(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise MessagesError(f"{where}.tool_use_id: a string is required")
    content = block.get("content", "")
    if isinstance(content, list):
        text = "\n\n".join(_text_block(b, f"{where}.content.{k}") for k, b in enumerate(content))
    elif isinstance(content, str):
        text = content
    else:
        raise MessagesError(f"{where}.content: must be a string or a list of text blocks")
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise MessagesError(f"{where}.is_error: must be a boolean, got {is_error!r}")
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": ERROR_PREFIX + text if is_error else text,
    }


def _assistant_turn(blocks: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            texts.append(_text_block(block, f"{where}.{j}"))
        elif kind == "thinking":
            reasoning.append(str(block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            continue  # Claude's encrypted reasoning: nothing a local model can read
        elif kind == "tool_use":
            calls.append(_call(block, f"{where}.{j}"))
        else:
            raise MessagesError(
                f"{where}.{j}: a {kind!r} block is not served in an assistant turn; served "
                "blocks: text, thinking and tool_use"
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    return message


def _call(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str) or not call_id:
        raise MessagesError(f"{where}.id: a string is required")
    if not isinstance(name, str) or not name:
        raise MessagesError(f"{where}.name: a string is required")
    if not isinstance(arguments, Mapping):
        raise MessagesError(f"{where}.input: must be an object, got {arguments!r}")
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


# ---- tools ---------------------------------------------------------------------------------------


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    """Client tools in the Chat Completions form. Anthropic's server tools (web search, code
    execution, bash, text editor, computer use...) run on Anthropic's side: refused, by name."""
    if not isinstance(tools, list):
        raise MessagesError("tools: must be a list of tool objects")
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise MessagesError(f"tools.{i}: must be an object, got {tool!r}")
        kind = tool.get("type", "custom")
        if kind != "custom":
            raise MessagesError(
                f"tools.{i}: a tool of type {kind!r} runs on Anthropic's side and cannot be "
                "served by a local model; offer it as a client tool (name, description, "
                "input_schema) and run it yourself"
            )
        name, schema = tool.get("name"), tool.get("input_schema")
        if not isinstance(name, str) or not name:
            raise MessagesError(f"tools.{i}.name: a string is required")
        if not isinstance(schema, Mapping):
            raise MessagesError(f"tools.{i}.input_schema: a JSON Schema object is required")
        fn: dict[str, Any] = {"name": name, "parameters": dict(schema)}
        if tool.get("description") is not None:
            fn["description"] = tool["description"]
        if tool.get("strict") is not None:
            fn["strict"] = bool(tool["strict"])
        out.append({"type": "function", "function": fn})
    return out


def chat_tool_choice(choice: Any) -> dict[str, Any]:
    """``tool_choice`` as handler keywords: ``tool_choice`` and, with
    ``disable_parallel_tool_use``, ``parallel_tool_calls=False``."""
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    out: dict[str, Any]
    if kind in ("auto", "none"):
        out = {"tool_choice": kind}
    elif kind == "any":
        out = {"tool_choice": "required"}
    elif kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise MessagesError("tool_choice.name: a string is required with type 'tool'")
        out = {"tool_choice": {"type": "function", "function": {"name": name}}}
    else:
        raise MessagesError(
            f"tool_choice: {choice!r} is not understood; pass {{'type': 'auto'}}, "
            "{'type': 'any'}, {'type': 'tool', 'name': ...} or {'type': 'none'}"
        )
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None:
        if not isinstance(disable, bool):
            raise MessagesError("tool_choice.disable_parallel_tool_use: must be a boolean")
        out["parallel_tool_calls"] = not disable
    return out
