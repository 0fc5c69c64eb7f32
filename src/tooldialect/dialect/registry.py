"""The registry builtin dialects register into: signatures, priorities, lookup by name.

Families (``dialect/families/``) import this module to register their specs; ``builtins.py``
imports the families. Nothing here imports a family, so there is no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import overload

from ..errors import DialectError
from .spec import DialectSpec

__all__ = [
    "Signature",
    "SpecFactory",
    "builtin",
    "builtin_dialects",
    "builtin_signatures",
    "get_builtin",
]

SpecFactory = Callable[[], DialectSpec]


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
    factory: SpecFactory
    signatures: tuple[Signature, ...] = field(default=())
    priority: int = 0
    order: int = 0


_REGISTRY: dict[str, _Entry] = {}
_CACHE: dict[str, DialectSpec] = {}


def _register(fn: SpecFactory, signatures: Sequence[Signature], priority: int) -> SpecFactory:
    spec = fn()
    if spec.id in _REGISTRY:
        raise DialectError(f"duplicate builtin dialect id {spec.id!r}")
    if spec.origin not in ("builtin", "polyfill"):
        raise DialectError(
            f"builtin {spec.id!r} must have origin 'builtin' or 'polyfill', got {spec.origin!r}"
        )
    _REGISTRY[spec.id] = _Entry(fn, tuple(signatures), priority, len(_REGISTRY))
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
    return sorted(_REGISTRY)


def get_builtin(name: str) -> DialectSpec:
    """The builtin spec ``name``; the error lists the valid names."""
    if name not in _REGISTRY:
        raise DialectError(
            f"unknown dialect {name!r}; builtin dialects are: {', '.join(builtin_dialects())}"
        )
    if name not in _CACHE:
        _CACHE[name] = _REGISTRY[name].factory()
    return _CACHE[name]


def builtin_signatures() -> list[tuple[str, tuple[Signature, ...]]]:
    """``(id, signatures)`` of every builtin that has any, highest priority first."""
    entries = sorted(_REGISTRY.items(), key=lambda kv: (-kv[1].priority, kv[1].order))
    return [(name, e.signatures) for name, e in entries if e.signatures]
