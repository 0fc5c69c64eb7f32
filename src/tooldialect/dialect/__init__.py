"""Dialects: the spec (data), the builtin registry, detection, derivation and polyfills.

Detection and derivation take the checks they run (``dialect.ports``) as arguments;
``tooldialect.detect_dialect`` (``tooldialect.verify``) passes the real ones."""

from .builtins import builtin_dialects, get_builtin
from .spec import DialectSpec

__all__ = ["DialectSpec", "builtin_dialects", "get_builtin"]
