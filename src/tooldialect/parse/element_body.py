"""The element-body reader (``body.kind == "element"``): one element per argument, values as raw
text typed by the tool's schema, read leniently (indented layouts, missing value and tail closers;
see docs/parsing.md)."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dialect.spec import ElementBody, format_template
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


def _typed(raw: str, body: ElementBody, fields: Mapping[str, str]) -> tuple[str, str | None]:
    """The value text and its string flag: a CDATA section is unwrapped (text), a JSON string
    where the family writes JSON values is decoded (text), a ``{type}`` attribute names the
    type through ``body.type_names``."""
    flag = fields.get("is_string")
    if "type" in fields:
        written = fields["type"].strip()
        names = {v: k for k, v in body.type_names.items()}
        flag = "true" if names.get(written, written) == "string" else "false"
    text = raw.strip()
    if text.startswith(_CDATA_OPEN) and text.endswith(_CDATA_CLOSE):
        return text[len(_CDATA_OPEN) : -len(_CDATA_CLOSE)], flag or "true"
    if body.json_values and text.startswith('"'):
        try:
            decoded = json.loads(text)
        except ValueError:
            return raw, flag
        if isinstance(decoded, str):
            return decoded, "true"
    return raw, flag


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


_CDATA_OPEN, _CDATA_CLOSE = "<![CDATA[", "]]>"


def _value_end(
    src: Source, p: int, plan: FormatPlan, name: str
) -> Generator[None, None, tuple[int, bool]]:
    """Where the value starting at ``p`` ends: (position, whether its own closer follows), or
    (-1, False) when the text ends inside it.

    The value ends at its closer unless the next parameter begins first: then the closer is
    missing, and the value ends at the first of the body's tail, the call or section closer and
    that next parameter. A value holding a closer's text (``x</tool_call>``) before its own
    closer keeps it."""
    closer, *others = (format_template(e, name=name) for e in plan.value_ends)
    start = p
    while not src.final and _CDATA_OPEN.startswith(src.buf[p:].lstrip()):
        yield None  # too short to tell whether a CDATA section opens here
    if src.buf[p:].lstrip().startswith(_CDATA_OPEN):
        # a CDATA section may hold the closer's text: the value ends after the section
        k = yield from find_literal(src, p, _CDATA_CLOSE, limit=None)
        start = k + len(_CDATA_CLOSE) if k >= 0 else p
    c = yield from find_literal(src, start, closer, limit=None)
    buf = src.buf
    limit = c if c >= 0 else len(buf)
    core = plan.param_pre[0].core
    nxt = _find_before(src, start, limit, core) if core else -1
    if c >= 0 and nxt < 0:
        return c, True
    stop = nxt if nxt >= 0 else limit
    ends = [k for k in (_find_before(src, start, stop, e) for e in others) if k >= 0]
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


def _line_value_prefix(param: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The param template before ``{value}`` where only a line break follows the value
    (``{key} = {value}\n``): the value runs to the end of its line. ``()`` otherwise."""
    at = next((i for i, seg in enumerate(param) if seg.field == "value"), -1)
    after = param[at + 1 :]
    if at <= 0 or any(seg.field or seg.core for seg in after):
        return ()
    return param[:at] if any("\n" in seg.text for seg in after) else ()


def _line_end(src: Source, p: int, stops: tuple[str, ...]) -> Generator[None, None, int]:
    """The end of the line at ``p``, or an earlier closer in ``stops``; the end of the text
    once it is final."""
    while True:
        buf = src.buf
        ends = [k for k in (buf.find(s, p) for s in (*stops, "\n") if s) if k >= 0]
        if ends:
            return min(ends)
        if src.final:
            return len(buf)
        yield None


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
    tail = format_template(plan.tail, name=name)  # a closer may repeat the name
    line_pre = () if split else _line_value_prefix(plan.param)
    while True:
        if tail:
            q = yield from probe_closer(src, p, tail)
            if q >= len(src.buf) and ctx.truncated and _cut_short(src.buf, p, plan.param):
                # the token limit cut a marker that may as well open another parameter as the
                # tail (a lone ``<``): the call is cut, not complete
                return p, FAIL
            if q >= 0:
                p = q
                break
        q, pf = yield from match_template(src, p, line_pre or plan.param_pre or plan.param)
        if q >= 0 and line_pre:
            k = yield from _line_end(src, q, (tail, plan.call_close, plan.section_close))
            pf["value"], q, indented = src.buf[q:k].rstrip(), k, False
        elif q >= 0 and split:
            k, closed = yield from _value_end(src, q, plan, name)
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
            if tail and not at_end:
                if (yield from _closes_call(src, p, plan)):
                    break  # the body's tail is missing, the call or section closer follows
                return p, FAIL
            if not at_end and src.final and _cut_short(src.buf, p, plan.param):
                return p, FAIL  # no tail, and the text ended inside a parameter: truncated
            break  # a missing tail at the end of the text is tolerated
        key = pf.get("key", "")
        raw, flag = _typed(_trim(pf.get("value", ""), body, indented=indented), body, pf)
        sub = props.get(key) if isinstance(props, Mapping) else None
        value = coerce_value(raw, sub, root=schema, is_string=flag)
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
