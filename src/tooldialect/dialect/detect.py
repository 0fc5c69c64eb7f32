"""Dialect detection: which builtin a template speaks, else a derived spec, else the polyfill.

Each builtin declares ``signatures`` (text its templates' sources contain, see
``builtins.Signature``) and a ``priority``; detection walks them most specific first and takes the
first match. Nothing here
names a family: adding a family means adding a builtin with signatures.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from .builtins import THINK, builtin_signatures, get_builtin
from .spec import DialectSpec

__all__ = ["detect_builtin", "detect_dialect"]

POLYFILL_ID = "polyfill-json"

DeriveFn = Callable[..., DialectSpec | None]


def detect_builtin(template_source: str | None) -> str | None:
    """The id of the builtin whose signature the template source matches first, or ``None``."""
    src = template_source or ""
    for name, signatures in builtin_signatures():
        if any(sig.matches(src) for sig in signatures):
            return name
    return None


def detect_dialect(
    template_source: str | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
) -> DialectSpec:
    """The dialect a chat template's model writes tool calls in.

    With ``builtins=True``: the matching builtin (``origin="builtin"``) if it reads the template's
    own rendering of a past call (``dialect.agreement``; a derived spec that does wins over one
    that does not), else a spec derived from
    the template (``dialect.derive``), else the ``polyfill-json`` polyfill. ``builtins=False`` skips
    the builtins and derives. A template with no tool support gets the polyfill; if it reasons in
    ``<think>`` the polyfill keeps those markers.
    """
    src = template_source or ""
    if builtins:
        name = detect_builtin(src)
        if name is not None:
            return _checked(get_builtin(name), src, bos_token=bos_token, eos_token=eos_token)
    derived = _derive(src, bos_token=bos_token, eos_token=eos_token)
    if derived is not None:
        return derived
    return _polyfill_for(src)


def _checked(builtin: DialectSpec, src: str, *, bos_token: str, eos_token: str) -> DialectSpec:
    """``builtin``, unless it cannot read the template's own rendering of a past call (its
    signature matched a template that writes calls otherwise) and a derived spec can."""
    from .agreement import reads_own_call

    if reads_own_call(builtin, src, bos_token=bos_token, eos_token=eos_token) is not False:
        return builtin
    derived = _derive(src, bos_token=bos_token, eos_token=eos_token)
    if derived is not None and reads_own_call(
        derived, src, bos_token=bos_token, eos_token=eos_token
    ):
        return derived
    return builtin


def _derive(src: str, *, bos_token: str, eos_token: str) -> DialectSpec | None:
    if not src.strip():
        return None
    try:
        module = importlib.import_module(f"{__package__}.derive")
    except ModuleNotFoundError as exc:
        # only a missing derive module falls back; a broken import inside it must surface
        if exc.name != f"{__package__}.derive":
            raise
        return None
    derive = cast(DeriveFn, module.derive_dialect)
    return derive(src, bos_token=bos_token, eos_token=eos_token)


def _polyfill_for(src: str) -> DialectSpec:
    spec = get_builtin(POLYFILL_ID)
    if THINK.close in src and spec.reasoning is None:
        return spec.model_copy(update={"reasoning": THINK})
    return spec
