"""``canonical_messages``: a caller's OpenAI messages checked, and put in today's shape, before any
template sees them.

A malformed message should fail with a ``ToolSpecError`` that names the message and the field
(``messages[3].tool_calls[0].function.name``), not with whatever a chat template does with it
somewhere deep inside (``'int object' has no attribute 'strip'``). What is accepted, on purpose:

* any non-empty string ``role``: templates define their own (``ipython``, ``developer``,
  ``observation``...); a template that does not know a role says so itself;
* ``content`` as a string, ``None``, or a list of text parts (``{"type": "text", "text": ...}``
  or plain strings), which OpenAI clients send; the parts are joined for the template;
* legacy OpenAI function calling: an assistant ``function_call`` becomes one ``tool_calls`` entry
  (id ``call<index>``), and a ``{"role": "function", "name": ..., "content": ...}`` message a
  ``tool`` result bound to the latest unanswered call of that name (templates such as Qwen2.5's
  have no branch for ``function`` and dropped it without a word);
* extra keys (``name``, ``reasoning_content``, vendor fields): passed through;
* a missing ``content`` on an assistant message that calls tools (OpenAI allows it); any other
  message without ``content`` is refused.

``tool_calls[].function.arguments`` must be a JSON object, as text or as a mapping: prompts and the
polyfill decode it, and a model never wrote anything else. Every tool result must answer a call:
a ``tool_call_id`` that no earlier assistant call carries, a result (``tool`` or ``function``)
before any call, or a ``function`` result whose name no unanswered call has is refused, naming
the message and the field.

Non-text parts (images, audio, files) are refused: the handler renders text-only prompts.
The input is never mutated; messages that change are shallow copies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import ToolSpecError

__all__ = ["canonical_messages", "validate_messages"]


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def validate_messages(messages: object) -> None:
    """Raise ``ToolSpecError`` naming the first malformed message field; return otherwise."""
    canonical_messages(messages)


def canonical_messages(messages: object, *, strict: bool = True) -> list[Mapping[str, Any]]:
    """``messages`` validated (``ToolSpecError`` naming the first bad field), legacy function
    calling in the ``tool_calls`` / ``tool`` shape, every tool result checked against its call.

    ``strict=False`` lets results whose call is not in the conversation through (a ``function``
    result then becomes a ``tool`` result without an id): history re-rendered in the model's
    own words (``history.ReplyMemory``) has no structured calls left to bind to.
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ToolSpecError(
            f"messages must be a list of message objects, got {_kind(messages)}; pass "
            '[{"role": "user", "content": "..."}]'
        )
    if not messages:
        raise ToolSpecError('messages is empty; pass at least [{"role": "user", "content": ...}]')
    calls = _Calls(strict=strict)
    out: list[Mapping[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, BaseModel):
            message = message.model_dump(exclude_none=True)
        if not isinstance(message, Mapping):
            raise ToolSpecError(
                f"{where} must be an object such as "
                f'{{"role": "user", "content": "..."}}, got {_kind(message)}'
            )
        message = _legacy_call(message, index, where)
        _check_message(message, where)
        out.append(calls.bind(message, where))
    return out


class _Calls:
    """The calls made so far in a conversation, and which of them have their result."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.ids: set[str] = set()
        self.unanswered: list[tuple[str | None, str]] = []  # (id, name), oldest first

    def bind(self, message: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                call_id, name = call.get("id"), call["function"]["name"]
                if isinstance(call_id, str):
                    self.ids.add(call_id)
                self.unanswered.append((call_id, name))
            return message
        if role == "function":
            return self._function_result(message, where)
        if role != "tool":
            return message
        call_id = message.get("tool_call_id")
        if not self.strict:
            return message
        if call_id is None:
            if not self.unanswered and not self.ids:
                raise ToolSpecError(
                    f"{where} is a tool result, but no earlier assistant message calls a tool; "
                    "send the assistant turn with its tool_calls before the results"
                )
            return message
        if call_id not in self.ids:
            known = ", ".join(repr(i) for i in sorted(self.ids)) or "none"
            raise ToolSpecError(
                f"{where}.tool_call_id {call_id!r} matches no earlier assistant tool call "
                f"(ids so far: {known}); send the id of the call this result answers"
            )
        self.unanswered = [c for c in self.unanswered if c[0] != call_id]
        return message

    def _function_result(self, message: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        name = message.get("name")
        if not isinstance(name, str) or not name:
            raise ToolSpecError(
                f"{where}.name is missing; a 'function' message names the function whose "
                "result it carries"
            )
        for k in range(len(self.unanswered) - 1, -1, -1):
            call_id, called = self.unanswered[k]
            if called == name:
                del self.unanswered[k]
                result = {"role": "tool", **{k: v for k, v in message.items() if k != "role"}}
                if call_id is not None:
                    result["tool_call_id"] = call_id
                return result
        if not self.strict:
            return {"role": "tool", **{k: v for k, v in message.items() if k != "role"}}
        raise ToolSpecError(
            f"{where} (role 'function', name {name!r}) answers no earlier unanswered call of "
            f"{name!r}; send the assistant turn that calls it first"
        )


def _legacy_call(message: Mapping[str, Any], index: int, where: str) -> Mapping[str, Any]:
    """An assistant message's legacy ``function_call`` as one ``tool_calls`` entry."""
    legacy = message.get("function_call")
    if legacy is None or message.get("role") != "assistant" or message.get("tool_calls"):
        return message
    _check_function(legacy, f"{where}.function_call")
    out = {k: v for k, v in message.items() if k != "function_call"}
    out["tool_calls"] = [{"id": f"call{index}", "type": "function", "function": dict(legacy)}]
    return out


def _check_message(message: Mapping[str, Any], where: str) -> None:
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise ToolSpecError(
            f"{where}.role must be a non-empty string such as 'user', got {_kind(role)}"
        )
    if "content" not in message and not (role == "assistant" and message.get("tool_calls")):
        raise ToolSpecError(
            f"{where}.content is missing; a {role!r} message needs one (a string, null or text "
            "parts); only an assistant message that calls tools may leave it out"
        )
    _check_content(message.get("content"), f"{where}.content")
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            raise ToolSpecError(f"{where}.{key} must be a string, got {_kind(value)}")
    calls = message.get("tool_calls")
    if calls is None:
        return
    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
        raise ToolSpecError(f"{where}.tool_calls must be a list, got {_kind(calls)}")
    for j, call in enumerate(calls):
        _check_call(call, f"{where}.tool_calls[{j}]")


def _check_content(content: object, where: str) -> None:
    if content is None or isinstance(content, str):
        return
    if isinstance(content, str | bytes | Mapping) or not isinstance(content, Sequence):
        raise ToolSpecError(
            f"{where} must be a string, null or a list of text parts, got {_kind(content)}"
        )
    for j, part in enumerate(content):
        if isinstance(part, str):
            continue
        if not isinstance(part, Mapping):
            raise ToolSpecError(f"{where}[{j}] must be a content part object, got {_kind(part)}")
        kind = part.get("type", "text")
        if kind != "text":
            raise ToolSpecError(
                f"{where}[{j}] is a {kind!r} part; this handler renders text only (the model's "
                "chat template gets a string), so send the text, or use a multimodal handler"
            )
        if not isinstance(part.get("text"), str):
            text = part.get("text")
            raise ToolSpecError(f"{where}[{j}].text must be a string, got {_kind(text)}")


def _check_call(call: object, where: str) -> None:
    if not isinstance(call, Mapping):
        raise ToolSpecError(f"{where} must be an object, got {_kind(call)}")
    _check_function(call.get("function"), f"{where}.function")
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise ToolSpecError(f"{where}.id must be a string, got {_kind(call_id)}")


def _check_function(function: object, where: str) -> None:
    if not isinstance(function, Mapping):
        raise ToolSpecError(
            f'{where} must be an object {{"name": ..., "arguments": ...}}, got {_kind(function)}'
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f"{where}.name must be a non-empty string, got {_kind(name)}")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str | Mapping):
        raise ToolSpecError(
            f"{where}.arguments must be a JSON string or an object, got {_kind(arguments)}"
        )
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolSpecError(
                f"{where}.arguments is not JSON ({exc.msg} at character {exc.pos}): "
                f"{_kind(arguments)}; send the arguments as a JSON object, as text or as an object"
            ) from None
        if not isinstance(decoded, dict):
            raise ToolSpecError(
                f"{where}.arguments must be a JSON object (as text or as an object), "
                f"got {_kind(arguments)}"
            )
