"""One element parameter's rule (``element_param``), where the body writes its value other than
as raw text or JSON: objects and arrays as child elements (``ElementBody.child``/``item``),
arrays as repeated parameters (``repeat_arrays``) and strings escaped by the body's markup codec
(``text_codec``).
The parser's counterpart reads these nested values back (``parse/``).
It writes the canonical form ``render_call`` writes; the parser also reads JSON in their place.

Inside child elements a string is text without ``<`` (escaped where the family escapes), other
scalars are JSON; ``minItems``/``maxItems`` and string lengths inside nested values are not
enforced (recorded as loosened); past a nesting depth of 8 a value is written as JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...dialect.element_values import singular
from ...dialect.spec import ElementBody, format_template
from ...dialect.value_codecs.markup import CDATA_CLOSE, CDATA_OPEN, markup_codec
from ..gbnf import char_class, literal, optional_edges, until
from ..schema import SchemaConverter, props_sequence

__all__ = ["element_param", "element_special_value"]

_MAX_DEPTH = 8


def _text(conv: SchemaConverter, body: ElementBody, *, nested: bool) -> str:
    """Text of a string value, as the body's markup codec writes it: entities where it escapes,
    a CDATA section where it wraps; else no markup where it is nested."""
    b = conv.b
    if body.text_codec:
        codec = markup_codec(body.text_codec)
        if codec.wrap_when:
            plain = char_class("".join(dict.fromkeys("<&" + codec.wrap_when)), negate=True)
            section = f"{literal(CDATA_OPEN)} {until(b, CDATA_CLOSE, hint='cdata')}"
            return b.add("cdata-text", f"{section} | {plain}*")
        entities = " | ".join(literal(entity) for _, entity in codec.entities)
        return b.add("xml-text", f"([^<&] | {entities})*")
    return b.add("elem-text", "[^<]*") if nested else ""


def _type(schema: Mapping[str, Any]) -> Any:
    return schema.get("type")


def _scalar(conv: SchemaConverter, body: ElementBody, schema: Any, pointer: str, hint: str) -> str:
    s = conv.resolve(schema, pointer)
    if isinstance(s, Mapping) and isinstance(s.get("enum"), list):
        texts = [v for v in s["enum"] if isinstance(v, str)]
        if texts and len(texts) == len(s["enum"]):
            escaped = [
                markup_codec(body.text_codec).escape(v) if body.text_codec else v for v in texts
            ]
            return "(" + " | ".join(dict.fromkeys(literal(v) for v in escaped)) + ")"
    t = _type(s) if isinstance(s, Mapping) else None
    if t == "string" or (isinstance(t, list) and "string" in t) or not t:
        return _text(conv, body, nested=True)
    return conv.visit(schema, pointer, hint=hint)


def _object(
    conv: SchemaConverter,
    body: ElementBody,
    s: Mapping[str, Any],
    pointer: str,
    hint: str,
    depth: int,
) -> str | None:
    props = s.get("properties")
    if not body.child or not isinstance(props, Mapping) or not props:
        return None
    pre, _, rest = body.child.partition("{key}")
    link, _, post = rest.partition("{value}")
    listed = s.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    items = []
    for k, sub in props.items():
        ptr = f"{pointer}/properties/{k}"
        h = f"{hint}-{k}"
        value = _value(conv, body, sub, ptr, key=str(k), hint=h, depth=depth + 1)
        opener = format_template(pre + "{key}" + link, key=k)
        rule = conv.b.add(h, f"{literal(opener)} {value} {literal(format_template(post, key=k))}")
        items.append((rule, k in required))
    return props_sequence(
        conv.b, items, '""', hint=f"{hint}-members", any_order=conv.codec.any_order
    )


def _array(
    conv: SchemaConverter,
    body: ElementBody,
    s: Mapping[str, Any],
    pointer: str,
    *,
    key: str,
    hint: str,
    depth: int,
) -> str | None:
    if not body.item:
        return None
    if "minItems" in s or "maxItems" in s:
        conv.loosen(pointer, "item counts of an array written as elements are not enforced")
    template = format_template(body.item, key=key, singular=singular(key))
    pre, _, post = template.partition("{value}")
    sub = s.get("items", {})
    value = _value(conv, body, sub, f"{pointer}/items", key=key, hint=f"{hint}-i", depth=depth + 1)
    return conv.b.add(f"{hint}-items", f"({literal(pre)} {value} {literal(post)})*")


def _nested(
    conv: SchemaConverter,
    body: ElementBody,
    schema: Any,
    pointer: str,
    *,
    key: str,
    hint: str,
    depth: int,
) -> str | None:
    """Child elements for an object or array schema, or None where the value is a scalar (or
    nested too deep, or of several types)."""
    s = conv.resolve(schema, pointer)
    if depth > _MAX_DEPTH or not isinstance(s, Mapping):
        return None
    if _type(s) == "object":
        return _object(conv, body, s, pointer, hint, depth)
    if _type(s) == "array":
        return _array(conv, body, s, pointer, key=key, hint=hint, depth=depth)
    return None


def _value(
    conv: SchemaConverter,
    body: ElementBody,
    schema: Any,
    pointer: str,
    *,
    key: str,
    hint: str,
    depth: int,
) -> str:
    nested = _nested(conv, body, schema, pointer, key=key, hint=hint, depth=depth)
    return nested if nested is not None else _scalar(conv, body, schema, pointer, hint)


def _plain_string(s: Any) -> bool:
    """A string schema without constraints the escaped text would have to carry."""
    constrained = ("enum", "const", "pattern", "minLength", "maxLength", "format")
    return isinstance(s, Mapping) and _type(s) == "string" and not any(k in s for k in constrained)


def element_special_value(
    conv: SchemaConverter,
    body: ElementBody,
    schema: Any,
    pointer: str,
    post: str,
    *,
    key: str,
    hint: str,
    or_null: bool = False,
) -> str | None:
    """A rule for one parameter value followed by ``post`` where the body writes it as child
    elements or escaped text; None where the plain element value rule applies. ``or_null``:
    child elements or ``null`` ("not given", ``grammar/optional_null.py``)."""
    content = _nested(conv, body, schema, pointer, key=key, hint=hint, depth=0)
    if content is not None and or_null:  # an object or array: no string to mistake it for
        content = f"({content} | {conv.codec.scalar(conv.b, 'null')})"
    if content is None and body.xml_escape and _plain_string(conv.resolve(schema, pointer)):
        content = _text(conv, body, nested=False)
    if content is None:
        return None
    closing = optional_edges(post) or '""'
    return conv.b.add(hint, f"{content} {closing}")


def element_param(
    conv: SchemaConverter,
    body: ElementBody,
    pre: str,
    schema: Any,
    pointer: str,
    post: str,
    *,
    key: str,
    hint: str,
    stops: Sequence[str] = (),
    or_null: bool = False,
) -> str:
    """One parameter's rule, ``pre`` (its opener) then its value and closer; an array the body
    writes as repeated parameters is one or more of them, one element each. ``stops``: see
    ``SchemaConverter.element_value``; ``or_null``: ``null`` too where the value admits no
    string (not for repeated parameters, each of which is one item)."""
    s = conv.resolve(schema, pointer)
    repeated = body.repeat_arrays and isinstance(s, Mapping) and _type(s) == "array"
    if repeated and isinstance(s, Mapping):
        schema, pointer = s.get("items", {}), f"{pointer}/items"
        or_null = False
    special = element_special_value(
        conv, body, schema, pointer, post, key=key, hint=f"{hint}-n", or_null=or_null
    )
    value = special or conv.element_value(
        schema, pointer, post, hint=f"{hint}-v", stops=stops, or_null=or_null
    )
    return conv.b.add(hint, f"({pre} {value})+" if repeated else f"{pre} {value}")
