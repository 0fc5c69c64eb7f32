"""Dialect detection: which builtin a template speaks, else a derived spec, else the polyfill."""

from __future__ import annotations

from .builtins import get_builtin
from .spec import DialectSpec

__all__ = ["detect_dialect"]


def detect_dialect(
    template_source: str | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
) -> DialectSpec:
    """The dialect a chat template's model writes tool calls in."""
    src = template_source or ""
    if "<tool_call>" in src:
        return get_builtin("hermes")
    return get_builtin("polyfill-json")
