"""The axes of the generated space, which values may combine, and the seeded draw.

The meaning of every axis and value is documented in the package docstring
(``bench/wire_generator/__init__.py``); this module holds the same space as data.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass

__all__ = [
    "AXES",
    "LITERAL_CODECS",
    "WireAxes",
    "allowed",
    "sample_axes",
]

LITERAL_CODECS = (
    "json",
    "python",
    "yaml_flow",
    "toml_inline",
    "js_object",
    "lua_table",
    "ruby_hash",
    "php_array",
    "edn",
)
"""Codecs with their own map and list syntax (a whole object of arguments can be written in
them); ``sql`` has them too but reads oddly as a whole call, so it writes values only."""

AXES: dict[str, tuple[str, ...]] = {
    "codec": (
        *LITERAL_CODECS,
        "sql",
        "markup_text",
        "markup_attr",
        "markup_cdata",
        "typed_prefix",
    ),
    "structure": (
        "object",
        "items",
        "records",
        "headings",
        "attributes",
        "open_markers",
        "elements",
    ),
    "name_at": ("before", "inside", "attribute", "key", "heading"),
    "nesting": ("codec", "structure"),
    "ids": ("none", "index0", "index1", "counter", "letters", "caller"),
    "envelope": ("special", "tag", "bracket", "word", "none"),
    "section": ("none", "markers"),
    "separator": ("newline", "blank_line", "glued", "comma", "marker"),
    "reasoning": ("none", "last_turn", "prompt_open", "channels"),
    "tools": ("json", "signatures", "xml", "typescript"),
    "turns": ("special", "header", "brackets", "words"),
    "results": ("turn", "grouped"),
    "content": ("string", "parts"),
    "strict": ("lenient", "raise"),
}
"""Every axis and its values, in the order they are drawn (later axes depend on earlier ones)."""

_VALUE_STRUCTURES = ("headings", "open_markers", "elements")
_STRUCTURES_FOR_CODEC: dict[str, tuple[str, ...]] = {
    **{
        c: ("object", "items", "records", *_VALUE_STRUCTURES)
        for c in LITERAL_CODECS
        if c not in ("json", "python", "js_object")
    },
    **{
        c: ("object", "items", "records", "attributes", *_VALUE_STRUCTURES)
        for c in ("json", "python", "js_object")
    },
    "sql": ("items", *_VALUE_STRUCTURES),
    "markup_text": ("records", *_VALUE_STRUCTURES),
    "markup_cdata": ("records", *_VALUE_STRUCTURES),
    "markup_attr": ("attributes",),
    "typed_prefix": _VALUE_STRUCTURES,
}
_NAME_AT: dict[str, tuple[str, ...]] = {
    "object": ("before", "inside", "attribute", "key", "heading"),
    "items": ("before", "inside", "attribute", "heading"),
    "records": ("before", "inside", "attribute", "key", "heading"),
    "headings": ("before", "inside", "attribute", "heading"),
    "attributes": ("before", "inside", "attribute", "key", "heading"),
    "open_markers": ("before", "inside", "attribute", "heading"),
    "elements": ("before", "inside", "attribute", "key", "heading"),
}


@dataclass(frozen=True)
class WireAxes:
    """The value a generated template takes on every axis (``AXES``)."""

    codec: str
    structure: str
    name_at: str
    nesting: str
    ids: str
    envelope: str
    section: str
    separator: str
    reasoning: str
    tools: str
    turns: str
    results: str
    content: str
    strict: str

    def as_dict(self) -> dict[str, str]:
        """Axis -> value, in ``AXES`` order."""
        return asdict(self)


def allowed(axis: str, chosen: Mapping[str, str]) -> tuple[str, ...]:
    """The values ``axis`` may take given the axes drawn before it."""
    if axis == "structure":
        return _STRUCTURES_FOR_CODEC[chosen["codec"]]
    if axis == "name_at":
        return _NAME_AT[chosen["structure"]]
    if axis == "nesting":
        nests = chosen["structure"] in ("elements", "records")
        return AXES["nesting"] if nests else ("codec",)
    if axis == "separator" and chosen["envelope"] in ("none", "word"):
        # calls glued together with no closer of their own could not be told apart
        return tuple(v for v in AXES["separator"] if v != "glued")
    return AXES[axis]


def sample_axes(rng: random.Random, fixed: Mapping[str, str] | None = None) -> WireAxes:
    """One point of the space, drawn axis by axis; ``fixed`` imposes values (each must be allowed
    by the values before it: ``ValueError`` otherwise). Every axis draws from ``rng`` whether
    fixed or not, so the spelling drawn after it does not shift."""
    fixed = fixed or {}
    unknown = set(fixed) - set(AXES)
    if unknown:
        raise ValueError(f"no such axis: {sorted(unknown)}")
    chosen: dict[str, str] = {}
    for axis in AXES:
        options = allowed(axis, chosen)
        value = rng.choice(options)
        if axis in fixed:
            if fixed[axis] not in options:
                raise ValueError(f"{axis}={fixed[axis]!r} cannot follow {chosen}: {options}")
            value = fixed[axis]
        chosen[axis] = value
    return WireAxes(**chosen)
