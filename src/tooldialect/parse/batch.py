"""``parse_output``: a whole reply split into content, reasoning and tool calls.

It is ``StreamParser`` fed the whole text at once, so batch and streaming parsing cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dialect.spec import DialectSpec
from ..tools import ToolDef
from .result import ParsedOutput
from .stream import StreamParser

__all__ = ["parse_output"]


def parse_output(
    text: str,
    spec: DialectSpec,
    *,
    tools: Sequence[ToolDef | Mapping[str, Any]] | None = None,
    reasoning_open: bool = False,
    prefill: str = "",
    truncated: bool = False,
) -> ParsedOutput:
    """Split a model reply written in ``spec``'s dialect into content, reasoning and tool calls.

    ``tools`` (``ToolDef`` s or OpenAI tool dicts) type element/XML argument values by schema.
    ``reasoning_open`` means the prompt ended inside an open reasoning block; ``prefill`` is text
    the prompt already wrote at the start of the reply (e.g. ``>>>``), read first and never part of
    the result. Text that is not a well-formed call stays in ``content`` unchanged; see
    ``StreamParser`` for the whitespace rule and ``prefill``. ``truncated``: the token limit cut
    the text; a cut-off call is then never completed (``StreamParser.close``).
    """
    parser = StreamParser(spec, tools=tools, reasoning_open=reasoning_open, prefill=prefill)
    parser.feed(text)
    parser.close(truncated=truncated)
    return parser.result
