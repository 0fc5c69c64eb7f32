"""Parsed calls checked against their tool's full JSON Schema, for every engine, batch and stream.

The grammar enforces most of a schema; what it leaves loose (``SchemaConverter.loose``), and
text the lenient parser read where no grammar constrained it (before a lazy grammar fired, or
with no grammar at all), can still give arguments the tool's schema rejects.
``grammar.validate.check_call`` finds those; this module decides what the reply says about
them, as ``ToolChatHandler(invalid_arguments=...)`` / ``ServerClient(invalid_arguments=...)``
ask (docs/parsing.md):

* ``"report"`` (default): the call stays in ``tool_calls`` (OpenAI's shape is unchanged, the
  client decides), the message (the last chunk's delta, when streaming) gets a non-standard
  ``invalid_tool_calls`` list, after LangChain's field, naming each call, the JSON pointer and
  the failing keyword, and the ``tooldialect`` logger records a warning;
* ``"raise"``: ``InvalidToolCallError`` naming the call and its problems (when streaming, after
  the call's deltas went out: its arguments are only complete then).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from ..errors import InvalidToolCallError, OptionError
from ..grammar.validate import check_call
from ..shapes import InvalidToolCall, SchemaProblem

if TYPE_CHECKING:
    from ..parse import ToolCall
    from .request import Request

__all__ = [
    "INVALID_ARGUMENTS",
    "InvalidArguments",
    "check_invalid_arguments",
    "invalid_calls",
    "surface_invalid",
]

InvalidArguments = Literal["report", "raise"]
INVALID_ARGUMENTS: tuple[InvalidArguments, ...] = ("report", "raise")

logger = logging.getLogger("tooldialect")

_SHOWN = 5
"""Problems spelled out per call in ``error`` (``problems`` has them all)."""


def check_invalid_arguments(value: object, *, adapter: str) -> InvalidArguments:
    """``value`` as an ``invalid_arguments`` option, or ``OptionError`` naming it."""
    for known in INVALID_ARGUMENTS:
        if value == known:
            return known
    raise OptionError(
        f"invalid_arguments={value!r} is not a policy; pass {adapter}(invalid_arguments='report') "
        "(keep the call, list it in invalid_tool_calls) or 'raise' (InvalidToolCallError)"
    )


def invalid_calls(
    request: Request, calls: Sequence[ToolCall], ids: Mapping[str, str]
) -> list[InvalidToolCall]:
    """The calls whose arguments fail their tool's schema, as ``invalid_tool_calls`` entries.

    A call the token limit cut (``truncated``) is left out: ``finish_reason: "length"`` already
    says its arguments are incomplete. ``ids`` maps dialect ids to the client's (the reply's)."""
    out: list[InvalidToolCall] = []
    for call in calls:
        if call.truncated:
            continue
        found = check_call(request.tools, call.name, call.arguments)
        if not found:
            continue
        problems: list[SchemaProblem] = [
            {"path": p.path, "keyword": p.keyword, "message": p.message} for p in found
        ]
        error = "; ".join(
            f"{p['path'] or '/'}: {p['message']} ({p['keyword'] or 'schema'})"
            for p in problems[:_SHOWN]
        )
        if len(problems) > _SHOWN:
            error += f"; and {len(problems) - _SHOWN} more"
        out.append(
            {
                "id": ids.get(call.id, call.id),
                "name": call.name,
                "args": call.arguments_json,
                "error": error,
                "problems": problems,
            }
        )
    return out


def surface_invalid(invalid: list[InvalidToolCall], policy: InvalidArguments) -> None:
    """Log each invalid call; under ``"raise"``, raise ``InvalidToolCallError`` for them."""
    if not invalid:
        return
    text = " | ".join(f"tool call {c['name']!r} (id {c['id']}): {c['error']}" for c in invalid)
    if policy == "raise":
        raise InvalidToolCallError(
            f"the model wrote arguments invalid for the tool's schema: {text}. Retry the "
            "request, or pass invalid_arguments='report' to get such calls back listed in "
            "the message's invalid_tool_calls",
            calls=[dict(c) for c in invalid],
        )
    logger.warning("arguments invalid for the tool's schema: %s", text)
