"""One element value's text as meant: layout trimmed, wrappers (CDATA, a JSON string) removed,
typed by the tool's schema or the template's type attribute, nested elements read back, escapes
decoded where the spec says the family writes them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...dialect.element_values import json_type, xml_unescape
from ...dialect.spec import ElementBody
from ...dialect.value_codecs import NotRead, value_codec
from ...dialect.value_codecs.markup import CDATA_CLOSE, CDATA_OPEN
from ..values import coerce_value, fit_empty_value, schema_types
from .nested_values import NOT_NESTED, read_nested

__all__ = ["CDATA_CLOSE", "CDATA_OPEN", "attribute_unescape", "element_value", "trim_value"]

_SPLIT = CDATA_CLOSE[:2] + CDATA_CLOSE + CDATA_OPEN + CDATA_CLOSE[2:]


def attribute_unescape(body: ElementBody) -> Callable[[str], str] | None:
    """How names and keys written as quoted attributes are decoded: as the family's values are
    (learnt ``xml_escape``), else not at all (``&amp;`` stays as written)."""
    return xml_unescape if body.xml_escape else None


def trim_value(value: str, body: ElementBody, *, indented: bool) -> str:
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


def _flag(body: ElementBody, fields: Mapping[str, str]) -> str | None:
    """The string flag a ``{type}`` attribute (through ``body.type_names``) or an
    ``{is_string}`` attribute gives, if any."""
    if "type" in fields:
        written = fields["type"].strip()
        names = {v: k for k, v in body.type_names.items()}
        return "true" if names.get(written, written) == "string" else "false"
    return fields.get("is_string")


def _unwrapped(raw: str, body: ElementBody, flag: str | None) -> tuple[str, str | None, bool]:
    """The value text and its string flag with a wrapper removed: a CDATA section (text, never
    escaped inside), a JSON string where the family writes JSON values; and whether the text
    may still hold escapes."""
    text = raw.strip()
    if text.startswith(CDATA_OPEN) and text.endswith(CDATA_CLOSE):
        # a section holding ``]]>`` is written as two (``]]]]><![CDATA[>``)
        inner = text[len(CDATA_OPEN) : -len(CDATA_CLOSE)].replace(_SPLIT, CDATA_CLOSE)
        return inner, flag or "true", False
    if body.json_values and text.startswith('"'):
        try:
            decoded = json.loads(text)
        except ValueError:
            return raw, flag, True
        if isinstance(decoded, str):
            return decoded, "true", False
    elif body.json_values:
        decoded = _decoded(text, body)
        if isinstance(decoded, str) and text[:1] in _QUOTES:
            return decoded, "true", False
    return raw, flag, True


_QUOTES = "'\""
_NOTHING = object()


def _literal(text: str, body: ElementBody, schema: Any, root: Mapping[str, Any]) -> Any:
    """A value other than a string, written as a literal of the body's codec (Lua's
    ``{1, 2}``) where the schema admits it, else ``_NOTHING`` (the text is typed by the
    schema)."""
    if not body.json_values:
        return _NOTHING
    decoded = _decoded(text.strip(), body)
    if decoded is _NOTHING or isinstance(decoded, str):
        return _NOTHING
    types = schema_types(schema, root)
    if types and "string" in types and json_type(decoded) not in types:
        return _NOTHING
    return fit_empty_value(decoded, schema, root)


def _decoded(text: str, body: ElementBody) -> Any:
    """``text`` read as a literal of the body's value codec, or ``_NOTHING``."""
    try:
        return value_codec(body.value_codec).decode(text, quote=body.value_quote)
    except (NotRead, RecursionError):
        return _NOTHING


def element_value(
    raw: str,
    body: ElementBody,
    fields: Mapping[str, str],
    *,
    schema: Any,
    root: Mapping[str, Any],
    key: str,
) -> Any:
    """The JSON value of one parameter whose text is ``raw`` (already trimmed)."""
    text, flag, escaped = _unwrapped(raw, body, _flag(body, fields))
    if escaped and (body.child or body.item) and flag != "true":
        nested = read_nested(text, body, schema, root, key=key)
        if nested is not NOT_NESTED:
            return nested
    if escaped and body.xml_escape and body.escape_json:
        # the JSON of a non-string value is escaped too (``[&#34;a&#34;]``): decoded first
        text, escaped = xml_unescape(text), False
    value = _literal(text, body, schema, root) if flag != "true" else _NOTHING
    if value is _NOTHING:
        value = coerce_value(text, schema, root=root, is_string=flag)
    if isinstance(value, str) and escaped and body.xml_escape:
        value = xml_unescape(value)
    if isinstance(value, str) and body.unescape_value:
        value = _unescape(value)
    return value
