"""Builtin dialects: one small function per family, each returning a ``DialectSpec``.

Add a family by writing a function that returns its spec and decorating it with ``@builtin`` (or
``@builtin(signatures=..., priority=...)`` so that ``detect_dialect`` recognises its templates),
from ``dialect.registry``. Markers are copied from the family's own chat template (named in each
docstring). Families live in ``dialect/families/`` grouped by body shape; importing this module
loads them all (hermes first: its registration order breaks signature ties).
"""

from __future__ import annotations

from .families import element, hermes, json_envelope, python_call, tagged  # noqa: F401
from .families.common import BARE_JSON_TRIGGER, FENCED_JSON_TRIGGER, THINK
from .registry import Signature, builtin, builtin_dialects, builtin_signatures, get_builtin

__all__ = [
    "BARE_JSON_TRIGGER",
    "FENCED_JSON_TRIGGER",
    "THINK",
    "Signature",
    "builtin",
    "builtin_dialects",
    "builtin_signatures",
    "get_builtin",
]
