"""A Responses API request as a chat completion request for the handler.

``chat_request`` reads the body of ``POST /v1/responses`` and returns the chat messages (the
stored conversation of ``previous_response_id``, ``instructions`` as a system message, then the
``input`` items) and the handler keywords (tools, ``tool_choice``, ``response_format``...), plus
the request fields a Response object echoes. What cannot be served raises ``ResponsesError``,
which the route sends as an OpenAI error object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import ToolDialectError, ToolSpecError
from ...frontend.options import check_known_keys, check_request_values
from ...frontend.pipeline import check_encodable
from ...tool_defs import normalize_tools

__all__ = [
    "SUPPORTED_TOOL_TYPES",
    "ChatRequest",
    "ResponsesError",
    "chat_request",
    "input_messages",
]

SUPPORTED_TOOL_TYPES = ("function",)
"""The tool types a local model can serve: the caller runs them (function calling)."""

REFUSED_KEYS = {
    "background": "background responses are not served; send the request without it",
    "conversation": "server-side conversations are not served; use previous_response_id",
    "prompt": "stored prompt templates are not served; send instructions and input",
}
"""Request keys that change what a response means and are not honoured: refused, not dropped."""

RESPONSES_KEYS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "max_output_tokens",
        "temperature",
        "top_p",
        "reasoning",
        "stream",
        "store",
        "previous_response_id",
        "metadata",
        "user",
        "include",
        "truncation",
        "service_tier",
        "stream_options",
        "safety_identifier",
        "prompt_cache_key",
        *REFUSED_KEYS,
    }
)
"""The fields of a Responses request body; any other is refused, naming the nearest."""

_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


class ResponsesError(ToolDialectError, ValueError):
    """A request the endpoint cannot serve; ``status`` and an OpenAI error object."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param

    def payload(self) -> dict[str, Any]:
        """OpenAI's ``{"error": {...}}`` body."""
        kind = "not_found_error" if self.status == 404 else "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": None}}


@dataclass
class ChatRequest:
    """A Responses request converted: what the handler is called with, and what is echoed."""

    messages: list[dict[str, Any]]
    """Everything the model sees: stored history, ``instructions``, then ``input``."""
    history: list[dict[str, Any]]
    """The conversation without ``instructions`` (which a follow-up does not inherit)."""
    kwargs: dict[str, Any]
    """Handler keywords: tools, tool_choice, response_format, max_tokens, sampling..."""
    echo: dict[str, Any] = field(default_factory=dict)
    """Request fields the Response object repeats (tools, tool_choice, text, ...)."""
    model: str | None = None
    stream: bool = False
    store: bool = True


def chat_request(
    body: Mapping[str, Any], *, previous: Sequence[Mapping[str, Any]] = ()
) -> ChatRequest:
    """Convert a Responses request body. ``previous``: the stored conversation (chat messages)
    of ``previous_response_id``, which the caller looked up."""
    if not isinstance(body, Mapping):
        raise ResponsesError("the request body must be a JSON object")
    check_fields(body)
    for key, why in REFUSED_KEYS.items():
        if body.get(key):
            raise ResponsesError(f"{key!r}: {why}", param=key)
    if "input" not in body:
        raise ResponsesError("'input' is required: a string or a list of items", param="input")
    history = [dict(m) for m in previous] + input_messages(body["input"])
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ResponsesError("'instructions' must be a string", param="instructions")
    messages = ([{"role": "system", "content": instructions}] if instructions else []) + history
    kwargs: dict[str, Any] = {}
    tools = body.get("tools") or []
    if tools:
        kwargs["tools"] = chat_tools(tools)
    _check_text(messages, kwargs.get("tools"))
    choice = body.get("tool_choice")
    if choice is not None:
        kwargs["tool_choice"] = checked_tool_choice(choice)
    if body.get("parallel_tool_calls") is not None:
        kwargs["parallel_tool_calls"] = bool(body["parallel_tool_calls"])
    text_format = _text_format(body.get("text"))
    if text_format is not None:
        kwargs["response_format"] = text_format
    for ours, theirs in (("max_tokens", "max_output_tokens"), ("temperature", "temperature")):
        if body.get(theirs) is not None:
            kwargs[ours] = body[theirs]
    if body.get("top_p") is not None:
        kwargs["top_p"] = body["top_p"]
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, Mapping) else None
    if effort is not None:
        kwargs["reasoning_effort"] = effort  # a template variable (gpt-oss reads it)
    return ChatRequest(
        messages=messages,
        history=history,
        kwargs=kwargs,
        echo=_echo(body, tools, effort),
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        stream=bool(body.get("stream")),
        store=body.get("store") is not False,  # OpenAI stores unless told not to
    )


def check_fields(body: Mapping[str, Any]) -> None:
    """Refuse an unknown field (naming the nearest) and a value out of OpenAI's range:
    ``max_output_tokens`` >= 1, ``temperature`` >= 0, ``top_p`` in [0, 1]."""
    try:
        check_known_keys(body, where="/v1/responses", known=RESPONSES_KEYS)
        check_request_values({"temperature": body.get("temperature"), "top_p": body.get("top_p")})
        check_request_values({"max_tokens": body.get("max_output_tokens")})
    except ToolSpecError as exc:
        param = "max_output_tokens" if exc.param == "max_tokens" else exc.param
        text = (
            str(exc).replace("max_tokens", "max_output_tokens") if param != exc.param else str(exc)
        )
        raise ResponsesError(text, param=param) from None


def _check_text(messages: list[dict[str, Any]], tools: Any) -> None:
    """Tools the handler can read, and no lone surrogate anywhere (no tokenizer takes one)."""
    try:
        if tools:
            normalize_tools(tools)
        check_encodable(messages, tools)
    except ToolSpecError as exc:
        param = "input" if exc.param == "messages" else exc.param or "tools"
        raise ResponsesError(str(exc), param=param) from None


def _echo(body: Mapping[str, Any], tools: Any, effort: Any) -> dict[str, Any]:
    given = body.get("text")
    text: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    return {
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": effort, "summary": None},
        "store": body.get("store") is not False,
        "temperature": body.get("temperature"),
        "text": {"format": dict(text.get("format") or {"type": "text"})},
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": list(tools),
        "top_p": body.get("top_p"),
        "truncation": "disabled",
        "user": body.get("user"),
    }


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    """Responses function tools in the Chat Completions form; any other type is refused, all
    of them named (a tool is never dropped silently)."""
    if not isinstance(tools, list):
        raise ResponsesError("'tools' must be a list of tool objects", param="tools")
    out, refused = [], []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind != "function":
            refused.append(f"tools[{i}] (type {kind!r})")
            continue
        if isinstance(tool.get("function"), Mapping):
            out.append(dict(tool))  # already the Chat Completions form
            continue
        fn = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
        out.append({"type": "function", "function": fn})
    if refused:
        raise ResponsesError(
            f"{', '.join(refused)} cannot be served: tooldialect serve runs a local model, and "
            "hosted tools (web_search, file_search, computer_use, mcp, code_interpreter, "
            "image_generation, shell...) run on OpenAI's side. Supported tool types: "
            f"{list(SUPPORTED_TOOL_TYPES)}; run the tool yourself and offer it as a function",
            param="tools",
        )
    return out


def checked_tool_choice(choice: Any) -> Any:
    """``tool_choice`` in the Chat Completions form the handler reads: the Responses API's
    ``{"type": "function", "name": ...}`` and flat ``allowed_tools`` (``{"type":
    "allowed_tools", "mode": ..., "tools": [{"type": "function", "name": ...}]}``) translated,
    the modes as they are; a hosted tool's choice is refused here, by name."""
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    if kind is None:
        return choice  # "auto", "none", "required" (the handler refuses any other)
    if kind == "function" and "function" not in choice:
        return {"type": "function", "function": {"name": choice.get("name")}}
    if kind == "allowed_tools" and "allowed_tools" not in choice:
        listed = choice.get("tools")
        entries = [_allowed_entry(e, i) for i, e in enumerate(listed)] if listed else listed
        body = {"mode": choice.get("mode", "auto"), "tools": entries}
        return {"type": "allowed_tools", "allowed_tools": body}
    if kind not in ("function", "allowed_tools"):
        raise ResponsesError(
            f"tool_choice of type {kind!r} cannot be served; supported: 'auto', 'none', "
            "'required', {'type': 'function', 'name': ...} and {'type': 'allowed_tools', "
            "'mode': 'auto' | 'required', 'tools': [{'type': 'function', 'name': ...}]}",
            param="tool_choice",
        )
    return choice  # the Chat Completions form already


def _allowed_entry(entry: Any, i: int) -> Any:
    """One ``allowed_tools`` entry of a Responses request in the Chat Completions form."""
    kind = entry.get("type", "function") if isinstance(entry, Mapping) else None
    if kind is None or "function" in entry:
        return entry  # a name, or the Chat Completions form already
    if kind != "function":
        raise ResponsesError(
            f"tool_choice.tools[{i}] is a {kind!r} tool; only function tools can be allowed "
            "here (hosted tools run on OpenAI's side)",
            param="tool_choice",
        )
    return {"type": "function", "function": {"name": entry.get("name")}}


def _text_format(text: Any) -> dict[str, Any] | None:
    """``text.format`` as a chat ``response_format`` (``None`` for free text)."""
    if text is None:
        return None
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema" and isinstance(fmt, Mapping):
        spec = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": spec}
    raise ResponsesError(
        f"text.format {fmt!r} is not understood; pass {{'type': 'text'}}, "
        "{'type': 'json_object'} or {'type': 'json_schema', 'name': ..., 'schema': {...}}",
        param="text.format",
    )


def input_messages(items: Any) -> list[dict[str, Any]]:
    """``input`` (a string or items) as chat messages: message items by role (``developer``
    as ``system``), ``function_call`` items as the assistant turn's ``tool_calls``,
    ``function_call_output`` items as ``tool`` messages, a ``reasoning`` item as the next
    assistant turn's ``reasoning_content``."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise ResponsesError("'input' must be a string or a list of items", param="input")
    out: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ResponsesError(f"input[{i}] must be an object, got {item!r}", param="input")
        kind = item.get("type", "message")
        if kind == "reasoning":
            reasoning.append(_reasoning_text(item))
            continue
        if kind == "message":
            message = _message(item, i)
        elif kind == "function_call":
            message = _call_turn(out, item, i)
        elif kind == "function_call_output":
            message = {
                "role": "tool",
                "tool_call_id": _string(item, "call_id", i),
                "content": _content_text(item.get("output", ""), i),
            }
        else:
            raise ResponsesError(
                f"input[{i}] is a {kind!r} item, which is not served; input items may be "
                "messages, function_call, function_call_output and reasoning",
                param="input",
            )
        if message["role"] == "assistant" and reasoning and "reasoning_content" not in message:
            message["reasoning_content"] = "".join(reasoning)
        if message["role"] == "assistant" or message["role"] == "user":
            reasoning = []
        if not (out and message is out[-1]):
            out.append(message)
    return out


def _call_turn(out: list[dict[str, Any]], item: Mapping[str, Any], i: int) -> dict[str, Any]:
    """The assistant turn a ``function_call`` item belongs to: the last one when nothing
    followed it (its text and its calls are one chat turn), else a new one."""
    call = {
        "id": _string(item, "call_id", i),
        "type": "function",
        "function": {"name": _string(item, "name", i), "arguments": item.get("arguments") or "{}"},
    }
    if out and out[-1]["role"] == "assistant":
        out[-1].setdefault("tool_calls", []).append(call)
        return out[-1]
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _message(item: Mapping[str, Any], i: int) -> dict[str, Any]:
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        raise ResponsesError(
            f"input[{i}].role must be 'user', 'assistant', 'system' or 'developer', got {role!r}",
            param="input",
        )
    content = item.get("content")
    if isinstance(content, list) and role == "user":
        parts = [_user_part(p, i) for p in content]
        if all(p.get("type") == "text" for p in parts):
            content = "".join(str(p["text"]) for p in parts)
        else:
            content = parts  # an image: the handler refuses it, by name
    else:
        content = _content_text(content, i)
    return {"role": "system" if role == "developer" else role, "content": content}


def _user_part(part: Any, i: int) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if isinstance(part, Mapping) and kind in _TEXT_PARTS:
        return {"type": "text", "text": part.get("text", "")}
    if isinstance(part, Mapping) and kind == "input_image":
        return {"type": "image_url", "image_url": {"url": part.get("image_url")}}
    raise ResponsesError(
        f"input[{i}] has a content part of type {kind!r}; served parts: input_text "
        "(input_image reaches the handler, which serves text-only models)",
        param="input",
    )


def _content_text(content: Any, i: int) -> str:
    """Text parts (or a string) as one string; refusal parts as their text."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ResponsesError(f"input[{i}] content must be a string or parts", param="input")
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if isinstance(part, Mapping) and (kind in _TEXT_PARTS or kind == "refusal"):
            texts.append(str(part.get("text", part.get("refusal", ""))))
        else:
            raise ResponsesError(
                f"input[{i}] has a content part of type {kind!r}; only text parts are served here",
                param="input",
            )
    return "".join(texts)


def _reasoning_text(item: Mapping[str, Any]) -> str:
    parts = item.get("content") or item.get("summary") or []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


def _string(item: Mapping[str, Any], key: str, i: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ResponsesError(
            f"input[{i}] ({item.get('type')!r}) needs a string {key!r}", param="input"
        )
    return value
