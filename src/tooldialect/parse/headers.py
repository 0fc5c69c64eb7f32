"""Harmony-like message headers read as tokens: ``to=NAME``, ``<|channel|>analysis``,
``<|constrain|>json``, `` json`` in any order, up to the body marker (``<|message|>``).

``read_header`` decides on a growing buffer: a ``Header`` once the body marker is reached,
``MAYBE`` while the text so far could still become one, ``NO`` as soon as it cannot (a plain
answer written without a header is known for one at its first word). ``route`` says what the
message is, from its header and the offered tools (see docs/parsing.md, "Message headers").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from ..dialect.spec import MessageHeaders

__all__ = ["CUT", "MAX_HEADER", "MAYBE", "NO", "Header", "Route", "read_header", "route"]

MAX_HEADER = 256
"""A header longer than this is not one (the text is content)."""
NO, MAYBE, CUT = -1, -2, -3
"""``read_header`` verdicts: not a header; undecided; the text ended inside a header."""

_WORD = re.compile(r"[\w.\-:/@]+")
"""A recipient, channel or constraint word (``functions.get_weather``, ``container.exec``)."""
_TAG = re.compile(r"<\|[^<>|\s]{1,48}\|>")
"""Another special token in a header (``<|constrain|>``): it and the word after it are read
and ignored."""
_MAYBE_TAG = re.compile(r"<(?:\|[^<>|\s]{0,48}\|?)?\Z")


@dataclass(frozen=True)
class Header:
    """A complete header: its recipient and channel words (``""`` when absent), and where the
    body starts."""

    recipient: str
    channel: str
    end: int


def _word(text: str, i: int, final: bool) -> tuple[int, str] | int:
    """The word at ``i``: ``(end, word)``, ``MAYBE`` while it may still grow, else ``NO``."""
    w = _WORD.match(text, i)
    if w is None:
        return NO if i < len(text) or final else MAYBE
    if w.end() >= len(text) and not final:
        return MAYBE
    return w.end(), w.group()


def _prefixed(
    text: str, i: int, m: MessageHeaders, final: bool
) -> tuple[str, int, str] | int | None:
    """A recipient or channel token at ``i``: ``(slot, end, word)``; ``MAYBE``/``NO``; ``None``
    when neither prefix is there."""
    rest = text[i : i + MAX_HEADER]
    for slot, prefix in (("recipient", m.recipient.strip()), ("channel", m.channel.strip())):
        if not prefix:
            continue
        if rest.startswith(prefix):
            got = _word(text, i + len(prefix), final)
            return got if isinstance(got, int) else (slot, *got)
        if len(rest) < len(prefix) and prefix.startswith(rest):
            return NO if final else MAYBE
    return None


def _other_token(text: str, i: int, tokens: int, stops: Collection[str], final: bool) -> int | None:
    """End of a token that is neither recipient nor channel: a special token (and its word), or
    a bare word once a token was read; ``MAYBE``/``NO``; ``None`` when none is there."""
    t = _TAG.match(text, i)
    if t is not None:
        if t.group() in stops:
            return NO  # an end or start marker: this is no header
        w = _WORD.match(text, t.end())
        if w is not None and w.end() >= len(text) and not final:
            return MAYBE
        return w.end() if w is not None else t.end()
    if not final and _MAYBE_TAG.match(text, i):
        return MAYBE
    if tokens:
        got = _word(text, i, final)
        return got if isinstance(got, int) else got[0]
    return None


def read_header(
    text: str,
    p: int,
    m: MessageHeaders,
    *,
    final: bool,
    stops: Collection[str] = (),
    marked: bool = False,
) -> Header | int:
    """The header at ``p`` (after the message's start marker), ``MAYBE`` or ``NO``.

    It is a run of tokens, whitespace between them optional, ended by ``m.body_open``; the first
    token is a recipient, a channel or a special token (a bare word alone is prose). ``stops``:
    special tokens that end messages, never part of a header. ``CUT``: the text ended after
    header tokens, before the body marker. A special token the family does not write in headers
    (``<|im_end|>`` before ``w1 to=x``) counts only in a header that is ``marked`` (read after the
    start marker) or holds the channel token: otherwise the words after it would be dropped."""
    body = m.body_open.strip()
    if not body:
        return NO  # no body marker, no header (an empty one would match everywhere)
    slots = {"recipient": "", "channel": ""}
    tokens, i, n = 0, p, len(text)
    foreign = False
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i - p > MAX_HEADER:
            return NO
        if i >= n:
            return (CUT if tokens else NO) if final else MAYBE
        if text.startswith(body, i):
            if foreign and not (marked or slots["channel"]):
                return NO
            return Header(slots["recipient"], slots["channel"], i + len(body))
        if n - i < len(body) and body.startswith(text[i:]) and not final:
            return MAYBE
        got = _prefixed(text, i, m, final)
        if isinstance(got, tuple):
            slot, i, word = got
            if slot == "recipient" and slots[slot] and word != slots[slot]:
                return NO  # two recipients: no header routes both (its words stay text)
            slots[slot] = slots[slot] or word  # the first recipient/channel written counts
            tokens += 1
            continue
        if got is None:
            got = _other_token(text, i, tokens, stops, final)
            if got is not None and got >= 0:
                foreign = foreign or text.startswith("<", i)
                i, tokens = got, tokens + 1
                continue
        return NO if got is None else got


Route = tuple[Literal["reasoning", "content", "call", "calls", "builtin"], str]
"""What a message is and, for a call, the tool's name."""


def route(header: Header, m: MessageHeaders, names: Collection[str]) -> Route:
    """What the message ``header`` opens is, given the offered tool ``names`` (empty: unknown).

    A recipient with a ``call_prefixes`` namespace (``functions.NAME``) or naming an offered tool
    is a call; ``call_recipients``
    (``to=tools``) hold calls in their body; a reasoning name (as recipient or channel) is
    reasoning; an answer name, or no recipient, is the answer. Any other recipient is a tool the
    model has built in and was not offered (``python``, ``container.exec``): its message is the
    model's own tool use, reasoning (``builtin``), unless no tools are known and the family
    writes no namespace prefix (then its bare tool names are all a parser can go by)."""
    rec = header.recipient
    if rec:
        for prefix in m.call_prefixes:
            if prefix and rec.startswith(prefix) and len(rec) > len(prefix):
                return "call", rec[len(prefix) :]
        if rec in names:
            return "call", rec
        if rec in m.call_recipients:
            return "calls", ""
        if rec in m.reasoning_names:
            return "reasoning", ""
        if rec not in m.answer_names:
            if not names and not m.call_prefixes:
                return "call", rec
            return "builtin", rec
    if header.channel in m.reasoning_names:
        return "reasoning", ""
    return "content", ""
