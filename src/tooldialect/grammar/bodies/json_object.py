"""The grammar of a JSON body: the whole call one JSON object, the arguments compiled from the
tool's schema."""

from __future__ import annotations

import json
from typing import Any

from ...dialect.spec import JsonBody
from ..codec import codec_for
from ..gbnf import literal
from ..marker_rules import id_rule
from ..schema import SchemaConverter
from .base import BodyRequest

__all__ = ["JSON_STRICT_INDENTS", "json_body_rule"]

JSON_STRICT_INDENTS: tuple[int | None, ...] = (None, 2, 4)
"""Layouts of a JSON call's envelope in a lazy grammar's strict form: ``json.dumps``'s compact
one (``{"name": "f", "arguments": {...}}``, as ``render_call`` writes it) and its ``indent=2`` /
``indent=4`` ones (``{\\n  "name": "f",\\n  "arguments": {...}\\n}``), which models write
under ``auto`` (Qwen2.5 in a fenced block). All are alternatives: the text the model writes
picks one, and from there the envelope is forced."""


def json_body_rule(req: BodyRequest, body: JsonBody) -> str:
    b, spec, tool, hint = req.b, req.spec, req.tool, req.hint
    layout, exact, indent = req.layout, req.exact, req.indent
    schema = tool.parameters
    codec = "json-in-string" if body.arguments_as_string else "json"
    args_key = ("args", codec, layout, tool.name)
    if args_key not in b.memo:  # the envelope's layouts share the arguments' rules
        conv = SchemaConverter(b, schema, codec=codec_for(codec, layout))
        b.memo[args_key] = conv.arguments(schema, hint=f"{hint}-args")
    args = b.memo[args_key]
    if body.arguments_as_string:
        args = f'"\\"" {args} "\\""'
    # the envelope's whitespace is free unless exact (json.dumps: '": "' and '", "'; with an
    # indent, a newline and the indent after "{" and ",", a newline before "}")
    ws = '""' if exact else codec_for("json").ws(b)
    colon = literal(": ") if exact else f'{ws} ":" {ws}'
    comma = literal(", ") if exact else f'{ws} "," {ws}'
    opening, closing = f'"{{" {ws}', f'{ws} "}}"'
    if exact and indent:
        pad = "\n" + " " * indent
        comma, opening, closing = literal("," + pad), literal("{" + pad), literal("\n}")

    def kv(key: str, value: str) -> str:
        return f"{literal(_q(key))} {colon} {value}"

    if body.name_key is None:
        pairs = [kv(tool.name, args)]
    else:
        pairs = []
        id_pair = kv(body.id_key, f'"\\"" {id_rule(spec)} "\\""') if body.id_key else None
        if id_pair and body.id_first:
            pairs.append(id_pair)
        pairs += [kv(k, literal(_dumps(v))) for k, v in body.extra.items()]
        named = [kv(body.name_key, literal(_q(tool.name))), kv(body.arguments_key, args)]
        pairs += named[::-1] if body.arguments_first else named
        if id_pair and not body.id_first:
            pairs.append(id_pair)
    inner = f" {comma} ".join(pairs)
    return b.add(hint, f"{opening} {inner} {closing}")


def _q(text: str) -> str:
    return _dumps(text)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
