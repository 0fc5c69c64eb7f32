"""A JSON call written as a Python dict, ``{'name': 'f', 'arguments': {'k': 'v'}}``: Hermes 2 Pro's
template shows the model exactly that shape (``{'arguments': <args-dict>, 'name': <name>}``), so
models write it inside the dialect's own markers. Read whole, then decoded as a literal (``ast``,
never evaluated); nothing streams before the closing brace, so streaming equals batch."""

from __future__ import annotations

import json
from collections.abc import Collection, Generator

from ..dialect.spec import JsonBody
from .markers import Source
from .plan import Context, FormatPlan
from .reader_events import FAIL, OK, Reader, certain
from .values import literal_value

__all__ = ["python_object_end", "read_python_call", "read_python_dict"]

_MAX_OBJECT = 100_000
"""Longer text is not read as a Python dict (the literal decoder refuses it too)."""


def python_object_end(buf: str, p: int, end: int | None = None) -> int | None:
    """The index after the bracket that closes the one at ``buf[p]``, quote-aware (``'`` and
    ``"``, backslash escapes); ``-1`` where the text cannot be a literal (a newline inside a
    string, a stray closer); ``None`` where ``buf`` (or ``buf[:end]``) ends first."""
    depth = 0
    quote = ""
    i = p
    n = len(buf) if end is None else end
    while i < n:
        c = buf[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
            elif c == "\n":
                return -1
        elif c in "'\"":
            quote = c
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return i + 1
            if depth < 0:
                return -1
        i += 1
    return None


def read_python_call(
    src: Source, p: int, body: JsonBody, args_keys: Collection[str]
) -> Generator[None, None, tuple[int, tuple[str, str] | None]]:
    """``(end, (name, arguments JSON))`` of the Python dict at ``src.buf[p]`` (``{``), read with
    ``body``'s keys (``args_keys``: every key read as the arguments); ``(p, None)`` when it is
    not one."""
    while True:
        end = python_object_end(src.buf, p)
        if end is None and not src.final and len(src.buf) - p < _MAX_OBJECT:
            yield None
            continue
        break
    if end is None or end < 0:
        return p, None
    value = literal_value(src.buf[p:end])
    if not isinstance(value, dict):
        return p, None
    if body.name_key is None:
        if len(value) != 1:
            return p, None
        ((name, args),) = value.items()
    else:
        name = value.get(body.name_key)
        args = next((value[k] for k in value if k in args_keys), {})
    if isinstance(args, str):
        args = literal_value(args)
    if not isinstance(name, str) or not name or not isinstance(args, dict):
        return p, None
    return end, (name, json.dumps(args, ensure_ascii=False))


def read_python_dict(
    src: Source, p: int, plan: FormatPlan, body: JsonBody, ctx: Context, args_keys: Collection[str]
) -> Reader:
    """A JSON-body call written as a Python dict at ``p`` (``{``); ``args_keys``: the keys every
    JSON body reads as the arguments, besides ``body``'s own."""
    keys = {*args_keys, body.arguments_key, *body.arguments_aliases}
    end, call = yield from read_python_call(src, p, body, keys)
    if call is None or (plan.known_names_only and ctx.schemas and call[0] not in ctx.schemas):
        return p, FAIL
    yield from certain(call[0], None, None, call[1])
    return end, OK
