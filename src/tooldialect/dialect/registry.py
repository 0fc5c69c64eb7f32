"""The registry builtin dialects register into: signatures, priorities, lookup by name.

Families (``dialect/families/``) import this module to register their specs; ``builtins.py``
imports the families. Nothing here imports a family, so there is no import cycle. The name ->
factory table itself lives in ``spec.py``, so that ``DialectSpec.builtin`` needs nothing above
it; this module adds what detection needs of each builtin, its signatures and priority.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import overload

from .spec import DialectSpec, SpecFactory, add_builtin, builtin_names, builtin_spec

__all__ = [
    "Signature",
    "SpecFactory",
    "builtin",
    "builtin_dialects",
    "builtin_signatures",
    "get_builtin",
]


@dataclass(frozen=True)
class Signature:
    """Text a chat template's source must contain (``all_of``) and must not (``none_of``) for a
    builtin to be recognised. Strings are matched against the *source*, so a Jinja string literal
    ``'\\n'`` is the two characters backslash and ``n``."""

    all_of: tuple[str, ...]
    none_of: tuple[str, ...] = ()

    def matches(self, source: str) -> bool:
        """True when every ``all_of`` string and no ``none_of`` string is in ``source``."""
        return all(s in source for s in self.all_of) and not any(s in source for s in self.none_of)


@dataclass(frozen=True)
class _Entry:
    signatures: tuple[Signature, ...] = field(default=())
    priority: int = 0
    order: int = 0


_REGISTRY: dict[str, _Entry] = {}


def _register(fn: SpecFactory, signatures: Sequence[Signature], priority: int) -> SpecFactory:
    spec = add_builtin(fn)
    _REGISTRY[spec.id] = _Entry(tuple(signatures), priority, len(_REGISTRY))
    return fn


@overload
def builtin(fn: SpecFactory, /) -> SpecFactory: ...
@overload
def builtin(
    *, signatures: Sequence[Signature] = (), priority: int = 0
) -> Callable[[SpecFactory], SpecFactory]: ...
def builtin(
    fn: SpecFactory | None = None, /, *, signatures: Sequence[Signature] = (), priority: int = 0
) -> SpecFactory | Callable[[SpecFactory], SpecFactory]:
    """Register ``fn``'s spec under its ``id``.

    ``signatures``: any one of them matching a template source makes ``detect_dialect`` pick this
    builtin; among several matching builtins the highest ``priority`` wins (so a family that refines
    another's markers, e.g. Qwen3-Coder's ``<tool_call>`` + ``<parameter=``, outranks the plain
    one).
    """
    if fn is not None:
        return _register(fn, (), 0)

    def decorate(f: SpecFactory) -> SpecFactory:
        return _register(f, signatures, priority)

    return decorate


def builtin_dialects() -> list[str]:
    """Names of all builtin dialects, sorted."""
    return builtin_names()


def get_builtin(name: str) -> DialectSpec:
    """The builtin spec ``name`` (``DialectSpec.builtin``); the error lists the valid names."""
    return builtin_spec(name)


def builtin_signatures() -> list[tuple[str, tuple[Signature, ...]]]:
    """``(id, signatures)`` of every builtin that has any, highest priority first."""
    entries = sorted(_REGISTRY.items(), key=lambda kv: (-kv[1].priority, kv[1].order))
    return [(name, e.signatures) for name, e in entries if e.signatures]
