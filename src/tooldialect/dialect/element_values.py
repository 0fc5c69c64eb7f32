"""How an element body writes one argument value: raw text, JSON, XML-escaped text, or nested
child elements (``ElementBody.child``/``item``). ``render_call`` writes values with
:func:`encode_element_value`; the parser reads them back with the same spec fields and
:func:`xml_unescape`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bodies import ElementBody

__all__ = [
    "encode_element_params",
    "encode_element_value",
    "singular",
    "xml_escape",
    "xml_unescape",
]

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


def _fill(template: str, **values: str) -> str:
    from .spec import format_template

    return format_template(template, **values)


def _scalar(body: ElementBody, value: Any) -> str:
    if isinstance(value, str) and not body.json_values:
        return xml_escape(value) if body.xml_escape else value
    return json.dumps(value, ensure_ascii=False)


def encode_element_value(body: ElementBody, key: str, value: Any) -> str:
    """The text of one value: objects and arrays as child elements where the body nests them
    (``None`` members left out where it omits them), other values as raw text or JSON."""
    if isinstance(value, Mapping) and body.child:
        return "".join(
            _fill(body.child, key=str(k), value=encode_element_value(body, str(k), v))
            for k, v in value.items()
            if not (v is None and body.omit_none)
        )
    if isinstance(value, (list, tuple)) and body.item:
        one = singular(key)
        return "".join(
            _fill(body.item, key=key, singular=one, value=encode_element_value(body, key, x))
            for x in value
        )
    return _scalar(body, value)


def _param(body: ElementBody, key: str, value: Any) -> str:
    from .spec import json_type

    kind = json_type(value)
    return _fill(
        body.param,
        key=key,
        value=encode_element_value(body, key, value),
        is_string="true" if isinstance(value, str) else "false",
        type=body.type_names.get(kind, kind),
    )


def encode_element_params(body: ElementBody, args: Mapping[str, Any]) -> str:
    """Every argument's parameter element, in order (``None`` ones left out where the body
    omits them, an array as one parameter per element where it repeats them), joined by the
    body's ``param_separator``."""
    out = []
    for key, value in args.items():
        if value is None and body.omit_none:
            continue
        if isinstance(value, (list, tuple)) and body.repeat_arrays:
            out += [_param(body, key, x) for x in value]
        else:
            out.append(_param(body, key, value))
    return body.param_separator.join(out)
