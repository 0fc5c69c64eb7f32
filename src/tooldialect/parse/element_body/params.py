"""The element-body reader (``body.kind == "element"``): one element per argument, values as raw
text typed by the tool's schema, read leniently (indented layouts, missing value and tail closers;
see docs/parsing.md). Where a value ends is
``value_end``'s business, what it means ``value_text``'s."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from ...dialect.spec import (
    CallFormat,
    ElementBody,
    JsonBody,
    PythonBody,
    TaggedBody,
    format_template,
)
from ...grammar.optional_null import optional_null_keys
from ..markers import (
    Segment,
    Source,
    compile_template,
    match_template,
    probe_closer,
    probe_literal,
    skip_ws,
)
from ..plan import BodyPlan, Context, FormatPlan
from ..reader_events import FAIL, OK, Reader, certain
from ..values import schema_types
from .nested_values import read_value
from .value_end import (
    cut_short,
    delimited_end,
    is_indented,
    line_end,
    line_value_prefix,
    value_end,
)
from .value_text import attribute_unescape, element_value, trim_value

__all__ = ["element_other_syntaxes", "plan_element_body", "read_element_body"]

_NESTED_TYPES = frozenset({"object", "array"})


@dataclass
class _Call:
    """What one body's parameters are read against."""

    name: str
    schema: Mapping[str, Any]
    props: Mapping[str, Any]
    tail: str
    line_pre: tuple[Segment, ...]
    unescape: Callable[[str], str] | None
    """Decodes names and keys written as quoted attributes where the family XML-escapes."""
    null_keys: frozenset[str] = frozenset()
    """Keys whose ``null`` means "not given" (``grammar/optional_null.py``)."""


_NULLS = ("null", "None")
"""A whole element value that reads as ``null`` for a key whose schema admits no string."""


@dataclass
class _Param:
    """One parameter read: where it ends, its fields (``key``, raw ``value``, attributes) and
    whether the model indented it."""

    end: int
    fields: dict[str, str]
    indented: bool = False


def _nested(body: ElementBody, call: _Call, key: str) -> bool:
    """Whether ``key``'s value is written as child elements (an object or array the body
    nests)."""
    if not (body.child or body.item):
        return False
    return bool(schema_types(call.props.get(key), call.schema) & _NESTED_TYPES)


def _read_split(
    src: Source,
    p: int,
    q: int,
    fields: dict[str, str],
    plan: FormatPlan,
    call: _Call,
    body: ElementBody,
) -> Generator[None, None, _Param | None]:
    """The value after a parameter's opener (at ``q``) and the closer after it."""
    key = fields.get("key", "")
    k, closed = yield from value_end(
        src, q, plan, name=call.name, key=key, keys=call.props, nested=_nested(body, call, key)
    )
    if k < 0:
        return None
    raw = src.buf[q:k]
    tag = q - len(src.buf[p:q].lstrip())  # where the element began
    indented = is_indented(src.buf, tag) or is_indented(src.buf, k)
    end = k
    if closed:
        end, post = yield from match_template(src, k, plan.param_post, unescape=call.unescape)
        fields.update(post)
    else:
        raw = raw.rstrip()
    fields["value"] = raw
    return _Param(end, fields, indented) if end >= 0 else None


def _read_param(
    src: Source, p: int, plan: FormatPlan, call: _Call, body: ElementBody
) -> Generator[None, None, _Param | None]:
    """The parameter at ``p``, or None where none opens there."""
    segments = call.line_pre or plan.param_pre or plan.param
    q, fields = yield from match_template(src, p, segments, unescape=call.unescape)
    if q < 0:
        return None
    if call.line_pre:  # the value runs to the end of its line
        k = yield from line_end(src, q, (call.tail, plan.call_close, plan.section_close))
        fields["value"] = src.buf[q:k].rstrip()
        return _Param(k, fields)
    if plan.param_pre and not plan.param_post:  # parameters joined by a separator
        sep = body.param_separator
        k = yield from delimited_end(src, q, plan, name=call.name, separator=sep, keys=call.props)
        enders = (sep, body.tail, plan.fmt.call_close, plan.fmt.section_close)
        fields["value"] = _unpadded(src.buf[q:k], plan.param_pre[-1].text, enders)
        return _Param(k, fields)
    if plan.param_pre:
        return (yield from _read_split(src, p, q, fields, plan, call, body))
    return _Param(q, fields)


def _unpadded(raw: str, link: str, enders: tuple[str, ...]) -> str:
    """A delimited value less the blanks the template writes around it: those ending the text
    between key and value (``: ``), and those that start what ends it (the separator `` ;; ``,
    the tail ``\n</call>``): the longest of these the value ends with."""
    pad = link[len(link.rstrip()) :]
    if pad and raw.startswith(pad):
        raw = raw[len(pad) :]
    leads = sorted((e[: len(e) - len(e.lstrip())] for e in enders), key=len, reverse=True)
    lead = next((x for x in leads if x and raw.endswith(x)), "")
    return raw[: len(raw) - len(lead)]


def _ends_without_param(
    src: Source, p: int, plan: FormatPlan, call: _Call, ctx: Context, *, empty: bool
) -> Generator[None, None, bool | None]:
    """No parameter opens at ``p``: True where the body ends there, None where it is no call
    (cut by the token limit, stray text before a missing tail, or a bare header at the end of
    the text: ``empty``, no parameter read, and no closer where the format has one)."""
    rest = yield from skip_ws(src, p)
    at_end = src.final and rest >= len(src.buf)
    if at_end and ctx.truncated:
        return None  # the token limit cut the body before its closer: not a call
    if at_end and empty and (call.tail or plan.call_close or plan.section_close):
        return None  # a header alone, nothing closing it: the model stopped, no call made
    if call.tail and not at_end:
        if (yield from _closes_call(src, p, plan)):
            return True  # the body's tail is missing, the call or section closer follows
        return None
    if not at_end and src.final and cut_short(src.buf, p, plan.param):
        return None  # no tail, and the text ended inside a parameter: truncated
    return True  # a missing tail at the end of the text is tolerated


def _at_tail(
    src: Source, p: int, plan: FormatPlan, call: _Call, ctx: Context, *, empty: bool
) -> Generator[None, None, int | None]:
    """End of the body's tail at ``p`` (-1 where none is there), None where the call is cut:
    the token limit cut a marker that may as well open another parameter (a lone ``<``), or
    the text ends inside the tail of a body with no parameter (``empty``: a header alone)."""
    if not call.tail:
        return -1
    q = yield from probe_closer(src, p, call.tail)
    if q >= len(src.buf) and ctx.truncated and cut_short(src.buf, p, plan.param):
        return None
    if q >= len(src.buf) and empty and (yield from probe_literal(src, p, call.tail)) < 0:
        return None
    return q


def _store(
    args: dict[str, Any],
    key: str,
    raw: str,
    fields: Mapping[str, str],
    body: ElementBody,
    call: _Call,
) -> None:
    """Put one parameter's value into ``args``: where the body repeats an array's key per
    element, each repetition is one element (a JSON array written whole is its elements)."""
    schema = call.props.get(key)
    value = element_value(raw, body, fields, schema=schema, root=call.schema, key=key)
    types = schema_types(schema, call.schema)
    if not body.repeat_arrays or "array" not in types:
        if value in _NULLS and key in call.null_keys and types and "string" not in types:
            # "not given" (the grammar writes it so): no string to read it as (the member
            # is then dropped from the arguments, ``null_members``)
            value = None
        args[key] = value
        return
    if not isinstance(value, list):
        items = schema.get("items") if isinstance(schema, Mapping) else None
        if items:
            value = [element_value(raw, body, fields, schema=items, root=call.schema, key=key)]
        else:  # untyped elements: the JSON scalar each spells, else text
            value = [read_value(raw, body, {}, call.schema, key=key)]
    got = args.get(key)
    args[key] = [*got, *value] if isinstance(got, list) else value


def _read_params(
    src: Source, p: int, plan: FormatPlan, body: ElementBody, call: _Call, ctx: Context
) -> Generator[None, None, tuple[int, dict[str, Any] | None]]:
    """The parameters from ``p`` to the body's end: (end, arguments), arguments None where the
    text is no call."""
    args: dict[str, Any] = {}
    while True:
        q = yield from _at_tail(src, p, plan, call, ctx, empty=not args)
        if q is None:
            return p, None
        if q >= 0:
            return q, args
        param = None
        if args and body.param_separator.strip():
            q = yield from probe_literal(src, p, body.param_separator.strip())
            p = q if q >= 0 else p
            param = None if q < 0 else (yield from _read_param(src, p, plan, call, body))
        else:
            param = yield from _read_param(src, p, plan, call, body)
        if param is None:
            ends = yield from _ends_without_param(src, p, plan, call, ctx, empty=not args)
            return p, (args if ends else None)
        key = param.fields.get("key", "")
        raw = trim_value(param.fields.get("value", ""), body, indented=param.indented)
        _store(args, key, raw, param.fields, body, call)
        p = param.end


def read_element_body(
    src: Source, p: int, plan: FormatPlan, body: ElementBody, ctx: Context
) -> Reader:
    unescape = attribute_unescape(body)
    p, head = yield from match_template(src, p, plan.head, names=ctx.names, unescape=unescape)
    if p < 0:
        return p, FAIL
    name = head["name"]
    schema = ctx.schemas.get(name, {})
    schema = schema if isinstance(schema, Mapping) else {}
    props = schema.get("properties", {})
    call = _Call(
        name=name,
        schema=schema,
        props=props if isinstance(props, Mapping) else {},
        tail=format_template(plan.tail, name=name),  # a closer may repeat the name
        line_pre=() if plan.param_pre else line_value_prefix(plan.param),
        unescape=unescape,
        null_keys=optional_null_keys(schema),
    )
    p, args = yield from _read_params(src, p, plan, body, call, ctx)
    if args is None:
        return p, FAIL
    yield from certain(
        name, head.get("id"), head.get("index"), json.dumps(args, ensure_ascii=False)
    )
    return p, OK


def _closes_call(src: Source, p: int, plan: FormatPlan) -> Generator[None, None, bool]:
    for core in (plan.call_close, plan.section_close):
        if core and (yield from probe_literal(src, p, core)) >= 0:
            return True
    return False


def plan_element_body(fmt: CallFormat, body: ElementBody) -> BodyPlan:
    """An element body's head, param template (split at its value) and tail, compiled."""
    head = compile_template(body.head, optional=fmt.optional_markers)
    param = compile_template(body.param, optional=fmt.optional_markers)
    param_pre, param_post, value_ends = _element_ends(fmt, body, param, head)
    return BodyPlan(
        head=head,
        param=param,
        tail=body.tail.strip(),
        param_pre=param_pre,
        param_post=param_post,
        value_ends=value_ends,
        key_unescape=attribute_unescape(body),
    )


def element_other_syntaxes(body: ElementBody) -> tuple[object, ...]:
    """What else is read inside an element call's markers: a JSON call object, a Python call, and
    the element head around a JSON arguments object (``<invoke name="f">{"k": 1}</invoke>``)."""
    return (JsonBody(), PythonBody(), TaggedBody(head=body.head, tail=body.tail))


def _element_ends(
    fmt: CallFormat, body: ElementBody, param: tuple[Segment, ...], head: tuple[Segment, ...]
) -> tuple[tuple[Segment, ...], tuple[Segment, ...], tuple[str, ...]]:
    """An element body's param template split at ``{value}`` (``param_pre``, ``param_post``) and
    the literals that may end a value (``FormatPlan.value_ends``); empty where the value is
    read otherwise (to the end of its line)."""
    at = next((i for i, seg in enumerate(param) if seg.field == "value"), -1)
    closed = at > 0 and at + 1 < len(param) and not param[at + 1].field and param[at + 1].core
    # ``{key}: {value}`` joined by a separator: a value ends at the separator before a next
    # parameter, or at a closer (value_end.delimited_end)
    delimited = at > 0 and at + 1 == len(param) and bool(body.param_separator)
    if not (closed or delimited):
        return (), (), ()
    param_pre, param_post = param[:at], param[at + 1 :]
    ends = []
    if closed:
        ends.append(param_post[0].core)
        if not param_pre[0].field and param_pre[0].core:
            ends.append(param_pre[0].core)
    ends += [body.tail.strip(), fmt.call_close.strip(), fmt.section_close.strip()]
    # a new call beginning: this one's closers were cut (its text stays content)
    ends += [fmt.call_open.strip(), fmt.section_open.strip()]
    if head and not head[0].field:
        ends.append(head[0].core)
    return param_pre, param_post, tuple(dict.fromkeys(e for e in ends if e))
