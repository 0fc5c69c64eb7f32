"""``parse_output``: a whole reply split into content, reasoning and tool calls.

It is ``StreamParser`` fed the whole text at once, so batch and streaming parsing cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dialect.spec import DialectSpec
from ..errors import ToolCallParseError
from ..tool_defs import ToolLike
from .result import ParsedOutput
from .stream import StreamParser

__all__ = ["parse_output"]


def parse_output(
    text: str,
    spec: DialectSpec,
    *,
    tools: Sequence[ToolLike] | None = None,
    reasoning_open: bool = False,
    prefill: str = "",
    truncated: bool = False,
    strict: bool = False,
    end_of_turn: Sequence[str] = (),
    stream_arguments: bool = False,
    read_calls: bool = True,
) -> ParsedOutput:
    """Split a model reply written in ``spec``'s dialect into content, reasoning and tool calls.

    ``tools`` (``ToolDef`` s or OpenAI tool dicts) type element/XML argument values by schema.
    ``reasoning_open`` means the prompt ended inside an open reasoning block; ``prefill`` is text
    the prompt already wrote at the start of the reply (e.g. ``>>>``), read first and never part of
    the result. Text that is not a well-formed call stays in ``content`` unchanged; see
    ``StreamParser`` for the whitespace rule and ``prefill``. ``truncated``: the token limit cut
    the text; a cut-off call is then never completed (``StreamParser.close``). ``end_of_turn``:
    marker texts that end the reply (the template's end of an assistant turn, ``<|im_end|>``):
    the first one and everything after it are not part of the result. ``stream_arguments``:
    read as ``StreamParser`` with that option (a call whose JSON breaks mid-text is then kept,
    healed, instead of staying content). ``read_calls=False``: no call is read, reasoning still
    is (``tool_choice="none"``, see ``StreamParser``).

    ``strict``: a call the reply opens must be read as one. Leniency keeps a call that does not
    parse as content; strict parsing raises ``ToolCallParseError`` instead when the content still
    holds one of the dialect's call openers.
    """
    parser = StreamParser(
        spec,
        tools=tools,
        reasoning_open=reasoning_open,
        prefill=prefill,
        end_of_turn=end_of_turn,
        stream_arguments=stream_arguments,
        read_calls=read_calls,
    )
    parser.feed(text)
    parser.close(truncated=truncated)
    result = parser.result
    if strict and result.content:
        for opener in _openers(spec):
            at = result.content.find(opener)
            if at >= 0:
                raise ToolCallParseError(
                    f"the reply opens a call with {opener!r} that does not parse as one: "
                    f"{result.content[at : at + 120]!r}; check the arguments against the tool's "
                    "schema, or parse without strict=True to keep such text as content"
                )
    return result


def _openers(spec: DialectSpec) -> list[str]:
    """The envelope markers that open a call (or a block of calls) in ``spec``, each once; weak
    markers that also occur in prose (``offered_names_only`` layouts) are not evidence."""
    found = (
        (fmt.section_open or fmt.call_open).strip()
        for fmt in spec.formats
        if not fmt.offered_names_only
    )
    return list(dict.fromkeys(m for m in found if m))
