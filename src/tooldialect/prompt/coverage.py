"""No message lost: which of a conversation's messages a render left out of the prompt.

Templates drop what they have no branch for (a role they do not know, a ``system`` turn) without
a word, and the model then answers a conversation the caller never sent. Two checks, the cheap one
first:

* each message's text (stripped: templates trim) is looked for in the prompt, in order, so a
  conversation costs one pass over the prompt. Messages without text carry nothing to lose;
* a message whose text is not found (the template rewrote it, or dropped it) is settled by one
  more render in which every message's text is a sentinel (``tdmsg<index>z``): its sentinel is
  in that render, or the message is lost. The answer is cached per template, dialect and
  conversation shape (roles and which fields are present), so a conversation seen again, or a
  template that rewrites text the same way every time, costs nothing more.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import TemplateError
from .template import ChatTemplate

__all__ = ["lost_messages", "message_text", "unfound_messages"]

Message = Mapping[str, Any]

_CAPACITY = 256
_settled: weakref.WeakKeyDictionary[ChatTemplate, OrderedDict[tuple[Any, ...], frozenset[int]]] = (
    weakref.WeakKeyDictionary()
)
"""Per template: (dialect, shape, indices asked about) -> the indices a sentinel render lost."""


def message_text(message: Message) -> str:
    """The text a message carries, as the template gets it (text parts joined), stripped."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list | tuple):
        parts = [
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, Mapping) and "text" in p)
        ]
        return "\n".join(parts).strip()
    return ""


def unfound_messages(messages: Sequence[Message], prompt: str) -> list[int]:
    """Indices of messages whose text is not in ``prompt`` (searched in order, then anywhere)."""
    missing: list[int] = []
    position = 0
    for index, message in enumerate(messages):
        text = message_text(message) if isinstance(message, Mapping) else ""
        if not text:
            continue
        found = prompt.find(text, position)
        if found < 0:
            found = prompt.find(text)
        if found < 0:
            missing.append(index)
        else:
            position = found + len(text)
    return missing


def _sentinel(index: int) -> str:
    return f"tdmsg{index}z"


def _shape(messages: Sequence[Message]) -> tuple[Any, ...]:
    return tuple(
        (m.get("role"), bool(message_text(m)), bool(m.get("tool_calls")), "tool_call_id" in m)
        for m in messages
    )


def lost_messages(
    template: ChatTemplate,
    dialect: str,
    messages: Sequence[Message],
    prompt: str,
    render: Callable[[list[dict[str, Any]]], str],
) -> list[int]:
    """Indices of ``messages`` that did not reach ``prompt``; ``render`` renders a conversation
    the way ``prompt`` was rendered (it is called only when the cheap check is not enough)."""
    unfound = unfound_messages(messages, prompt)
    if not unfound:
        return []
    key = (dialect, _shape(messages), tuple(unfound))
    memo = _settled.setdefault(template, OrderedDict())
    lost = memo.get(key)
    if lost is None:
        probe = [
            {**m, "content": _sentinel(i)} if message_text(m) else dict(m)
            for i, m in enumerate(messages)
        ]
        try:
            rendered = render(probe)
        except TemplateError:
            rendered = None  # the template refuses sentinels: no evidence of a loss
        lost = frozenset(
            i for i in unfound if rendered is not None and _sentinel(i) not in rendered.lower()
        )
        memo[key] = lost
        while len(memo) > _CAPACITY:
            memo.popitem(last=False)
    return sorted(lost)
