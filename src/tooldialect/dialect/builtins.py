"""Registry of builtin dialects: one small function per family, each returning a ``DialectSpec``.

Add a family by writing a function that returns its spec and decorating it with ``@builtin`` (or
``@builtin(signatures=..., priority=...)`` so that ``detect_dialect`` recognises its templates).
Markers are copied from the family's own chat template (named in each docstring). Families live in
``dialect/families/`` grouped by body shape; ``hermes`` and ``polyfill-json`` stay here because the
families reuse their layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import overload

from ..errors import DialectError
from .spec import (
    CallFormat,
    DialectSpec,
    JsonBody,
    Polyfill,
    ReasoningMarkers,
    TaggedBody,
    Trigger,
)

__all__ = ["Signature", "builtin", "builtin_dialects", "builtin_signatures", "get_builtin"]

SpecFactory = Callable[[], DialectSpec]


@dataclass(frozen=True)
class Signature:
    """Text a chat template's source must contain (``all_of``) and must not (``none_of``) for a
    builtin to be recognised. Strings are matched against the *source*, so a Jinja string literal
    ``'\\n'`` is the two characters backslash and ``n``."""

    all_of: tuple[str, ...]
    none_of: tuple[str, ...] = ()

    def matches(self, source: str) -> bool:
        """True when every ``all_of`` string and no ``none_of`` string is in ``source``."""
        return all(s in source for s in self.all_of) and not any(s in source for s in self.none_of)


@dataclass(frozen=True)
class _Entry:
    factory: SpecFactory
    signatures: tuple[Signature, ...] = field(default=())
    priority: int = 0
    order: int = 0


_REGISTRY: dict[str, _Entry] = {}
_CACHE: dict[str, DialectSpec] = {}


def _register(fn: SpecFactory, signatures: Sequence[Signature], priority: int) -> SpecFactory:
    spec = fn()
    if spec.id in _REGISTRY:
        raise DialectError(f"duplicate builtin dialect id {spec.id!r}")
    if spec.origin not in ("builtin", "polyfill"):
        raise DialectError(
            f"builtin {spec.id!r} must have origin 'builtin' or 'polyfill', got {spec.origin!r}"
        )
    _REGISTRY[spec.id] = _Entry(fn, tuple(signatures), priority, len(_REGISTRY))
    return fn


@overload
def builtin(fn: SpecFactory, /) -> SpecFactory: ...
@overload
def builtin(
    *, signatures: Sequence[Signature] = (), priority: int = 0
) -> Callable[[SpecFactory], SpecFactory]: ...
def builtin(
    fn: SpecFactory | None = None, /, *, signatures: Sequence[Signature] = (), priority: int = 0
) -> SpecFactory | Callable[[SpecFactory], SpecFactory]:
    """Register ``fn``'s spec under its ``id``.

    ``signatures``: any one of them matching a template source makes ``detect_dialect`` pick this
    builtin; among several matching builtins the highest ``priority`` wins (so a family that refines
    another's markers, e.g. Qwen3-Coder's ``<tool_call>`` + ``<parameter=``, outranks the plain
    one).
    """
    if fn is not None:
        return _register(fn, (), 0)

    def decorate(f: SpecFactory) -> SpecFactory:
        return _register(f, signatures, priority)

    return decorate


def builtin_dialects() -> list[str]:
    """Names of all builtin dialects, sorted."""
    return sorted(_REGISTRY)


def get_builtin(name: str) -> DialectSpec:
    """The builtin spec ``name``; the error lists the valid names."""
    if name not in _REGISTRY:
        raise DialectError(
            f"unknown dialect {name!r}; builtin dialects are: {', '.join(builtin_dialects())}"
        )
    if name not in _CACHE:
        _CACHE[name] = _REGISTRY[name].factory()
    return _CACHE[name]


def builtin_signatures() -> list[tuple[str, tuple[Signature, ...]]]:
    """``(id, signatures)`` of every builtin that has any, highest priority first."""
    entries = sorted(_REGISTRY.items(), key=lambda kv: (-kv[1].priority, kv[1].order))
    return [(name, e.signatures) for name, e in entries if e.signatures]


# A bare {"name": ..., "arguments": ...} at the start of the reply. Small Qwen models write this
# without tags, or inside a ```json fence; the trigger patterns let the lazy grammar constrain
# those forms as well. The whitespace they admit is deliberately bounded: llama.cpp replays the
# captured text into the grammar and aborts the process if it does not fit, and the JSON grammar
# admits only bounded whitespace. Text with more whitespace stays unconstrained; the parser
# still reads it.
_NAME_KEY = r'\{[ \t]{0,4}(?:\n[ \t]{0,8})?"name"[ \t]{0,4}:'
BARE_JSON_TRIGGER = Trigger(kind="pattern", value=r"^\s*(" + _NAME_KEY + ")")
FENCED_JSON_TRIGGER = Trigger(kind="pattern", value=r"^\s*(```json\n" + _NAME_KEY + ")")

THINK = ReasoningMarkers(open="<think>", close="</think>")
"""The common ``<think>...</think>`` reasoning markers (Qwen3, QwQ, DeepSeek R1, GLM...)."""


# Tags Hermes-style models put around a JSON call instead of <tool_call> (llama.cpp's Hermes 2
# Pro parser reads the same set), optionally inside a ``` fence
_HERMES_TAGS = ("function_call", "tool", "tools", "response", "json", "xml", "JSON")
_HERMES_FENCES = ("```json\n", "```xml\n", "```\n")


def _hermes_variants() -> list[CallFormat]:
    """Parse-only layouts Hermes / Qwen models write besides ``<tool_call>``; their markers also
    occur in prose and markup, so a call must name an offered tool."""
    wrapped = [
        CallFormat(
            call_open=f"<{t}>\n",
            call_close=f"\n</{t}>",
            separator="\n",
            parse_only=True,
            offered_names_only=True,
        )
        for t in _HERMES_TAGS
    ]
    fenced = [
        CallFormat(
            section_open=fence,
            section_close="\n```",
            call_open=f"<{t}>\n",
            call_close=f"\n</{t}>",
            separator="\n",
            parse_only=True,
            offered_names_only=True,
        )
        for fence in _HERMES_FENCES
        for t in ("tool_call", *_HERMES_TAGS)
    ]
    functions = [
        CallFormat(
            body=TaggedBody(head=head, tail="</function>"),
            separator="\n",
            parse_only=True,
            offered_names_only=True,
        )
        for head in ("<function={name}>", '<function name="{name}">')
    ]
    return [*wrapped, *fenced, *functions]


def _hermes_formats() -> list[CallFormat]:
    return [
        CallFormat(
            call_open="<tool_call>\n", call_close="\n</tool_call>", separator="\n", body=JsonBody()
        ),
        CallFormat(
            body=JsonBody(), separator="\n", at_start_only=True, triggers=[BARE_JSON_TRIGGER]
        ),
        CallFormat(
            section_open="```json\n",
            section_close="\n```",
            body=JsonBody(),
            separator="\n",
            at_start_only=True,
            triggers=[FENCED_JSON_TRIGGER],
        ),
        *_hermes_variants(),
    ]


@builtin(signatures=[Signature(("<tool_call>",))])
def hermes() -> DialectSpec:
    """Hermes 2 Pro / Qwen2.5 / Qwen3 / QwQ: ``<tool_call>\\n{json}\\n</tool_call>`` per call.

    Markers from NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja and
    Qwen-Qwen2.5-7B-Instruct.jinja
    (``'\\n<tool_call>\\n'`` ... ``'\\n</tool_call>'``); Qwen3 and QwQ reason in ``<think>``."""
    return DialectSpec(
        id="hermes",
        family="Hermes / Qwen2.5 / Qwen3",
        origin="builtin",
        description="JSON envelope in <tool_call> tags (Hermes 2 Pro, Qwen2.5 templates)",
        formats=_hermes_formats(),
        reasoning=THINK,
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


# The families register themselves on import; they need ``builtin`` above, hence the late import.
from .families import element, json_envelope, python_call, tagged  # noqa: E402,F401
