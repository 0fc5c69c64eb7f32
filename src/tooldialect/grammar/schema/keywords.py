"""Where a JSON Schema cannot be compiled, and the JSON pointer that says so.

Split from ``converter`` (which compiles): which keywords are annotations, refused outright or
compiled loose, and keeping error pointers true to the caller's schema when the compiler works
on an ``allOf`` it made up itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ...errors import UnsupportedSchemaError

__all__ = [
    "ANNOTATIONS",
    "UNSUPPORTED",
    "EmptySchemaError",
    "pointer_into",
    "ptr",
    "real_pointer",
    "refuse_unsupported",
]

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "default",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "contentEncoding",
        "contentMediaType",
        "$anchor",
    }
)
"""Keywords that never change which values a schema admits."""

UNSUPPORTED = frozenset({"$dynamicRef"})
"""Keywords refused outright: compiling without them would change what a reference means."""

LOOSE = ("if", "then", "else", "propertyNames", "unevaluatedProperties", "unevaluatedItems")
"""Keywords compiled as if absent: the grammar admits a superset, recorded in
``SchemaConverter.loose`` and left to validation (``grammar.validate``)."""


class EmptySchemaError(UnsupportedSchemaError):
    """A (sub)schema that admits no value at all: an ``anyOf``/``oneOf`` branch that raises it
    is dropped; anywhere else it is refused like any other."""


def is_annotation(key: str) -> bool:
    """Whether ``key`` never changes which values a schema admits."""
    return key in ANNOTATIONS or key.startswith("x-") or key not in VALIDATION_KEYWORDS


VALIDATION_KEYWORDS = frozenset(
    {
        "type", "enum", "const", "nullable",
        "properties", "patternProperties", "additionalProperties", "required",
        "dependencies", "dependentRequired", "dependentSchemas",
        "minProperties", "maxProperties", "propertyNames",
        "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
        "contains", "minContains", "maxContains",
        "minLength", "maxLength", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
        "$ref", "$recursiveRef", "$dynamicRef",
        "unevaluatedProperties", "unevaluatedItems",
    }
)  # fmt: skip


def ptr(base: str, *parts: str | int) -> str:
    for p in parts:
        base += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return base


@contextmanager
def real_pointer(at: str, *, parts: tuple[str, str]) -> Iterator[None]:
    """Errors inside an ``allOf`` we made up at ``at`` point into the schema, not into it:
    ``at/allOf/0/x`` becomes ``parts[0]/x`` (and ``/allOf/1/x`` ``parts[1]/x``)."""
    try:
        yield
    except UnsupportedSchemaError as exc:
        head = ptr(at, "allOf")
        if exc.pointer == head:  # the made-up allOf as a whole: the schema that made it up
            raise type(exc)(str(exc), pointer=at) from exc
        if not exc.pointer.startswith(head + "/"):
            raise
        index, _, tail = exc.pointer[len(head) + 1 :].partition("/")
        base = parts[0] if index == "0" else parts[1]
        real = f"{base}/{tail}" if tail else base
        raise type(exc)(str(exc), pointer=real) from exc


def refuse_unsupported(schema: Mapping[str, Any], pointer: str) -> None:
    """Raise ``UnsupportedSchemaError`` for a keyword in ``UNSUPPORTED``."""
    for key in schema:
        if key in UNSUPPORTED:
            raise UnsupportedSchemaError(
                f"JSON Schema keyword {key!r} at {ptr(pointer, key)!r} cannot be compiled "
                "into a grammar; remove it or express the constraint with enum/anyOf",
                pointer=ptr(pointer, key),
            )


@contextmanager
def pointer_into(document: Any, fallback: str) -> Iterator[None]:
    """An error from a merged ``allOf`` whose pointer names no place in ``document`` (the merge
    moved the keyword) points at the ``allOf`` itself instead."""
    try:
        yield
    except UnsupportedSchemaError as exc:
        if _resolves(document, exc.pointer):
            raise
        raise type(exc)(str(exc), pointer=fallback) from exc


def _resolves(document: Any, pointer: str) -> bool:
    node = document
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True
