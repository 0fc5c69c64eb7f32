"""Helpers that write Jinja source text (string literals, output statements, indentation)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = ["emit", "indent", "lit", "pattern_expr"]


def lit(text: str) -> str:
    """``text`` as a Jinja string literal."""
    return json.dumps(text, ensure_ascii=False)


def emit(expr: str) -> str:
    """A Jinja output statement trimming the whitespace before it (the source's own layout)."""
    return "{{- " + expr + " }}"


def indent(lines: Sequence[str], depth: int = 1) -> list[str]:
    """``lines`` indented ``depth`` levels (Jinja's ``-`` trims it from the output)."""
    return ["    " * depth + line for line in lines]


def pattern_expr(pattern: str, **holes: str) -> str:
    """A Jinja expression writing ``pattern`` with each ``{hole}`` replaced by the expression
    ``holes[hole]`` (``pattern_expr('<{k}>', k='key')`` is ``"<" ~ (key) ~ ">"``); other braces
    stay text."""
    parts: list[str] = []
    for i, piece in enumerate(re.split(r"\{(\w+)\}", pattern)):
        if i % 2:
            parts.append(f"({holes[piece]})" if piece in holes else lit("{" + piece + "}"))
        elif piece:
            parts.append(lit(piece))
    return " ~ ".join(parts) or lit("")
