"""The tagged-body reader (``body.kind == "tagged"``): a head template naming the function
(``<function={name}>``, ``{name}[ARGS]``), JSON arguments, a tail."""

from __future__ import annotations

import re
from collections.abc import Generator

from ..dialect.spec import CallFormat, TaggedBody, format_template
from .json_body import end_event, stream_args
from .markers import Source, compile_template, match_template, probe_closers, probe_literal, skip_ws
from .plan import BodyPlan, Context, FormatPlan
from .raw_args import read_raw_call
from .reader_events import BROKEN, FAIL, OK, Begin, End, Reader

__all__ = ["plan_tagged_body", "read_tagged_body"]


def plan_tagged_body(fmt: CallFormat, body: TaggedBody) -> BodyPlan:
    """A tagged body's head template, argument fences and tail, compiled."""
    return BodyPlan(
        head=compile_template(body.head, optional=fmt.optional_markers),
        tail=body.tail.strip(),
        args_open=body.args_open.strip(),
        args_close=body.args_close.strip(),
        raw_args_key=body.raw_args_key,
    )


def read_tagged_body(
    src: Source, p: int, plan: FormatPlan, body: TaggedBody, ctx: Context
) -> Reader:
    """A head naming the function, then JSON arguments (or, where they are not JSON, the raw
    text of ``TaggedBody.raw_args_key``), then the tail."""
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0:
        return p, FAIL
    q = yield from probe_literal(src, p, plan.args_open)
    if q < 0 and plan.args_open.startswith("```"):
        q = yield from _probe_fence(src, p)  # a fence with another info string, or none
    if q < 0:
        q = p  # the arguments' opener is missing: the "{" below decides
    p = yield from skip_ws(src, q)
    if src.buf[p : p + 1] != "{":
        return (yield from read_raw_call(src, q, plan, ctx, fields))
    yield Begin(fields["name"], fields.get("id"), fields.get("index"))
    p, complete = yield from stream_args(src, p, ctx, plan.closers)
    if p < 0:
        yield End(void=True)
        return p, FAIL  # broken JSON arguments: not a call
    yield end_event(src, ctx, complete)
    if not complete:
        return p, BROKEN
    # closing literals after complete arguments are tolerated when missing
    for core in (plan.args_close, format_template(plan.tail, name=fields["name"])):
        q = yield from probe_closers(src, p, core, plan.alts)
        if q < 0:
            return p, OK
        p = q
    return p, OK


_FENCE = re.compile(r"\s*```[\w.+-]*")


def _probe_fence(src: Source, p: int) -> Generator[None, None, int]:
    """End of a code fence opener (```, ```json, ```python) at ``p``, else -1."""
    while True:
        m = _FENCE.match(src.buf, p)
        if m is None:
            if src.final or not "```".startswith(src.buf[p:].lstrip()):
                return -1
        elif m.end() < len(src.buf) or src.final:
            return m.end()
        yield None
