"""The spellings an element body's values share between writing and reading: XML escapes
(:func:`xml_escape`, :func:`xml_unescape`), an array's item tag (:func:`singular`) and a value's
JSON type name (:func:`json_type`, the ``{type}`` a parameter template writes).
``bodies.encode_element_value`` writes values with them; the parser and the grammar read them
back with the same spec fields."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["json_type", "singular", "xml_escape", "xml_unescape"]

_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"), ("'", "&#39;"))
_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def xml_escape(text: str) -> str:
    """``text`` as an XML-escaping template writes it (Jinja's ``| e`` spelling)."""
    for raw, entity in _ESCAPES:
        text = text.replace(raw, entity)
    return text


def _entity(m: re.Match[str]) -> str:
    ref = m.group(1)
    if ref in _NAMED:
        return _NAMED[ref]
    code = int(ref[2:], 16) if ref[1:2] in "xX" else int(ref[1:])
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group(0)


def xml_unescape(text: str) -> str:
    """The five XML entities and numeric references decoded; any other ``&`` stays as written
    (``AT&T``, ``&copy;``: a model that forgot to escape keeps its text)."""
    return _ENTITY.sub(_entity, text) if "&" in text else text


def singular(key: str) -> str:
    """The key's singular as templates spell an array's item tag (``tags`` -> ``tag``)."""
    if key.endswith("ies") and len(key) > 3:
        return key[:-3] + "y"
    if key.endswith("s") and not key.endswith("ss") and len(key) > 1:
        return key[:-1]
    return key


def json_type(value: Any) -> str:
    """The JSON Schema type name of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, (list, tuple)) else "object"
