"""The grammar of an element body: head, one element per argument (its value raw text typed by
the schema), tail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dialect.spec import ElementBody, format_template
from ..codec import codec_for
from ..gbnf import literal
from ..marker_rules import body_literal, properties_of, required_of, template_rule
from ..optional_null import optional_null_keys
from ..schema import SchemaConverter, props_sequence
from .base import BodyRequest
from .element_param import element_param

__all__ = ["element_body_rule"]


def element_body_rule(req: BodyRequest, body: ElementBody) -> str:
    b, tool, hint, layout, exact = req.b, req.tool, req.hint, req.layout, req.exact
    head_fields = req.head_fields()
    schema = tool.parameters
    if body.json_values:  # every value a literal of the body's value codec
        codec = codec_for(body.value_codec, layout, string_quote=body.value_quote)
    elif body.escape_json and body.xml_escape:
        codec = codec_for("json-in-markup", layout, string_quote=body.text_codec)
    else:
        codec = codec_for("json", layout)
    conv = SchemaConverter(b, schema, codec=codec)
    marked = format_template(body.param, value="\x00value\x00")
    pre_t, _, post = marked.partition("\x00value\x00")
    has_flag = "{is_string}" in pre_t
    has_type = "{type}" in pre_t
    stops = _delimited_stops(body, tool.name)
    nulls = optional_null_keys(schema)  # ``null`` for "not given", where no string is meant
    items = []
    post_t = post
    for key, sub in properties_of(schema).items():
        ptr = f"/properties/{key}"
        h = f"{hint}-{key}"
        or_null = key in nulls
        post = format_template(post_t, key=key)  # a closing tag may name the key (``</arg:k>``)
        if body.json_values:  # strings quoted as JSON, like every other value
            pre = template_rule(pre_t, {"key": literal(key)}, exact=exact)
            value = conv.element_value(
                sub, ptr, post, hint=f"{h}-v", string_only=False, or_null=or_null
            )
            param = b.add(h, f"{pre} {value}")
        elif has_type:
            alts = []
            for type_text, only in _written_types(body, sub):
                pre = template_rule(
                    pre_t, {"key": literal(key), "type": literal(type_text)}, exact=exact
                )
                value = conv.element_value(
                    sub, ptr, post, hint=f"{h}-t", string_only=only, or_null=or_null
                )
                alts.append(f"{pre} {value}")
            param = b.add(h, " | ".join(alts))
        elif has_flag:
            alts = []
            for flag, only in (("true", True), ("false", False)):
                pre = template_rule(
                    pre_t, {"key": literal(key), "is_string": literal(flag)}, exact=exact
                )
                value = conv.element_value(
                    sub, ptr, post, hint=f"{h}-{flag}", string_only=only, or_null=or_null
                )
                alts.append(f"{pre} {value}")
            param = b.add(h, " | ".join(alts))
        else:
            pre = template_rule(pre_t, {"key": literal(key)}, exact=exact)
            param = element_param(
                conv, body, pre, sub, ptr, post, key=key, hint=h, stops=stops, or_null=or_null
            )
        items.append((param, key in required_of(schema)))
    seq = props_sequence(
        b,
        items,
        body_literal(body.param_separator, exact) or '""',
        hint=f"{hint}-args",
        any_order=conv.codec.any_order,
    )
    return b.add(
        hint,
        f"{template_rule(body.head, head_fields, exact=exact)} {seq} "
        f"{body_literal(format_template(body.tail, name=tool.name), exact) or chr(34) * 2}",
    )


def _delimited_stops(body: ElementBody, name: str) -> list[str]:
    """Where parameters are joined by a separator and nothing closes a value: the texts a raw
    value never holds, the separator (its line break where it is blank) and the tail, so that
    the parser, which ends a value at either, reads it whole."""
    if not body.param_separator:
        return []
    sep = body.param_separator.strip() or body.param_separator
    return [x for x in (sep, format_template(body.tail, name=name).strip()) if x]


def _written_types(body: ElementBody, schema: Any) -> list[tuple[str, bool]]:
    """``(what the template writes for {type}, whether the value is a raw string)`` per JSON
    type the schema admits (one string alternative where it names none)."""
    t = schema.get("type") if isinstance(schema, Mapping) else None
    types = [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if t else []
    return [(body.type_names.get(x, x), x == "string") for x in types or ["string"]]
