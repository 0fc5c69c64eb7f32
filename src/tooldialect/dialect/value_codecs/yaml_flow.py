"""YAML flow style: ``{city: Paris, q: "a: b", tags: [a, b], n: null}``. A string is written
plain where YAML 1.1 reads it back as the same string (an identifier-like word or phrase that
is no boolean or null word), else double-quoted; numbers always hold a ``.`` before an
exponent (YAML 1.1 reads ``1e+20`` as a string)."""

from __future__ import annotations

import string
from typing import Any, ClassVar

from .base import ValueCodec
from .syntax import PlainStrings, StringForm, Syntax, backslash_form, json_number

__all__ = ["YAML_WORDS", "YamlFlowCodec"]

YAML_WORDS: dict[str, Any] = {
    **{w: None for w in ("~", "null", "Null", "NULL")},
    **{w: True for w in ("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON")},
    **{w: False for w in ("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF")},
    **{w: w for w in ("y", "Y", "n", "N")},
}
"""Words YAML 1.1 reads as booleans or null, and ``y``/``n`` (booleans to the YAML 1.1 spec,
strings to PyYAML: written plain as PyYAML does, read as written)."""

_WORD = string.ascii_letters + "_"
_PLAIN = PlainStrings(
    first=_WORD,
    middle=_WORD + string.digits + " ./-",
    last=_WORD + string.digits + "./-",
    reserved=frozenset(w for w, v in YAML_WORDS.items() if v != w),
)
# DEL and the C1 controls are not printable YAML: always escaped
_C1 = "".join(map(chr, range(0x7F, 0xA0)))
_DQ = backslash_form(
    '"', char='[^"\\\\\\x00-\\x1F\\x7F-\\x9F] | "\\\\" [^\\x00-\\x1F]', escape_also=_C1
)
_SQ = StringForm("'", "'", "doubled", char="[^'\\x00-\\x1F] | \"''\"", plain="'")


def yaml_number(value: float) -> str:
    """A JSON number with a ``.`` before any exponent, as YAML 1.1 reads a float."""
    text = json_number(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text


class YamlFlowCodec(ValueCodec):
    """A YAML flow collection as PyYAML writes one (``default_flow_style=True``)."""

    name: ClassVar[str] = "yaml-flow"

    def syntax(self, quote: str) -> Syntax:
        return _SYNTAX


_SYNTAX = Syntax(
    strings=(_DQ, _SQ),
    keys="ident-or-quoted",
    plain=_PLAIN,
    words=YAML_WORDS,
    number=yaml_number,
)
