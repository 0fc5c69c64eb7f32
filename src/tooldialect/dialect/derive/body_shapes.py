"""Finding one sentinel call's body in rendered text and reading its shape.

Each finder looks for the probe call (sentinel name, sentinel arguments) at or after a position and
returns where the body is and a body spec whose templates were read off the text. Bodies end right
after the last argument; what follows (closing tags) is left to the envelope analysis, which sees
what repeats around two parallel calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..spec import TOKEN_QUOTE, Body, ElementBody, JsonBody, PythonBody, TaggedBody
from ..value_codecs import ValueCodec, registered_codecs, value_codec
from .lexemes import HOLE, is_marker, lex, split_repeat

__all__ = ["Found", "IdMode", "escape", "find_body"]

IdMode = Literal["echo", "index", "counter"]
"""How the template writes a call id: the caller's id verbatim, the call's index, or text of its
own around the index (``call-0``: ``Found.id_template``)."""

_DECODER = json.JSONDecoder()
_MAX_HEAD = 200
_CLOSERS = {"(": ")", "{": "}", "[": "]"}


@dataclass
class Found:
    """A body found at ``text[start:end]``; its head may still lack text the envelope holds."""

    start: int
    end: int
    body: Body
    id_mode: IdMode | None = None
    id_template: str | None = None
    """For ``id_mode="counter"``: the id as ``DialectSpec.id_template`` (``call-{index}``)."""


def escape(text: str) -> str:
    """Literal text for a ``format_template`` template."""
    return text.replace("{", "{{").replace("}", "}}")


def _substitute(text: str, name: str, call_id: str) -> str:
    return escape(text).replace(name, "{name}").replace(call_id, "{id}")


def find_body(
    text: str,
    pos: int,
    *,
    name: str,
    args: Mapping[str, Any],
    call_id: str,
    index: int,
    counters: bool = True,
) -> Found | None:
    """The first call body at or after ``pos``, trying each body kind in turn. ``counters``:
    whether a JSON value holding the index (``call-0``) may be an id the template counts."""
    found = _find_json(
        text, pos, name=name, args=args, call_id=call_id, index=index, counters=counters
    )
    for finder in (_find_tagged, _find_python, _find_coded, _find_element):
        if found is not None:
            return found
        found = finder(text, pos, name=name, args=args, call_id=call_id, index=index)
    return found


def _find_json(
    text: str,
    pos: int,
    *,
    name: str,
    args: Mapping[str, Any],
    call_id: str,
    index: int,
    counters: bool = True,
) -> Found | None:
    i = text.find("{", pos)
    while i != -1:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            obj, end = None, i
        if isinstance(obj, dict):
            read = _json_body(
                obj, name=name, args=args, call_id=call_id, index=index, counters=counters
            )
            if read is not None:
                return Found(i, end, *read)
        i = text.find("{", i + 1)
    return None


def _decodes_to(value: Any, args: Mapping[str, Any]) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return bool(json.loads(value) == args)
    except ValueError:
        return False


def _counter(value: Any, index: int) -> str | None:
    """``value`` as an id template where it is text around the call's index (``call-0`` ->
    ``call-{index}``): the template numbers its calls itself. Two parallel calls confirm it."""
    if not isinstance(value, str):
        return None
    m = re.fullmatch(rf"(\D*){index}(\D*)", value)
    if m is None or not (m.group(1) or m.group(2)):
        return None
    return escape(m.group(1)) + "{index}" + escape(m.group(2))


def _json_body(
    obj: dict[str, Any],
    *,
    name: str,
    args: Mapping[str, Any],
    call_id: str,
    index: int,
    counters: bool = True,
) -> tuple[JsonBody, IdMode | None, str | None] | None:
    keys = list(obj)
    if len(obj) == 1 and keys[0] == name and obj[name] == args:
        return JsonBody(name_key=None), None, None
    name_key = next((k for k in keys if obj[k] == name), None)
    args_key = next((k for k in keys if obj[k] == args), None)
    as_string = False
    if args_key is None:
        args_key = next((k for k in keys if _decodes_to(obj[k], args)), None)
        as_string = args_key is not None
    if name_key is None or args_key is None:
        return None
    id_key: str | None = None
    id_mode: IdMode | None = None
    id_template: str | None = None
    extra: dict[str, Any] = {}
    for k in keys:
        if k in (name_key, args_key):
            continue
        if obj[k] == call_id:
            id_key, id_mode = k, "echo"
        elif obj[k] in (str(index), index) and id_key is None:
            id_key, id_mode = k, "index"
        elif counters and id_key is None and _counter(obj[k], index) is not None:
            id_key, id_mode, id_template = k, "counter", _counter(obj[k], index)
        else:
            extra[k] = obj[k]
    id_first = id_key is not None and keys.index(id_key) < keys.index(name_key)
    arguments_first = keys.index(args_key) < keys.index(name_key)
    body = JsonBody(
        name_key=name_key,
        arguments_key=args_key,
        id_key=id_key,
        id_first=id_first,
        arguments_first=arguments_first,
        arguments_as_string=as_string,
        extra=extra,
    )
    return body, id_mode, id_template


def _name_at(text: str, pos: int, name: str) -> int:
    """The next occurrence of ``name`` as a whole word."""
    i = text.find(name, pos)
    while i != -1:
        before = text[i - 1] if i > 0 else " "
        after = text[i + len(name)] if i + len(name) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return i
        i = text.find(name, i + 1)
    return -1


_MAX_ID_LEAD = 48
"""How far before the name a call id may start the head."""


def _find_tagged(
    text: str, pos: int, *, name: str, args: Mapping[str, Any], call_id: str, index: int
) -> Found | None:
    n = _name_at(text, pos, name)
    if n == -1:
        return None
    later = _name_at(text, n + len(name), name)
    first_brace = text.find("{", n + len(name))
    if later != -1 and first_brace != -1 and later < first_brace:
        # the name is written again before the arguments: a closer repeating the previous
        # call's name (``</NAME><NAME>{...}``); the head starts at the later one
        return _find_tagged(text, later, name=name, args=args, call_id=call_id, index=index)
    i = first_brace
    while i != -1 and i - n <= _MAX_HEAD:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            obj, end = None, i
        if obj == args:
            # a call id written shortly before the name (``<use id="ID" name="NAME">``) starts
            # the head, so that what repeats around every call is the envelope
            k = text.rfind(call_id, max(pos, n - _MAX_ID_LEAD), n) if call_id else -1
            start = k if k != -1 else n
            head_text = text[start:i]
            id_mode: IdMode | None = "echo" if call_id in head_text else None
            body = TaggedBody(head=_substitute(head_text, name, call_id))
            return Found(start, end, body, id_mode)
        i = text.find("{", i + 1)
    return None


def _scalar_texts(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, value text)`` of the first two arguments: a string and an integer."""
    items = list(args.items())[:2]
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in items]


def _find_python(
    text: str, pos: int, *, name: str, args: Mapping[str, Any], call_id: str, index: int
) -> Found | None:
    n = _name_at(text, pos, name)
    if n == -1 or len(args) != 2:
        return None
    (ka, va), (kb, vb) = _scalar_texts(args)
    after_name = n + len(name)
    ia = text.find(ka, after_name)
    if ia == -1 or ia - after_name > 8:
        return None
    opener = text[after_name:ia]
    if not opener or opener[-1] not in _CLOSERS:
        return None
    ja = text.find(va, ia + len(ka))
    ib = text.find(kb, ja + len(va)) if ja != -1 else -1
    jb = text.find(vb, ib + len(kb)) if ib != -1 else -1
    if jb == -1:
        return None
    between_a, link_b = text[ia + len(ka) : ja], text[ib + len(kb) : jb]
    for quote, codec in _quotes(between_a):
        if not (between_a.endswith(quote) and text.startswith(quote, ja + len(va))):
            continue
        assign = between_a[: len(between_a) - len(quote)]
        # a template that writes every value as a string (``n="42"``) or none quoted
        # (``q=word``, ``str(value)``): the model writes literals, the parser reads both
        every = bool(quote) and link_b == assign + quote and text.startswith(quote, jb + len(vb))
        if not assign or not (link_b == assign or every):
            continue
        body = PythonBody(
            call_open=_substitute(text[n:ia], name, call_id),
            call_close=_CLOSERS[opener[-1]],
            assign=assign,
            arg_separator=text[ja + len(va) + len(quote) : ib],
            value_codec=codec,
            string_quote=quote if value_codec(codec).token_quoted else TOKEN_QUOTE,
        )
        return Found(n, jb + len(vb) + (len(quote) if every else 0), body)
    return None


def _find_coded(
    text: str, pos: int, *, name: str, args: Mapping[str, Any], call_id: str, index: int
) -> Found | None:
    """A call whose keys and values a codec spells (``f({"k" => "v"})``, ``(f {:k "v"})``):
    each codec, in each of its quotes, tried on where the probe's keys and values would be."""
    n = _name_at(text, pos, name)
    if n == -1 or len(args) != 2:
        return None
    for codec in registered_codecs():
        if codec.token_quoted:  # its token is found by ``_find_python``
            continue
        for quote in codec.quotes or (TOKEN_QUOTE,):
            found = _coded_call(text, n, name, call_id, list(args.items())[:2], codec, quote)
            if found is not None:
                return found
    return None


def _coded_call(
    text: str,
    n: int,
    name: str,
    call_id: str,
    items: list[tuple[str, Any]],
    codec: ValueCodec,
    quote: str,
) -> Found | None:
    (ka, va), (kb, vb) = (
        (codec.encode_key(k, quote=quote), codec.encode(v, quote=quote)) for k, v in items
    )
    after_name = n + len(name)
    ia = text.find(ka, after_name)
    # the codec's own object opener may stand between the name and the first key
    if ia == -1 or ia - after_name > 8 + len(codec.syntax(quote).object_open):
        return None
    opener = text[after_name:ia]
    bracket = opener.rstrip()[-1:]
    if bracket not in _CLOSERS:
        return None
    ja = text.find(va, ia + len(ka))
    ib = text.find(kb, ja + len(va)) if ja != -1 else -1
    jb = text.find(vb, ib + len(kb)) if ib != -1 else -1
    if jb == -1:
        return None
    assign, link_b = text[ia + len(ka) : ja], text[ib + len(kb) : jb]
    if not assign or assign != link_b or any(c.isalnum() for c in assign):
        return None
    # the blanks inside the opening bracket close it too (``{ k = 1 }``)
    pad = opener[len(opener.rstrip()) :]
    close = pad + _CLOSERS[bracket]
    end = jb + len(vb)
    body = PythonBody(
        call_open=_substitute(text[n:ia], name, call_id),
        call_close=close if text.startswith(close, end) else _CLOSERS[bracket],
        assign=assign,
        arg_separator=text[ja + len(va) : ib],
        value_codec=codec.name,
        string_quote=quote,
    )
    return Found(n, end, body)


def _quotes(before_value: str) -> list[tuple[str, str]]:
    """What may quote a string value: Python's quotes, or a marker token written on both sides
    of it (Gemma 4's ``<|"|>``, FunctionGemma's ``<escape>``): the ``bare-key`` codec."""
    found: list[tuple[str, str]] = [(TOKEN_QUOTE, "bare-key")]
    lx = lex(before_value)
    if lx and is_marker(lx[-1]) and lx[-1] != TOKEN_QUOTE:
        found.append((lx[-1], "bare-key"))
    return [*found, ('"', "python"), ("'", "python"), ("", "python")]


_MAX_ECHO = 40
"""How far after a value its closing tag may name the key: glue a template writes between
elements (``]<]x[>[</k>``) comes before it."""
_KEY_MARK = "zzKEYMARKzz"
"""Stands for a parameter's key where the template writes it again after the value."""


def _key_echo(text: str, key: str) -> str:
    """``text`` (what follows a value) with ``key`` replaced by a mark where the closing tag
    names it again (``</arg:k>``, ``</k>``): a whole word within the first few characters."""
    i = _name_at(text, 0, key)
    if i == -1 or i > _MAX_ECHO:
        return text
    return text[:i] + _KEY_MARK + text[i + len(key) :]


def _quoted(text: str, at: int, value: str) -> bool:
    """Whether the string value at ``text[at:]`` is written inside quotes, double (JSON's) or
    single (a value codec's: ``'zzword'``)."""
    end = at + len(value)
    q = text[at - 1 : at] if at > 0 else ""
    return q in ('"', "'") and text[end : end + 1] == q


def _quoted_after(text: str, at: int, key: str, value: str) -> bool:
    """Whether the value of ``key`` after ``at`` is quoted too: a number in quotes means the
    quotes belong to the template (an attribute, ``value="42"``), not to JSON strings."""
    k = text.find(key, at)
    j = text.find(value, k + len(key)) if k >= 0 else -1
    return j >= 0 and _quoted(text, j, value)


def _typed_link(link_a: str, link_b: str) -> tuple[str | None, dict[str, str]]:
    """The template between key and value, with the word that differs between the string and
    the integer parameter as ``{is_string}`` (``true``/``false``) or ``{type}`` (its words per
    type); ``(None, {})`` when the two differ otherwise."""
    if link_a == link_b:
        return escape(link_a), {}
    la, lb = lex(link_a), lex(link_b)
    if len(la) != len(lb):
        return None, {}
    diff = [i for i, (x, y) in enumerate(zip(la, lb, strict=True)) if x != y]
    if len(diff) != 1 or not (la[diff[0]].isalnum() and lb[diff[0]].isalnum()):
        return None, {}
    i = diff[0]
    pre, post = escape("".join(la[:i])), escape("".join(la[i + 1 :]))
    if (la[i], lb[i]) == ("true", "false"):
        return pre + "{is_string}" + post, {}
    return pre + "{type}" + post, {"string": la[i], "integer": lb[i]}


def _leads_off(lx: list[str]) -> bool:
    """Whether the first lexeme of a unit's opener belongs to the unit before it: blanks, or a
    closing bracket with more of the opener after it."""
    return lx[0].isspace() or (lx[0] in (">", "]", ")", "}") and len(lx) > 1)


def _find_element(
    text: str, pos: int, *, name: str, args: Mapping[str, Any], call_id: str, index: int
) -> Found | None:
    n = _name_at(text, pos, name)
    if n == -1 or len(args) != 2:
        return None
    (ka, va), (kb, vb) = _scalar_texts(args)
    ia = text.find(ka, n + len(name))
    later = _name_at(text, n + len(name), name)
    if later != -1 and ia != -1 and later < ia:
        # the name is written again before the first key: a closer repeating the previous
        # call's name (``</fn:NAME><fn:NAME>``); the head starts at the later one
        return _find_element(text, later, name=name, args=args, call_id=call_id, index=index)
    ja = text.find(va, ia + len(ka)) if ia != -1 else -1
    json_values = _quoted(text, ja, va) and not _quoted_after(text, ja + len(va), kb, vb)
    if json_values:  # the string is a quoted literal (``"zzword"``), as every other value
        q = text[ja - 1]
        ja, va = ja - 1, f"{q}{va}{q}"
    ib = text.find(kb, ja + len(va)) if ja != -1 else -1
    jb = text.find(vb, ib + len(kb)) if ib != -1 else -1
    if jb == -1 or ia - n > _MAX_HEAD:
        return None
    link_a, link_b = text[ia + len(ka) : ja], text[ib + len(kb) : jb]
    # a type marker between key and value (``string="true"``, ``type="integer"``) differs
    link, type_names = _typed_link(link_a, link_b)
    if link is None:
        return None
    # one hole per parameter; what repeats around the holes is the parameter template
    holes = (f"{HOLE}a{HOLE}", f"{HOLE}b{HOLE}")
    # a closing tag naming the key (``</arg:k>``, ``</k>``) repeats as ``{key}``
    between = _key_echo(text[ja + len(va) : ib], ka)
    rest = _key_echo(text[jb + len(vb) :], kb)
    if (_KEY_MARK in between) != (_KEY_MARK in rest):
        return None
    probe = text[n:ia] + holes[0] + between + holes[1] + rest
    rep = split_repeat(probe, *holes)
    if rep is None:
        return None
    unit_open, unit_close = rep.open, rep.close
    head_text = rep.before
    # start the parameter at its first non-blank: leading blanks move to the end of the unit
    lx_open = lex(unit_open)
    after = rep.after
    # and so do closing punctuation the split left there (``>`` of ``"/>`` before ``<arg``)
    while lx_open and _leads_off(lx_open) and after.startswith(lx_open[0]):
        head_text += lx_open[0]
        unit_close += lx_open[0]
        after = after[len(lx_open[0]) :]
        lx_open = lx_open[1:]
    separator = rep.sep
    if unit_close and not unit_close.strip():
        # blanks after every value, the last one's before the tail (``{key}: {value}\n``):
        # the parameters are joined by them (a value may hold a line break)
        separator, after = unit_close + separator, unit_close + after
        unit_close = ""
    elif not separator and not unit_close and lx_open and lx_open[0].isspace():
        # nothing after a value, a line break before each key (``\n{key}: {value}``): the
        # parameters are joined by the line break, which the head writes before the first
        separator = lx_open[0]
        head_text += separator
        lx_open = lx_open[1:]
    unit_open = "".join(lx_open)
    param = escape(unit_open) + "{key}" + link + "{value}" + escape(unit_close)
    param = param.replace(_KEY_MARK, "{key}")
    end = len(text) - len(after)
    if _KEY_MARK in after:
        return None
    body = ElementBody(
        head=_substitute(head_text, name, call_id),
        param=param,
        tail="",
        trim_value=link_a.endswith("\n") and unit_close.startswith("\n"),
        json_values=json_values,
        type_names=type_names,
        # what lies between two parameters and after neither (`` ;; ``, ``<|and|>``)
        param_separator=separator,
    )
    return Found(n, end, body, "echo" if call_id in head_text else None)
