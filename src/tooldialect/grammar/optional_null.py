"""``null`` for an optional argument means "not given" (BFCL counts it so, and models trained
on its style write ``"unit": null`` for an argument they leave out).

``optional_null_keys`` names, for one tool's parameters, the keys where that reading applies:
top-level keys that are optional and whose schema rejects ``null``. The tool-call grammar also
accepts ``null`` there (``SchemaConverter.arguments``, the element and Python bodies), and the
parser drops such members from the call's arguments (``parse/null_members.py``), so the call
validates against the tool's full schema. Where a key's schema admits ``null``, ``null`` is a
value and stays. Structured output (``response_format``) never reads it: an answer's schema
means what it says.

Only a call's top level, not nested objects: whether a nested member may go depends on which
``anyOf`` branch or array item schema its whole value matches, known only once that value ends
(the parser would hold it back whole), and BFCL's "not given" is about a function's parameters.

No key where dropping one could break the call: a root with combinators, ``$ref``,
dependencies, or a ``minProperties`` above its required keys (the grammar counts the member
that ``null`` stands in for).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from .validate import validate_value

__all__ = ["optional_null_keys"]

_WHOLE = (
    "$ref",
    "$recursiveRef",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
)
"""Root keywords that tie the members together: with one, no member is dropped."""


def optional_null_keys(parameters: Any) -> frozenset[str]:
    """The top-level keys of a tool's ``parameters`` whose ``null`` means "not given": optional,
    and ``null`` fails their schema. Empty where that cannot be said safely (see the module)."""
    if not isinstance(parameters, Mapping):
        return frozenset()
    try:
        text = json.dumps(parameters, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return frozenset()
    return _keys(text)


@functools.lru_cache(maxsize=256)
def _keys(text: str) -> frozenset[str]:
    # cached by the schema's text: the grammar and the parser ask once per tool and request
    schema = json.loads(text)
    props = schema.get("properties")
    if not isinstance(props, dict) or any(k in schema for k in _WHOLE):
        return frozenset()
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    low = schema.get("minProperties")
    if isinstance(low, int) and not isinstance(low, bool) and low > len(required):
        return frozenset()
    optional = [k for k, sub in props.items() if k not in required and sub is not False]
    if not optional:
        return frozenset()
    try:
        problems = validate_value(schema, dict.fromkeys(optional))
    except Exception:  # a schema the validator cannot read (a bad pattern): no key, no harm
        return frozenset()
    # every optional key at once: each one's own schema reports at its own path
    rejected = {p.path for p in problems}
    return frozenset(k for k in optional if f"/{k}" in rejected)
