"""Arguments written as raw text instead of JSON (``TaggedBody.raw_args_key``): Functionary's
``python`` tool writes its code bare, ``>>>python\\nprint(1)``. The text up to the body's tail,
the next call's opener or the end of the reply becomes ``{key: text}``. Read whole (nothing
streams before its end is known), so streaming equals batch."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from typing import Any

from .markers import Source, find_literal, probe_closer
from .plan import Context, FormatPlan
from .reader_events import FAIL, OK, Reader, certain

__all__ = ["read_raw_args", "read_raw_call"]


def _takes_string(schema: Any, key: str) -> bool:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    sub = props.get(key) if isinstance(props, Mapping) else None
    return isinstance(sub, Mapping) and sub.get("type") in ("string", None)


def read_raw_args(
    src: Source,
    p: int,
    *,
    key: str,
    ends: tuple[str, ...],
    schema: Any,
) -> Generator[None, None, tuple[int, str | None]]:
    """``(end, arguments JSON)`` of raw text at ``p`` ended by the first of ``ends`` (not
    consumed) or the end of the reply; ``(p, None)`` when it is not raw arguments: no key, a
    tool that is not offered or whose schema lacks ``key`` as a string (raw text names no tool by
    itself), or empty text.
    Ended by the end of the reply, ``end`` is ``len(src.buf)``."""
    if not key or not _takes_string(schema, key):
        return p, None
    stops: list[int] = []
    for core in ends:
        k = yield from find_literal(src, p, core, limit=None)
        if k >= 0:
            stops.append(k)
    end = min(stops, default=len(src.buf))
    text = src.buf[p:end].strip("\n")
    if not text.strip():
        return p, None
    return end, json.dumps({key: text}, ensure_ascii=False)


def read_raw_call(
    src: Source, p: int, plan: FormatPlan, ctx: Context, fields: dict[str, str]
) -> Reader:
    """A tagged call whose arguments are raw text (``TaggedBody.raw_args_key``), from ``p`` (after
    the head); fails where they are not."""
    key = plan.raw_args_key
    ends = tuple(e for e in (plan.tail, plan.fmt.call_open.strip()) if e)
    end, args = yield from read_raw_args(
        src, p, key=key, ends=ends, schema=ctx.schemas.get(fields["name"])
    )
    if args is None or (ctx.truncated and end >= len(src.buf)):
        return p, FAIL  # not raw arguments, or the token limit cut them: content
    yield from certain(fields["name"], fields.get("id"), fields.get("index"), args)
    q = (yield from probe_closer(src, end, plan.tail)) if plan.tail else -1
    return (q if q >= 0 else end), OK
