"""The grammar of a Python-style body: ``name(k=v, ...)``, keys and values in the body's value
codec."""

from __future__ import annotations

from ...dialect.spec import PythonBody
from ..codec import codec_for
from ..marker_rules import body_literal, properties_of, required_of, template_rule
from ..optional_null import optional_null_keys
from ..schema import SchemaConverter, props_sequence
from .base import BodyRequest

__all__ = ["python_body_rule"]


def python_body_rule(req: BodyRequest, body: PythonBody) -> str:
    b, schema, exact, hint = req.b, req.tool.parameters, req.exact, req.hint
    codec = codec_for(body.value_codec, req.layout, string_quote=body.string_quote)
    conv = SchemaConverter(b, schema, codec=codec)
    nulls = optional_null_keys(schema)  # ``None`` (or the codec's null) for "not given"
    items = []
    for key, sub in properties_of(schema).items():
        value = conv.visit(sub, f"/properties/{key}", hint=f"{hint}-{key}")
        if key in nulls:
            value = b.add(f"{hint}-{key}-or-null", f"{value} | {codec.scalar(b, 'null')}")
        assign = body_literal(body.assign, exact)
        items.append(
            (
                b.add(f"{hint}-{key}-kv", f"{codec.argument_key(key)} {assign} {value}"),
                key in required_of(schema),
            )
        )
    sep = body_literal(body.arg_separator, exact) or '""'
    seq = props_sequence(b, items, sep, hint=f"{hint}-args", any_order=codec.any_order)
    close = body_literal(body.call_close, exact) or '""'
    head = template_rule(body.call_open, req.head_fields(), exact=exact)
    return b.add(hint, f"{head} {seq} {close}")
