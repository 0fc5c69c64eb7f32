"""What dialect detection and derivation need from the stages above them, as small Protocols.

Checking that a spec reads a template's own call needs the parser (``parse/``) and the prompt
stage's prefill rule, which both sit above ``dialect/`` in the pipeline. ``dialect/`` only defines
the shapes of those checks here, and detection and derivation take them as arguments
(``check=``, ``reader=``); ``tooldialect.verify`` implements them (``check_own_call``,
``read_calls``) and its ``detect_dialect``/``explain_detection``/``derive_dialect`` pass them.
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
