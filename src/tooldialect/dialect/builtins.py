"""Registry of builtin dialects: one small function per family, each returning a ``DialectSpec``.

Add a family by writing a function that returns its spec and decorating it with ``@builtin``.
Markers are copied from the family's own chat template (named in each docstring).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import DialectError
from .spec import CallFormat, DialectSpec, JsonBody, Polyfill, Trigger

__all__ = ["builtin_dialects", "get_builtin"]

_REGISTRY: dict[str, Callable[[], DialectSpec]] = {}
_CACHE: dict[str, DialectSpec] = {}


def builtin(fn: Callable[[], DialectSpec]) -> Callable[[], DialectSpec]:
    """Register ``fn``'s spec under its ``id``."""
    spec = fn()
    if spec.id in _REGISTRY:
        raise DialectError(f"duplicate builtin dialect id {spec.id!r}")
    _REGISTRY[spec.id] = fn
    return fn


def builtin_dialects() -> list[str]:
    """Names of all builtin dialects, sorted."""
    return sorted(_REGISTRY)


def get_builtin(name: str) -> DialectSpec:
    """The builtin spec ``name``; the error lists the valid names."""
    if name not in _REGISTRY:
        raise DialectError(f"unknown dialect {name!r}; builtin dialects are: {', '.join(builtin_dialects())}")
    if name not in _CACHE:
        _CACHE[name] = _REGISTRY[name]()
    return _CACHE[name]


# A bare {"name": ..., "arguments": ...} at the start of the reply. Small Qwen models write this
# without tags; the trigger pattern lets the lazy grammar constrain it as well.
BARE_JSON_TRIGGER = Trigger(kind="pattern", value=r'^\s*(\{\s*"name"\s*:)')


def _hermes_formats() -> list[CallFormat]:
    return [
        CallFormat(call_open="<tool_call>\n", call_close="\n</tool_call>", separator="\n", body=JsonBody()),
        CallFormat(body=JsonBody(), separator="\n", at_start_only=True, triggers=[BARE_JSON_TRIGGER]),
    ]


@builtin
def hermes() -> DialectSpec:
    """Hermes 2 Pro / Qwen2.5 / Qwen3 / QwQ: ``<tool_call>\\n{json}\\n</tool_call>`` per call."""
    return DialectSpec(
        id="hermes",
        family="Hermes / Qwen2.5 / Qwen3",
        origin="builtin",
        description="JSON envelope in <tool_call> tags (NousResearch Hermes 2 Pro, Qwen2.5 templates)",
        formats=_hermes_formats(),
    )


@builtin
def polyfill_json() -> DialectSpec:
    """For templates with no tool support (SmolLM2, Gemma 2, Phi-3.5, RWKV): hermes-style calls
    carried as plain text, tools described in the system prompt, results sent as a user turn."""
    return DialectSpec(
        id="polyfill-json",
        family="Polyfill (templates without tool support)",
        origin="polyfill",
        description="Tool guide in the system prompt; <tool_call> JSON calls written as text",
        formats=_hermes_formats(),
        polyfill=Polyfill(),
    )
