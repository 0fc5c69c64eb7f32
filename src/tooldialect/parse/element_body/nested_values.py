"""Nested element values read back into JSON (``ElementBody.child``/``item``): an object written
as child elements (``<city>Paris</city>``), an array as one element per item (``<item>1</item>``,
the key's singular, or the key again), recursively.

Keys come from the tool's schema: where the object's schema lists its properties, a child whose
tag is not one of them makes the whole value text (a ``<b>`` inside a string stays a ``<b>``).
A value that does not read as nested elements is left to the caller, which reads it as JSON or
raw text: models also write nested values as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dialect.element_values import singular, xml_unescape
from ...dialect.spec import ElementBody, format_template
from ..values import coerce_value, schema_types, untyped_value

__all__ = ["NOT_NESTED", "read_nested", "read_value"]

NOT_NESTED: Any = object()
"""Returned where the text is not nested elements of the schema's shape."""

_MAX_DEPTH = 32


def _split(template: str, field: str) -> tuple[str, str]:
    before, _, after = template.partition("{" + field + "}")
    return before, after


def _balanced(text: str, p: int, opener: str, closer: str) -> int:
    """Start of the ``closer`` that closes the element whose content starts at ``p``, counting
    elements of the same ``opener`` nested inside it; -1 when it never closes."""
    depth, i = 0, p
    while True:
        c = text.find(closer, i)
        if c < 0:
            return -1
        depth += text.count(opener, i, c) if opener else 0
        if depth == 0:
            return c
        depth -= 1
        i = c + len(closer)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _resolved(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref") if isinstance(schema, Mapping) else None
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, Mapping) else None
        schema = node
    return schema if isinstance(schema, Mapping) else {}


def _members(
    text: str, body: ElementBody, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int
) -> Any:
    pre, rest = _split(body.child, "key")
    link, post = _split(rest, "value")
    pre, link = pre.strip(), link.strip()
    props = schema.get("properties")
    keys = set(props) if isinstance(props, Mapping) and props else None
    out: dict[str, Any] = {}
    i = _skip_ws(text, 0)
    while i < len(text):
        if not pre or not text.startswith(pre, i):
            return NOT_NESTED
        j = i + len(pre)
        k = text.find(link, j) if link else -1
        key = text[j:k].strip() if k >= 0 else ""
        if not key or any(c in key for c in "<>\n") or (keys is not None and key not in keys):
            return NOT_NESTED
        start = k + len(link)
        closer = format_template(post, key=key).strip()
        opener = pre + text[j:k] + link if "{key}" in post else pre
        end = _balanced(text, start, opener, closer)
        if end < 0:
            return NOT_NESTED
        sub = props.get(key, {}) if isinstance(props, Mapping) else {}
        out[key] = read_value(text[start:end], body, sub, root, key=key, depth=depth + 1)
        i = _skip_ws(text, end + len(closer))
    return out


def _items(
    text: str,
    body: ElementBody,
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    key: str,
    depth: int,
) -> Any:
    template = format_template(body.item, key=key, singular=singular(key))
    pre, post = (part.strip() for part in _split(template, "value"))
    if not pre or not post:
        return NOT_NESTED
    sub = schema.get("items", {})
    out: list[Any] = []
    i = _skip_ws(text, 0)
    while i < len(text):
        if not text.startswith(pre, i):
            return NOT_NESTED
        start = i + len(pre)
        end = _balanced(text, start, pre, post)
        if end < 0:
            return NOT_NESTED
        out.append(read_value(text[start:end], body, sub, root, key=key, depth=depth + 1))
        i = _skip_ws(text, end + len(post))
    return out


def read_nested(
    text: str,
    body: ElementBody,
    schema: Any,
    root: Mapping[str, Any],
    *,
    key: str,
    depth: int = 0,
) -> Any:
    """``text`` as the object or array the schema admits, read from child elements, or
    ``NOT_NESTED``. An untyped schema admits either, where the text starts as one."""
    if depth > _MAX_DEPTH:
        return NOT_NESTED
    types = schema_types(schema, root)
    resolved = _resolved(schema, root)
    untyped = not types
    if untyped:  # whichever shape the text starts as, an item list first
        if not text.lstrip().startswith("<"):
            return NOT_NESTED
        types = {"array", "object"}
    if body.item and "array" in types:
        got = _items(text, body, resolved, root, key, depth)
        if got is not NOT_NESTED and (got or not untyped):
            return got
    if body.child and "object" in types:
        got = _members(text, body, resolved, root, depth)
        if got is not NOT_NESTED and (got or not untyped):
            return got
    return NOT_NESTED


def _layout(text: str) -> str:
    """A value the model put on lines of its own (``<city>\\n  Paris\\n</city>``) less that
    layout; a value written inline is kept verbatim."""
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return text.strip() if "\n" in lead and "\n" in trail else text


def read_value(
    text: str,
    body: ElementBody,
    schema: Any,
    root: Mapping[str, Any],
    *,
    key: str,
    depth: int = 0,
) -> Any:
    """One nested value: child elements where it has them, else a scalar typed by its schema
    (an untyped one as the JSON scalar it spells, else text)."""
    got = read_nested(text, body, schema, root, key=key, depth=depth)
    if got is not NOT_NESTED:
        return got
    raw = _layout(text)
    if not schema_types(schema, root):
        value = untyped_value(raw)
        if not isinstance(value, (str, dict, list)):
            return value  # a scalar (None written as Python's too); a container is children
        value = raw
    else:
        value = coerce_value(raw, schema, root=root)
    if isinstance(value, str) and body.xml_escape:
        return xml_unescape(value)
    return value
