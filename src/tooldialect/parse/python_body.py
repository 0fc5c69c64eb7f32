"""The Python-style body reader (``body.kind == "python"``): ``name(k=v, ...)`` or
``call:name{k:v}``, its values spelled by the body's value codec (``dialect/value_codecs``)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..dialect.spec import CallFormat, PythonBody
from ..dialect.value_codecs import value_codec
from ..dialect.value_codecs.scan import BAD
from .markers import Source, compile_template, match_template, split_literal, stop_before
from .plan import BodyPlan, Context, FormatPlan
from .pycall import KwargsSyntax, More, ScanMemo, read_kwargs, retype_strings
from .reader_events import FAIL, OK, Reader, certain
from .values import fit_empty_containers

__all__ = ["plan_python_body", "read_python_body"]


def _stops(plan: FormatPlan) -> tuple[str, ...]:
    """A next call's opener ends this one unclosed (so scans stay linear); one-character openers
    such as "[" are value syntax, not markers."""
    openers = [split_literal(o)[0] for o in (plan.section_open, plan.call_open) if o]
    return tuple(o for o in openers if len(o) > 2)


def _python_kwargs(
    src: Source, p: int, plan: FormatPlan, body: PythonBody, ctx: Context, fields: dict[str, str]
) -> Reader:
    """Python-valued arguments, read by the tolerant scanner (``pycall``): read again as text
    arrives that may decide them, resuming its searches (``memo``)."""
    schema = ctx.schemas.get(fields["name"], {})
    separator = body.arg_separator.strip() or body.arg_separator
    followers = [plan.section_close, plan.call_close]
    if plan.separator.strip() != separator:  # one alike is followed by a next call (pycall)
        followers.append(plan.separator.strip())
    followers += [a for c in (plan.section_close, plan.call_close) for a in plan.alts.get(c, ())]
    stops, seen, needs = _stops(plan), p, ""
    memo = ScanMemo()
    while True:
        buf = src.buf
        lim, hit = stop_before(buf, p, stops, final=src.final) if stops else (len(buf), False)
        final = src.final or hit
        if final or not needs or any(c in buf[seen:lim] for c in needs):
            syntax = KwargsSyntax(
                assign=body.assign.strip() or body.assign,
                separator=separator,
                close=plan.tail,
                followers=tuple(f for f in followers if f),
                cut=ctx.truncated,  # known once the text is final
                call_open=body.call_open.partition("{name}")[2].strip() or "(",
            )
            got = read_kwargs(
                buf if lim == len(buf) else buf[:lim],
                p,
                syntax,
                final=final,
                schema=schema if isinstance(schema, Mapping) else {},
                memo=memo,
            )
            if got is None:
                return p, FAIL
            if not isinstance(got, More):
                end, args = got
                args_json = json.dumps(args, ensure_ascii=False)
                yield from certain(fields["name"], fields.get("id"), fields.get("index"), args_json)
                return end, OK
            seen, needs = lim, got.needs
        yield None


def plan_python_body(fmt: CallFormat, body: PythonBody) -> BodyPlan:
    """A Python-style call's opener template and closer, compiled."""
    return BodyPlan(
        head=compile_template(body.call_open, optional=fmt.optional_markers),
        tail=body.call_close.strip(),
    )


def read_python_body(
    src: Source, p: int, plan: FormatPlan, body: PythonBody, ctx: Context
) -> Reader:
    """``name(k=v, ...)``: an incremental codec's arguments as they stream, another's once the
    call's closer is found (outside its strings and brackets)."""
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0 or not plan.tail:
        return p, FAIL
    codec = value_codec(body.value_codec)
    if codec.incremental:
        return (yield from _python_kwargs(src, p, plan, body, ctx, fields))
    scan = codec.call_scan(plan.tail, p, quote=body.string_quote)
    stops = _stops(plan)
    while True:
        buf = src.buf
        lim, hit = stop_before(buf, scan.i, stops, final=src.final) if stops else (len(buf), False)
        k = scan.run(buf, lim, src.final)
        if k == BAD:
            return scan.i, FAIL
        if k >= 0:
            args = codec.decode_arguments(
                buf[p:k], assign=body.assign, separator=body.arg_separator, quote=body.string_quote
            )
            if args is None:
                return k, FAIL
            schema = ctx.schemas.get(fields["name"], {})
            schema = schema if isinstance(schema, Mapping) else {}
            args = retype_strings(fit_empty_containers(args, schema), schema)
            args_json = json.dumps(args, ensure_ascii=False)
            yield from certain(fields["name"], fields.get("id"), fields.get("index"), args_json)
            return k + len(plan.tail), OK
        if hit or src.final:
            return scan.i, FAIL
        yield None
