"""Dialects stay data: no family or value-codec name is compared outside ``dialect/`` (the
grammar's codecs take their names from ``dialect/value_codecs``; docs/architecture.md, "Where
new code goes"). A branch such as
``if spec.id == "gemma4"`` or ``body.value_codec == "python"`` in the grammar or the parser
fails here; what differs between dialects is a spec field, a codec's method or a body kind's
registered grammar and reader.

Read with ``ast`` over the source; the names come from the registries."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tooldialect.dialect.registry import builtin_dialects
from tooldialect.dialect.value_codecs import value_codec_names
from tooldialect.grammar.codec import codec_names

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tooldialect"
ALLOWED = ("dialect/",)
"""Where a name may be spelled in a comparison: the dialects and their value codecs."""


def names() -> frozenset[str]:
    return frozenset([*builtin_dialects(), *value_codec_names(), *codec_names()])


def _strings(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for elt in node.elts:
            yield from _strings(elt)


def compared_names(source: str, known: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, name)`` for every known name compared (``==``, ``!=``, ``in``, ``match``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            operands = [node.value]
        else:
            continue
        found += [(node.lineno, s) for op in operands for s in _strings(op) if s in known]
    return found


def test_the_scan_finds_a_family_branch() -> None:
    known = names()
    source = 'if spec.id == "gemma4" or body.value_codec in ("python", "x"):\n    pass\n'
    assert compared_names(source, known) == [(1, "gemma4"), (1, "python")]


def test_no_family_or_codec_name_is_compared_outside_dialect_and_codecs() -> None:
    known = names()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(ALLOWED):
            continue
        for line, name in compared_names(path.read_text(encoding="utf-8"), known):
            offenders.append(f"{rel}:{line}: {name!r}")
    assert offenders == []
