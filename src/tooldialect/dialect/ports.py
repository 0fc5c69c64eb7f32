"""What dialect detection and derivation need from the stages above them, as small Protocols.

Checking that a spec reads a template's own call needs the parser (``parse/``) and the prompt
stage's prefill rule, which both sit above ``dialect/`` in the pipeline. ``dialect/`` only defines
the shapes of those checks here; ``tooldialect.verify`` implements them and installs them
(importing ``tooldialect`` does), and callers may pass their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .spec import DialectSpec

__all__ = [
    "Agreement",
    "CallReader",
    "OwnCallCheck",
    "Reading",
    "install",
    "installed_check",
    "installed_reader",
]


@dataclass(frozen=True)
class Reading:
    """What a spec's parser read from a text: calls as ``(name, arguments)``, the rest."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    content: str = ""
    reasoning: str = ""


class CallReader(Protocol):
    """Parses ``text`` with ``spec`` (``None`` when the parser raised)."""

    def __call__(
        self,
        text: str,
        spec: DialectSpec,
        *,
        tools: Sequence[Mapping[str, Any]],
        prefill: str = "",
    ) -> Reading | None: ...


@dataclass(frozen=True)
class Agreement:
    """Whether a spec reads the template's own rendering of a past call exactly.

    ``ok`` is ``None`` when the template renders no call to check against (no tool support, or
    calls kept in content); ``reason`` says why a check failed."""

    ok: bool | None
    reason: str = ""


class OwnCallCheck(Protocol):
    """Renders a past call through ``template_source`` and reads it back with ``spec``."""

    def __call__(
        self,
        spec: DialectSpec,
        template_source: str,
        *,
        bos_token: str = "",
        eos_token: str = "",
    ) -> Agreement: ...


_INSTALLED: dict[str, Any] = {}


def install(*, reader: CallReader, check: OwnCallCheck) -> None:
    """Make ``reader`` and ``check`` the defaults of detection and derivation."""
    _INSTALLED["reader"] = reader
    _INSTALLED["check"] = check


def installed_reader() -> CallReader | None:
    """The default reader (``tooldialect.verify`` installs one), or ``None``."""
    reader: CallReader | None = _INSTALLED.get("reader")
    return reader


def installed_check() -> OwnCallCheck | None:
    """The default own-call check, or ``None``."""
    check: OwnCallCheck | None = _INSTALLED.get("check")
    return check
