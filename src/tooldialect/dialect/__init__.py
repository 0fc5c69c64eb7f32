"""Dialects: the spec (data), the builtin registry, detection, derivation and polyfills."""

from .builtins import builtin_dialects, get_builtin
from .detect import detect_dialect
from .spec import DialectSpec

__all__ = ["DialectSpec", "builtin_dialects", "detect_dialect", "get_builtin"]
