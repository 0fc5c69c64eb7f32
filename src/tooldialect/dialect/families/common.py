"""Layouts and markers several families share: ``<think>``, the hermes layouts and triggers."""

from __future__ import annotations

from ..spec import CallFormat, JsonBody, ReasoningMarkers, TaggedBody, Trigger

__all__ = ["BARE_JSON_TRIGGER", "FENCED_JSON_TRIGGER", "THINK", "hermes_formats"]


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


def hermes_formats() -> list[CallFormat]:
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
