"""Messages in the form chat templates expect: :func:`normalize_messages`.

OpenAI clients send what templates choke on (``content: None``, arguments as JSON text, content
as a list of parts). The forms here are chosen per template by probing
(:class:`~tooldialect.prompt.template.ChatTemplate`), never by family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import TemplateError
from ..shapes import Message
from .shared import plain_data as _plain

__all__ = ["ArgumentForm", "CallContentForm", "ContentForm", "normalize_messages"]

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
"""Names a message's reasoning arrives under; the first is the one templates read (transformers)."""


def _flatten_parts(content: list[Any], *, role: object) -> str:
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type", "text") == "text" and "text" in part:
            texts.append(str(part["text"]))
        else:
            raise TemplateError(
                f"cannot render content part {part!r} of a {role!r} message: only text parts "
                '({"type": "text", "text": ...}) are supported'
            )
    # vLLM joins text parts with a newline for string-content templates; so do we.
    return "\n".join(texts)


ArgumentForm = Literal["object", "string", "as_given"]
"""How ``tool_calls[].function.arguments`` reach the template (see :func:`normalize_messages`)."""


def _convert_arguments(call: Any, form: ArgumentForm) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or "arguments" not in function:
        return call
    arguments = function["arguments"]
    if form == "object" and isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            return call
        if isinstance(decoded, dict):
            function["arguments"] = decoded
    elif form == "string" and isinstance(arguments, dict):
        function["arguments"] = json.dumps(arguments, ensure_ascii=False)
    return call


CallContentForm = Literal["empty", "none"]
"""What an assistant message that only calls tools carries as ``content`` (see below)."""

ContentForm = Literal["text", "parts"]
"""Whether message text reaches the template as a string or as a list of one text part."""


def normalize_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    arguments: ArgumentForm = "object",
    call_content: CallContentForm = "empty",
    content: ContentForm = "text",
) -> list[Message]:
    """Copy OpenAI-shaped messages into the form chat templates expect. Input is never mutated.

    * ``content: None`` (an assistant message that only calls tools) becomes ``""``. Across the
      44 corpus templates this is the one choice that renders every tool-call turn: dropping the
      key (what ``tokenizer.apply_chat_template`` does) breaks Qwen3, QwQ, Granite 3.3, LFM2 and
      others on ``message.content`` operations, and keeping ``None`` prints "None" (GLM 4.6,
      MiniMax M2) or breaks Qwen3, gpt-oss, Ministral 3. Other keys whose value is ``None`` are
      dropped, as transformers does. ``call_content="none"`` keeps ``None`` on assistant messages
      that carry ``tool_calls``, for templates that render calls only then (DeepSeek R1 Distill
      Llama tests ``message['content'] is none``); :class:`ChatTemplate` finds this by probing.
    * ``tool_calls[].function.arguments`` given as a JSON string is decoded to an object
      (``arguments="object"``, the default), so ``arguments | tojson`` does not double-encode it;
      a string that does not decode to an object stays a string. ``arguments="string"`` encodes
      mappings to JSON text instead (for templates that concatenate arguments as a string, such as
      Functionary v3.2), and ``"as_given"`` leaves them alone.
    * List-of-parts content (``[{"type": "text", "text": ...}]``) is flattened to one string,
      parts joined by ``"\\n"``. Non-text parts raise :class:`~tooldialect.TemplateError`.
      ``content="parts"`` gives every string content as one text part instead (``""`` too), for
      templates that only iterate parts (Idefics 3) or index them (``content[0].thinking``:
      Command A Reasoning); :class:`ChatTemplate` finds this by probing.
    * Reasoning given as ``reasoning_content``, ``thinking`` or ``reasoning`` is copied to
      ``reasoning_content`` and ``thinking`` (transformers does the same; gpt-oss reads
      ``thinking``).
    """
    normalized: list[Message] = []
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping | BaseModel):
            raise TemplateError(
                f"message {index} is {raw!r}; pass a mapping such as "
                '{"role": "user", "content": "..."}'
            )
        plain = _plain(raw)
        message = {key: value for key, value in plain.items() if value is not None}
        if "content" in plain and plain["content"] is None:
            keep_none = call_content == "none" and bool(plain.get("tool_calls"))
            message["content"] = None if keep_none else ""
        text = message.get("content")
        if isinstance(text, list | tuple):
            text = message["content"] = _flatten_parts(list(text), role=message.get("role"))
        if content == "parts" and isinstance(text, str):
            message["content"] = [{"type": "text", "text": text}]
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [_convert_arguments(call, arguments) for call in calls]
        reasoning = next((message[key] for key in _REASONING_FIELDS if key in message), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        normalized.append(message)
    return normalized
