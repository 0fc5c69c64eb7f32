"""What call readers yield: events as a call becomes certain, and the status they return (see
``calls``)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from .jsonscan import JsonScanner

__all__ = [
    "BROKEN",
    "FAIL",
    "OK",
    "Args",
    "Begin",
    "End",
    "Event",
    "Reader",
    "Text",
    "Wait",
    "certain",
]

OK, FAIL, BROKEN = 0, 1, 2


@dataclass(frozen=True)
class Begin:
    """A call is certain."""

    name: str
    id: str | None
    index: str | None


@dataclass(frozen=True)
class Args:
    """An argument fragment."""

    text: str


@dataclass(frozen=True)
class End:
    """The current call is finished."""

    cut: bool = False
    """Truncation cut its arguments: they are the partial text, not JSON (see the module doc)."""
    void: bool = False
    """The call announced is no call (its JSON arguments broke before the end of the text):
    it is dropped, and its reader fails (``Context.retract``)."""


@dataclass(frozen=True)
class Text:
    """Text inside an emission that is no call (a broken entry in a list of calls): content."""

    text: str


Event = Begin | Args | End | Text
Wait = JsonScanner | None
"""What a reader yields while it needs more text: ``None``, or the scanner of streaming JSON
arguments. The caller may then drive that scanner over new text itself (``advance`` on the grown
buffer, ``take_safe`` for fragments, which are ``Args``) while it answers NEED; the reader, resumed,
carries on from the scanner's state."""
Reader = Generator[Event | Wait, None, tuple[int, int]]


def certain(name: str, cid: str | None, index: str | None, args_json: str) -> Generator[Event]:
    yield Begin(name, cid, index)
    yield Args(args_json)
    yield End()
