"""What parsing a reply yields: ``ToolCall`` and ``ParsedOutput`` (OpenAI-shaped data)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ParsedOutput", "ToolCall", "finished_call"]


class ToolCall(BaseModel):
    """One parsed tool call."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The call id: the model's own (``id_key``, ``{id}`` in a template, ``spec.id_template``)
    when it wrote one, else a fresh one from ``spec.new_id``."""
    name: str
    """Function name, as written by the model (not checked against ``tools``)."""
    arguments: dict[str, Any]
    """Decoded arguments; equals ``json.loads(arguments_json)``, except for a ``truncated`` call,
    whose arguments are empty."""
    arguments_json: str
    """The exact string to give as OpenAI ``function.arguments``; in streaming it is the
    concatenation of the argument fragments."""
    index: int
    """Position among the reply's calls, contiguous from 0."""
    truncated: bool = False
    """The token limit cut this call inside its arguments: ``arguments_json`` is the partial text
    the model wrote (not valid JSON), never a completed call. See docs/parsing.md."""

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``{"id", "type": "function", "function": {...}}`` form."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


class ParsedOutput(BaseModel):
    """A reply split into content, reasoning and tool calls."""

    model_config = ConfigDict(frozen=True)

    content: str | None = None
    """Text outside reasoning and calls, pieces concatenated; ``None`` when empty. Whitespace
    adjacent to a marker (reasoning, call envelope, ``strip`` marker) is dropped; the pieces before
    and after a block of calls are joined with one ``"\n"`` when both are non-empty."""
    reasoning_content: str | None = None
    """Text inside reasoning markers (an unclosed block at the end counts); ``None`` when empty."""
    tool_calls: list[ToolCall] = []
    """Calls in the order written."""


def finished_call(cid: str, name: str, parts: list[str], *, index: int, cut: bool) -> ToolCall:
    """The ``ToolCall`` of a call whose arguments text came in ``parts``; ``cut``: truncation
    cut it (its arguments are the partial text, not JSON, and ``arguments`` is ``{}``)."""
    text = "".join(parts) or "{}"
    if cut:
        return ToolCall(
            id=cid, name=name, arguments={}, arguments_json=text, index=index, truncated=True
        )
    return ToolCall(id=cid, name=name, arguments=json.loads(text), arguments_json=text, index=index)
