"""``validate_messages``: a caller's OpenAI messages checked before any template sees them.

A malformed message should fail with a ``ToolSpecError`` that names the message and the field
(``messages[3].tool_calls[0].function.name``), not with whatever a chat template does with it
somewhere deep inside (``'int object' has no attribute 'strip'``). What is accepted, on purpose:

* any non-empty string ``role``: templates define their own (``ipython``, ``developer``,
  ``observation``...); a template that does not know a role says so itself;
* ``content`` as a string, ``None``, or a list of text parts (``{"type": "text", "text": ...}``
  or plain strings), which OpenAI clients send; the parts are joined for the template;
* a ``tool`` message whose ``tool_call_id`` matches no earlier call: it renders as given (some
  templates check ids and refuse, quoting their own message);
* extra keys (``name``, ``reasoning_content``, vendor fields): passed through;
* a missing ``content`` on an assistant message that calls tools (OpenAI allows it); any other
  message without ``content`` is refused.

``tool_calls[].function.arguments`` must be a JSON object, as text or as a mapping: prompts and the
polyfill decode it, and a model never wrote anything else.

Non-text parts (images, audio, files) are refused: the handler renders text-only prompts.
Nothing is copied or mutated here: this only reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import ToolSpecError

__all__ = ["validate_messages"]


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def validate_messages(messages: object) -> None:
    """Raise ``ToolSpecError`` naming the first malformed message field; return otherwise."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ToolSpecError(
            f"messages must be a list of message objects, got {_kind(messages)}; pass "
            '[{"role": "user", "content": "..."}]'
        )
    if not messages:
        raise ToolSpecError('messages is empty; pass at least [{"role": "user", "content": ...}]')
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, BaseModel):
            message = message.model_dump()
        if not isinstance(message, Mapping):
            raise ToolSpecError(
                f"{where} must be an object such as "
                f'{{"role": "user", "content": "..."}}, got {_kind(message)}'
            )
        _check_message(message, where)


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
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise ToolSpecError(
            f'{where}.function must be an object {{"name": ..., "arguments": ...}}, '
            f"got {_kind(function)}"
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f"{where}.function.name must be a non-empty string, got {_kind(name)}")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str | Mapping):
        raise ToolSpecError(
            f"{where}.function.arguments must be a JSON string or an object, got {_kind(arguments)}"
        )
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise ToolSpecError(
                f"{where}.function.arguments must be a JSON object (as text or as an object), "
                f"got {_kind(arguments)}"
            )
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise ToolSpecError(f"{where}.id must be a string, got {_kind(call_id)}")
