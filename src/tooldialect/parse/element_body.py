"""The element-body reader (``body.kind == "element"``): one element per argument, values as raw
text typed by the tool's schema, read leniently (indented layouts, missing value and tail closers;
see docs/parsing.md)."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dialect.spec import ElementBody
from .events import FAIL, OK, Reader, certain
from .markers import (
    Segment,
    Source,
    find_literal,
    match_template,
    probe_closer,
    probe_literal,
    skip_ws,
    split_literal,
)
from .values import coerce_value

if TYPE_CHECKING:
    from .calls import Context, FormatPlan

__all__ = ["read_element_body"]


def _trim(value: str, body: ElementBody, *, indented: bool) -> str:
    """The value as meant: one newline stripped on each side where the template writes them,
    and, in a layout the model indented (``indented``), the common indentation of its lines and
    a last line holding only the closer's indentation. Where the template writes the value
    inline, a newline on both sides is the model's layout and is stripped too."""
    if not body.trim_value and len(value) > 1 and value[0] == "\n" and value[-1] == "\n":
        value = value[1:-1]
    if body.trim_value:
        if value.startswith("\r\n"):
            value = value[2:]
        elif value.startswith("\n"):
            value = value[1:]
        if indented:
            last = value.rfind("\n")
            if last >= 0 and not value[last + 1 :].strip():
                value = value[:last] + "\n"
        if value.endswith("\r\n"):
            value = value[:-2]
        elif value.endswith("\n"):
            value = value[:-1]
    return _dedent(value) if indented else value


def _dedent(value: str) -> str:
    lines = value.split("\n")
    widths = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    if not cut:
        return value
    return "\n".join(line[cut:] if line.strip() else line.strip(" \t") for line in lines)


def _unescape(value: str) -> str:
    return value.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")


@dataclass
class _Unfinished:
    """A buffer seen as still growing (``final`` false), for ``_cut_short``."""

    buf: str
    final: bool = False


def _cut_short(buf: str, p: int, segments: tuple[Segment, ...]) -> bool:
    """Whether matching ``segments`` at ``p`` would have waited for more text had ``buf`` not
    ended: the text ended inside an element, rather than the element being absent."""
    gen = match_template(_Unfinished(buf), p, segments)
    try:
        next(gen)
    except StopIteration:
        return False
    return True


def _value_end(src: Source, p: int, plan: FormatPlan) -> Generator[None, None, tuple[int, bool]]:
    """Where the value starting at ``p`` ends: (position, whether its own closer follows), or
    (-1, False) when the text ends inside it.

    The value ends at its closer unless the next parameter begins first: then the closer is
    missing, and the value ends at the first of the body's tail, the call or section closer and
    that next parameter. A value holding a closer's text (``x</tool_call>``) before its own
    closer keeps it."""
    closer, *others = plan.value_ends
    c = yield from find_literal(src, p, closer, limit=None)
    buf = src.buf
    limit = c if c >= 0 else len(buf)
    nxt = _find_before(src, p, limit, plan.param_pre[0].core) if plan.param_pre[0].core else -1
    if c >= 0 and nxt < 0:
        return c, True
    stop = nxt if nxt >= 0 else limit
    ends = [k for k in (_find_before(src, p, stop, e) for e in others) if k >= 0]
    if nxt >= 0:
        ends.append(nxt)
    if ends:
        return min(ends), False
    return -1, False


def _find_before(src: Source, p: int, end: int, core: str) -> int:
    """Start of the first ``core`` (with its optional whitespace) in ``src.buf[p:end]``, or -1;
    the text there is all read."""
    pieces = split_literal(core)
    buf = src.buf
    k = buf.find(pieces[0], p, end)
    while k >= 0:
        q = k + len(pieces[0])
        for piece in pieces[1:]:
            while q < len(buf) and buf[q].isspace():
                q += 1
            if not buf.startswith(piece, q):
                break
            q += len(piece)
        else:
            return k
        k = buf.find(pieces[0], k + 1, end)
    return -1


def _is_indented(buf: str, p: int) -> bool:
    """Whether the line holding ``p`` starts with indentation before it."""
    line = buf.rfind("\n", 0, p) + 1
    return line < p and not buf[line:p].strip() and buf[line] in " \t"


def read_element_body(
    src: Source, p: int, plan: FormatPlan, body: ElementBody, ctx: Context
) -> Reader:
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0:
        return p, FAIL
    name = fields["name"]
    schema = ctx.schemas.get(name, {})
    props = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    args: dict[str, Any] = {}
    split = bool(plan.param_pre)
    while True:
        if plan.tail:
            q = yield from probe_closer(src, p, plan.tail)
            if q >= len(src.buf) and ctx.truncated and _cut_short(src.buf, p, plan.param):
                # the token limit cut a marker that may as well open another parameter as the
                # tail (a lone ``<``): the call is cut, not complete
                return p, FAIL
            if q >= 0:
                p = q
                break
        q, pf = yield from match_template(src, p, plan.param_pre if split else plan.param)
        if q >= 0 and split:
            k, closed = yield from _value_end(src, q, plan)
            if k < 0:
                q = -1
            else:
                raw = src.buf[q:k]
                tag = q - len(src.buf[p:q].lstrip())  # where the element began
                indented = _is_indented(src.buf, tag) or _is_indented(src.buf, k)
                if closed:
                    q, post = yield from match_template(src, k, plan.param_post)
                    pf.update(post)
                else:
                    q = k
                    raw = raw.rstrip()
                pf["value"] = raw
        else:
            indented = False
        if q < 0:
            rest = yield from skip_ws(src, p)
            at_end = src.final and rest >= len(src.buf)
            if at_end and ctx.truncated:
                return p, FAIL  # the token limit cut the body before its closer: not a call
            if plan.tail and not at_end:
                if (yield from _closes_call(src, p, plan)):
                    break  # the body's tail is missing, the call or section closer follows
                return p, FAIL
            if not at_end and src.final and _cut_short(src.buf, p, plan.param):
                return p, FAIL  # no tail, and the text ended inside a parameter: truncated
            break  # a missing tail at the end of the text is tolerated
        key = pf.get("key", "")
        raw = _trim(pf.get("value", ""), body, indented=indented)
        sub = props.get(key) if isinstance(props, Mapping) else None
        value = coerce_value(raw, sub, root=schema, is_string=pf.get("is_string"))
        if body.unescape_value and isinstance(value, str):
            value = _unescape(value)
        args[key] = value
        p = q
    yield from certain(
        name, fields.get("id"), fields.get("index"), json.dumps(args, ensure_ascii=False)
    )
    return p, OK


def _closes_call(src: Source, p: int, plan: FormatPlan) -> Generator[None, None, bool]:
    for core in (plan.call_close, plan.section_close):
        if core and (yield from probe_literal(src, p, core)) >= 0:
            return True
    return False
