"""The tool prefix of a prompt: the head of its text the system prompt and tools make.

Every request with the same tools and system prompt starts with these characters, whatever
the conversation after them; the in-process engine keeps a state checkpoint at their end
(``engine.in_process.checkpoints``). Found generically, with no per-template knowledge: the
template renders the leading system turns and a user turn holding a sentinel, and the prefix
is what comes before the sentinel, cut to what the real prompt shares with it (a template that
renders tools later, or into the last user turn, then gets a shorter prefix, never a wrong one).
That render is made once per (tools, system turns, template arguments), cached per model.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ToolDialectError
from ..prompt.compat import SYSTEM_ROLES
from ..tool_defs import ToolDef, tools_key

__all__ = ["PrefixCache", "shared_head", "tool_prefix"]

SENTINEL = "\u2063tooldialect-prefix-probe\u2063"
"""User text no tool set or system prompt contains (invisible separators around a name)."""

_CAPACITY = 32
"""Prefixes kept per model (one per tool set and system prompt an application sends)."""


class PrefixCache(OrderedDict[tuple[Any, ...], str]):
    """Probe results by (tools, system turns, template arguments), the oldest dropped first."""

    def remember(self, key: tuple[Any, ...], value: str) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _CAPACITY:
            self.popitem(last=False)


def shared_head(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (C-speed ``startswith`` probes)."""
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # invariant: a[:lo] is shared, a[:hi + 1] is not (or hi is the end)
        mid = (lo + hi + 1) // 2
        if b.startswith(a[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def tool_prefix(
    cache: PrefixCache,
    render: Callable[[list[Mapping[str, Any]]], str],
    *,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolDef],
    template_kwargs: Mapping[str, Any],
    prompt: str,
) -> str:
    """The head of ``prompt`` that every conversation with these tools and leading system
    turns shares; ``""`` when there are no tools or the template refuses the probe.
    ``render(messages)`` renders as the request does (same tools and template arguments)."""
    if not tools:
        return ""
    system = _leading_system(messages)
    key = (
        tools_key(tools),
        json.dumps(system, sort_keys=True, default=repr),
        json.dumps(dict(template_kwargs), sort_keys=True, default=repr),
    )
    head = cache.get(key)
    if head is None:
        try:
            probe = render([*system, {"role": "user", "content": SENTINEL}])
        except ToolDialectError:
            probe = ""
        at = probe.find(SENTINEL)
        head = probe[:at] if at > 0 else ""
        cache.remember(key, head)
    else:
        cache.move_to_end(key)
    return head[: shared_head(head, prompt)]


def _leading_system(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out = []
    for m in messages:
        if m.get("role") not in SYSTEM_ROLES:
            break
        out.append(m)
    return out
