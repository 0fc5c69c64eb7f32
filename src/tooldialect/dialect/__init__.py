"""Dialects: the spec (data), the builtin registry, detection, derivation and polyfills.

Importing this package (which importing any of its modules does first) loads every builtin family
(``builtins``), so the catalogue ``DialectSpec.builtin`` reads (``spec.builtin_spec``) is full.

Detection and derivation take the checks they run (``dialect.ports``) as arguments;
``tooldialect.detect_dialect`` (``tooldialect.verify``) passes the real ones."""

from .builtins import builtin_dialects, get_builtin
from .spec import DialectSpec

__all__ = ["DialectSpec", "builtin_dialects", "get_builtin"]
