"""What a call reader works from: a ``CallFormat`` compiled once per spec (``FormatPlan``, its
body's part planned by the body kind, ``BodyPlan``) and the request's ``Context``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialect.spec import CallFormat, DialectSpec
from .markers import Segment, without_markers

__all__ = ["BodyPlan", "Context", "FormatPlan"]


@dataclass(frozen=True)
class BodyPlan:
    """The part of a ``FormatPlan`` a body kind fills (``body_kinds``); see ``FormatPlan``."""

    head: tuple[Segment, ...] = ()
    param: tuple[Segment, ...] = ()
    tail: str = ""
    args_open: str = ""
    args_close: str = ""
    param_pre: tuple[Segment, ...] = ()
    param_post: tuple[Segment, ...] = ()
    value_ends: tuple[str, ...] = ()
    json_head: re.Pattern[str] | None = None
    json_head_prefix: re.Pattern[str] | None = None
    raw_args_key: str = ""
    key_unescape: Callable[[str], str] | None = None
    json_object: bool = False


@dataclass(frozen=True)
class FormatPlan:
    """One ``CallFormat`` with its templates compiled and markers stripped, built once per spec."""

    fmt: CallFormat
    section_open: str
    section_close: str
    call_open: str
    call_close: str
    separator: str
    head: tuple[Segment, ...]
    param: tuple[Segment, ...]
    tail: str
    args_open: str
    args_close: str
    json_head: re.Pattern[str] | None = None
    """JSON bodies: ``{"name": "...", "arguments": `` up to the ``{`` of the arguments, in one match
    (the common case of ``_json_body``, which reads it token by token otherwise)."""
    json_head_prefix: re.Pattern[str] | None = None
    """Full-matches every text that may still grow into a ``json_head`` match."""
    alts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Envelope cores (``call_open``, ``section_close``, ``call_close``, ``tail``,
    ``args_close``) to their variants without ``CallFormat.optional_markers``."""
    alt_separators: tuple[str, ...] = ()
    """Stripped ``CallFormat.alt_separators``."""
    param_pre: tuple[Segment, ...] = ()
    """Element bodies: the param template up to its ``{value}`` (empty when it has none)."""
    param_post: tuple[Segment, ...] = ()
    """Element bodies: the param template after its ``{value}``, its closer first."""
    value_ends: tuple[str, ...] = ()
    """Element bodies: literals that may end a value: its own closer (first), else, the closer
    being missing, the next parameter, the body's tail, the call or section closer, or the
    opener of a next call."""
    known_names_only: bool = False
    """A markerless layout of a markerless dialect: a call counts only when it names an offered
    tool (when tools are known)."""
    json_object: bool = False
    """A call's body is one JSON object (so a list of calls is a list of objects)."""
    raw_args_key: str = ""
    """Where the text after the head is not JSON, the argument its raw text is the value of
    (``TaggedBody.raw_args_key``; empty: none)."""
    key_unescape: Callable[[str], str] | None = None
    """How keys written in a template decode (element bodies' ``xml_escape``); None: as written."""
    closers: tuple[str, ...] = ()
    """Closers that may follow a call's arguments (``args_close``, ``tail``, ``call_close``,
    ``section_close``): JSON arguments that break right before one only miss their braces."""

    @classmethod
    def assemble(
        cls, fmt: CallFormat, body: BodyPlan, *, known_names_only: bool = False
    ) -> FormatPlan:
        """The plan of ``fmt`` whose body kind planned ``body`` (``body_kinds.plan_format``)."""
        optional = fmt.optional_markers
        tail, args_close = body.tail, body.args_close
        closers = (fmt.call_open, fmt.section_close, fmt.call_close, tail, args_close)
        alts = {c.strip(): without_markers(c.strip(), optional) for c in closers if c.strip()}
        return cls(
            fmt=fmt,
            alts={k: v for k, v in alts.items() if v},
            alt_separators=tuple(dict.fromkeys(s.strip() for s in fmt.alt_separators)),
            json_head=body.json_head,
            json_head_prefix=body.json_head_prefix,
            section_open=fmt.section_open.strip(),
            section_close=fmt.section_close.strip(),
            call_open=fmt.call_open.strip(),
            call_close=fmt.call_close.strip(),
            separator=fmt.separator.strip(),
            head=body.head,
            param=body.param,
            tail=tail,
            args_open=body.args_open,
            args_close=args_close,
            param_pre=body.param_pre,
            param_post=body.param_post,
            value_ends=body.value_ends,
            known_names_only=known_names_only,
            json_object=body.json_object,
            raw_args_key=body.raw_args_key,
            key_unescape=body.key_unescape,
            closers=tuple(
                dict.fromkeys(
                    c
                    for c in (args_close, tail, fmt.call_close.strip(), fmt.section_close.strip())
                    if c
                )
            ),
        )


@dataclass
class Context:
    """What call readers need besides the text."""

    spec: DialectSpec
    schemas: Mapping[str, dict[str, Any]]
    truncated: bool = False
    """The text was cut by the token limit (set when the stream closes)."""
    retract: bool = True
    """A call whose JSON arguments break before the end of the text is not a call (its
    announcement is held until it ends); off where arguments stream as they arrive
    (``StreamParser(stream_arguments=True)``): such a call is then kept, healed."""
    names: frozenset[str] = field(init=False, default=frozenset())
    """The offered tools' names."""

    def __post_init__(self) -> None:
        self.names = frozenset(self.schemas)
