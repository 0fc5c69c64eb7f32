"""Markup codecs: how an element body writes a string value inside markup (``ElementBody.
text_codec``), one codec each: escaped for text as Jinja's ``| e`` does (``html-escape``), as XML
text (``xml-text``), as an attribute value (``xml-attr``), or wrapped in a CDATA section only
where it needs one (``cdata``, ``cdata-lines``). Other values are JSON text, as element bodies
write them.

A codec is data: the entities it writes (or the characters that make it wrap), from which
``escape`` writes a string, ``unescape`` reads one back (any entity, a whole-value CDATA
section), and the grammar (``grammar/bodies/element_param.py``) spells its text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...errors import DialectError
from ..element_values import xml_unescape

__all__ = [
    "CDATA_CLOSE",
    "CDATA_OPEN",
    "MarkupCodec",
    "canonical_markup_name",
    "markup_codec",
    "markup_codec_names",
    "registered_markup_codecs",
]

CDATA_OPEN, CDATA_CLOSE = "<![CDATA[", "]]>"


@dataclass(frozen=True)
class MarkupCodec:
    """One way string values are written inside markup."""

    name: str
    entities: tuple[tuple[str, str], ...] = ()
    """``(character, entity)`` pairs it escapes, ``&`` first."""
    wrap_when: str = ""
    """The characters that make it wrap a value in a CDATA section (none: it escapes)."""

    def escape(self, text: str) -> str:
        """A string value as written."""
        if self.wrap_when:
            if not any(c in text for c in self.wrap_when):
                return text
            # a section cannot hold its own closer: split it across two
            return CDATA_OPEN + text.replace(CDATA_CLOSE, "]]]]><![CDATA[>") + CDATA_CLOSE
        for raw, entity in self.entities:
            text = text.replace(raw, entity)
        return text

    def encode(self, value: Any) -> str:
        """A JSON value as an element writes it: a string escaped, any other value as JSON."""
        if isinstance(value, str):
            return self.escape(value)
        return json.dumps(value, ensure_ascii=False)

    def unescape(self, text: str) -> str:
        """A string value read back: a CDATA section unwrapped (its pieces joined), else every
        entity decoded (any other ``&`` stays as written)."""
        if text.startswith(CDATA_OPEN) and text.endswith(CDATA_CLOSE):
            return text[len(CDATA_OPEN) : -len(CDATA_CLOSE)].replace("]]]]><![CDATA[>", "]]>")
        return xml_unescape(text)

    @property
    def decodes_entities(self) -> bool:
        """Whether text it writes outside a CDATA section holds entities."""
        return bool(self.entities)


_BUILTIN = (
    MarkupCodec(
        "html-escape",
        (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"), ("'", "&#39;")),
    ),
    MarkupCodec("xml-text", (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))),
    MarkupCodec("xml-attr", (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"))),
    MarkupCodec("cdata", wrap_when="<&"),
    MarkupCodec("cdata-lines", wrap_when="<&\n"),
)
_REGISTRY: dict[str, MarkupCodec] = {c.name: c for c in _BUILTIN}


def canonical_markup_name(name: str) -> str:
    """``name`` where it is a markup codec (or ``""``, raw text); ``DialectError`` otherwise."""
    if name and name not in _REGISTRY:
        raise DialectError(f"unknown markup codec {name!r}; known: {sorted(_REGISTRY)}")
    return name


def markup_codec(name: str) -> MarkupCodec:
    return _REGISTRY[canonical_markup_name(name)]


def markup_codec_names() -> list[str]:
    return sorted(_REGISTRY)


def registered_markup_codecs() -> list[MarkupCodec]:
    """Every markup codec, in the order derivation tries them."""
    return list(_REGISTRY.values())
