"""Hermes and the JSON polyfill: the layouts other families reuse (``common.hermes_formats``)."""

from __future__ import annotations

from ..registry import Signature, builtin
from ..spec import DialectSpec, Polyfill
from .common import THINK, hermes_formats


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
        formats=hermes_formats(),
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
        formats=hermes_formats(),
        polyfill=Polyfill(),
    )
