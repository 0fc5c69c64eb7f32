"""Marker templates: ``{name}``, ``{id}``, ``{index}`` (``{key}``, ``{value}`` ... in element
templates), literal braces doubled as in ``str.format``; and the frozen base of spec models."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["SpecModel", "format_template", "literal_prefix"]


class SpecModel(BaseModel):
    """Base of every spec model."""

    # ignore unknown fields: specs written by newer versions still load
    model_config = ConfigDict(extra="ignore", frozen=True)


_FIELD_RE = re.compile(r"\{\{|\}\}|\{(\w+)\}")


def format_template(template: str, **values: Any) -> str:
    """``str.format``-like substitution that leaves unknown ``{fields}`` untouched."""

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        key = m.group(1)
        return str(values[key]) if key in values else token

    return _FIELD_RE.sub(sub, template)


def literal_prefix(template: str) -> str:
    """The literal text of a template before its first ``{field}``."""
    m = _FIELD_RE.search(template)
    while m and m.group(0) in ("{{", "}}"):
        m = _FIELD_RE.search(template, m.end())
    prefix = template[: m.start()] if m else template
    return prefix.replace("{{", "{").replace("}}", "}")
