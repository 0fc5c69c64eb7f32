"""``ReplyMemory``: the model's own words for the assistant turns it wrote, so history re-renders
into the tokens the KV cache already holds.

A model often writes a call in a tolerated layout (Qwen2.5 writes bare JSON where its template
re-renders ``<tool_call>`` tags) or with its own JSON spacing. When the client sends that turn back
as structured ``tool_calls``, the template re-renders it canonically, the prompt diverges from the
cache right after ``assistant``, and the whole reply is decoded again on the next turn. Rendering
the turn as the raw text the model wrote keeps the cache valid, and shows the model exactly what
it said. Turns are matched by what the client saw (content and calls), never by position.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ReplyMemory"]


class ReplyMemory:
    """A bounded map from an assistant message, as the client saw it, to the raw text behind it."""

    def __init__(self, *, capacity: int = 64) -> None:
        self.capacity = capacity
        self._raw: OrderedDict[str, str] = OrderedDict()

    def remember(self, message: Mapping[str, Any], raw: str) -> None:
        """Record that ``message`` (an OpenAI assistant message) came from ``raw``."""
        key = _fingerprint(message)
        if key is None or not raw:
            return
        self._raw[key] = raw
        self._raw.move_to_end(key)
        while len(self._raw) > self.capacity:
            self._raw.popitem(last=False)

    def restore(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
        """``messages`` with every remembered assistant turn replaced by its raw text, or ``None``
        when nothing matched (the caller then renders the messages unchanged)."""
        out: list[Mapping[str, Any]] = []
        hit = False
        for message in messages:
            key = _fingerprint(message) if message.get("role") == "assistant" else None
            raw = self._raw.get(key) if key is not None else None
            if raw is None:
                out.append(message)
                continue
            hit = True
            out.append({"role": "assistant", "content": raw})
        return out if hit else None


def _fingerprint(message: Mapping[str, Any]) -> str | None:
    """Content and calls, normalised (argument strings decoded, ids ignored); reasoning turns are
    not remembered: templates drop or reshape old reasoning, and that should stay their call."""
    if message.get("reasoning_content") or message.get("reasoning"):
        return None
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args) if args.strip() else {}
        calls.append([fn.get("name"), args])
    content = message.get("content") or ""
    if not isinstance(content, str):
        return None  # list-of-parts content: not something this library produced
    return json.dumps([content, calls], sort_keys=True, ensure_ascii=False)
