"""``DialectSpec``: a model family's tool-call wire format, as data.

This is the one place a dialect is described. Detection and derivation produce a spec; the grammar
builder, the parsers, the prompt polyfill and :meth:`DialectSpec.render_call` only *read* it.
Nothing about a dialect is written twice, so whatever the grammar permits, the parser reads back.

Anatomy of what a model writes (every piece optional except the body)::

    [reasoning.open ... reasoning.close]  free content
    section_open
        call_open  <body of call 0>  call_close
        separator
        call_open  <body of call 1>  call_close
    section_close

Bodies come in four shapes (``body.kind``: ``json``, ``tagged``, ``element``, ``python``), each a
class in ``bodies.py`` that says what it writes; a ``python`` body's values are spelled by a value
codec (``value_codecs/``).

Templates inside markers use ``{name}``, ``{id}``, ``{index}`` (and ``{key}``, ``{value}``,
``{is_string}`` in element templates). Literal braces are doubled as in ``str.format``.
Leading/trailing whitespace written by ``render_call`` is tolerated (optional) by parsers.

Specs serialise with ``model_dump_json()``; unknown fields are ignored on load and new fields always
have defaults, so specs written by older or newer versions still load.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from ..errors import DialectError
from .bodies import Body, ElementBody, JsonBody, PythonBody, TaggedBody, render_body
from .templates import SpecModel, format_template, literal_prefix
from .value_codecs import TOKEN_QUOTE, encode_python_value

__all__ = [
    "TOKEN_QUOTE",
    "Body",
    "CallFormat",
    "DialectSpec",
    "ElementBody",
    "JsonBody",
    "MessageHeaders",
    "Origin",
    "Polyfill",
    "PythonBody",
    "ReasoningMarkers",
    "SpecFactory",
    "TaggedBody",
    "Trigger",
    "add_builtin",
    "builtin_names",
    "builtin_spec",
    "encode_python_value",
    "format_template",
    "new_call_id",
]

Origin = Literal["builtin", "derived", "polyfill", "user"]
"""How a spec was obtained."""

IdFormat = Literal["openai", "alnum9", "numeric"]
"""How fresh tool-call ids are generated when the model writes none."""


class Trigger(SpecModel):
    """What makes a lazy grammar start constraining."""

    kind: Literal["word", "pattern", "pattern_full"] = "word"
    """``word``: literal text (matched as a token when it is one); ``pattern``: an ECMAScript regex
    searched in the output, the grammar starting at its first capture group; ``pattern_full``: a
    regex that must match the whole output so far."""
    value: str
    """The literal text or the regex. In a regex, ``{name}`` stands for the tools' names (an
    alternation built with the grammar): use it wherever the match reaches into the name, since
    llama.cpp replays the matched text into the grammar and aborts if the grammar rejects it."""


class CallFormat(SpecModel):
    """One layout in which calls are written: envelope markers around a body."""

    body: Body = Field(default_factory=JsonBody)
    """How one call is encoded."""
    section_open: str = ""
    """Written once before all calls (``[TOOL_CALLS]``, ``functools[``,
    ``<|tool_calls_section_begin|>``)."""
    section_close: str = ""
    """Written once after all calls."""
    call_open: str = ""
    """Written before each call (``<tool_call>\\n``)."""
    call_close: str = ""
    """Written after each call (``\\n</tool_call>``)."""
    separator: str = ""
    """Written between two calls (``\\n``, ``, ``, ``; ``)."""
    triggers: list[Trigger] = Field(default_factory=list)
    """Lazy-grammar triggers; empty means the first literal of the envelope, as a word."""
    at_start_only: bool = False
    """Calls in this layout are only recognised at the start of the reply (markerless formats)."""
    parse_only: bool = False
    """A variant the parser reads but grammars never write nor trigger on (it has no triggers):
    keeps lazy grammars to the layouts a trigger can safely start, while the parser stays
    lenient (Mistral's ``[TOOL_CALLS]name{json}`` without ``[ARGS]``, harmony header orders)."""
    optional_markers: list[str] = Field(default_factory=list)
    """Marker text the model may leave out where this layout writes it: inside ``call_open``
    (when it is not the opener the scan looks for), a closer (``section_close``, ``call_close``, a
    body's ``tail``/``args_close``/``call_close``) or a literal of a body template (Llama 4's
    ``<|python_end|>``, Kimi's ``functions.`` id prefix, DeepSeek's ``<｜tool▁call▁begin｜>``).
    The parser reads the layout with or without it; grammars and ``render_call`` write it."""
    alt_separators: list[str] = Field(default_factory=list)
    """Other separators the parser accepts between two calls (never written); ``""`` allows calls
    written back to back (with optional whitespace)."""
    index_base: int = 0
    """What ``{index}`` in this layout's body templates counts from: 1 where the template numbers
    the first call ``index="1"``. Call ids (``DialectSpec.id_template``) count from 0."""
    offered_names_only: bool = False
    """Calls in this layout count only when they name an offered tool (when the parser knows the
    tools): for weak markers that also occur in prose or markup (``<response>``, ``<json>``)."""

    def opener(self) -> str:
        """The literal text every emission in this layout starts with ('' if none)."""
        if self.section_open:
            return self.section_open
        if self.call_open:
            return self.call_open
        return literal_prefix(self.body.head_template())

    def effective_triggers(self) -> list[Trigger]:
        """``triggers`` if given, else the opener as a word trigger (none for bare layouts and
        ``parse_only`` variants)."""
        if self.parse_only:
            return []
        if self.triggers:
            return list(self.triggers)
        opener = self.opener().strip()
        return [Trigger(kind="word", value=opener)] if opener else []


class ReasoningMarkers(SpecModel):
    """Markers around reasoning text, which becomes ``reasoning_content``."""

    open: str = "<think>"
    """Opening marker, e.g. ``<think>``, ``<seed:think>``, ``[THINK]``."""
    close: str = "</think>"
    """Closing marker."""
    answer_open: str = ""
    """What the reply writes between the close and the answer when it writes anything (harmony's
    final-channel header); structured-output grammars put it before the constrained answer."""
    alt_open: list[str] = Field(default_factory=list)
    """Other text that opens a reasoning block (read, never written): Apriel's generation prompt
    opens reasoning with the phrase ``Here are my reasoning steps:``. Opens and closes are not
    paired: any close ends a block opened by any open."""
    alt_close: list[str] = Field(default_factory=list)
    """Other text that closes a reasoning block (Apriel's ``[BEGIN FINAL RESPONSE]``)."""
    calls_end_unclosed: bool = True
    """A call opener inside a reasoning block that is never closed ends the block, when a
    complete call follows it (models skip ``</think>`` before a special-token tool section). A
    call inside a block that is closed later stays reasoning text."""

    def opens(self) -> list[str]:
        """Every marker that opens a block: ``open`` first, then ``alt_open``."""
        return [self.open, *self.alt_open]

    def closes(self) -> list[str]:
        """Every marker that closes a block: ``close`` first, then ``alt_close``."""
        return [self.close, *self.alt_close]


class MessageHeaders(SpecModel):
    """Harmony-like replies: a reply is a run of *messages*, each a header then a body, and the
    header's tokens say what the body is. ``<|start|>assistant to=NAME<|message|>{json}<|call|>``
    is a call of ``NAME``; ``<|start|>assistant<|channel|>analysis<|message|>...<|end|>`` is
    reasoning; ``to=user`` or ``<|channel|>final`` an answer.

    A header is read as tokens, in any order: the ``recipient`` prefix and a word (``to=NAME``),
    the ``channel`` prefix and a word, any other special token and a word (a constraint such as
    ``<|constrain|>json``) or a bare word after them (`` json``), up to ``body_open``. The body
    runs to one of ``ends``, to the next ``start`` or to the end of the text (see
    ``parse/header_messages.py`` and docs/parsing.md for how each message is routed)."""

    start: str = Field(min_length=1)
    """What opens an assistant message (``<|start|>assistant``): the generation prompt ends with
    it, so the reply's first message starts without it."""
    body_open: str = Field(min_length=1)
    """The marker between a header and its body (``<|message|>``)."""
    ends: list[str] = Field(default_factory=list)
    """End-of-message markers (``<|end|>``, ``<|call|>``, ``<|return|>``, ``<|eom|>``): they end
    a body and never reach content."""
    reasoning_ends: list[str] = Field(default_factory=list)
    """The end markers a reasoning message is written with (empty: any of ``ends``): another end
    marker inside reasoning (a call quoted in it, ``<|call|>``) is reasoning text, unless no
    reasoning end follows."""
    recipient: str = " to="
    """Prefix of the recipient token (`` to=``, ``>>``, ``@``)."""
    channel: str = ""
    """Prefix of the channel token (``<|channel|>``), empty if the family has none."""
    reasoning_names: list[str] = Field(default_factory=lambda: ["analysis"])
    """Recipient or channel words that make a message reasoning."""
    answer_names: list[str] = Field(default_factory=lambda: ["final", "user", "assistant"])
    """Recipient words that make a message the answer (a message with no recipient is one too,
    unless its channel is a reasoning name)."""
    call_prefixes: list[str] = Field(default_factory=list)
    """Namespace prefixes of a recipient that names a tool (``functions.``): a prefixed
    recipient is a call of the name after it."""
    call_recipients: list[str] = Field(default_factory=list)
    """Recipients whose body holds the calls themselves, written in the spec's ``formats``
    (``to=tools`` then ``<invoke name="f">...``)."""


class Polyfill(SpecModel):
    """How tools are carried through a template that has no tool support.

    The guide goes into the system prompt, assistant calls are written into the assistant content
    with ``render_call``, and tool results become ``result_role`` turns.
    """

    guide: str = (
        "You can call these tools. Tool signatures, as JSON Schema:\n{tools}\n\n"
        "To call a tool, reply with exactly this and nothing after it:\n{example}\n"
        "Call a tool only when it is needed; otherwise answer normally."
    )
    """System-prompt text; ``{tools}`` gets the JSON tool list and ``{example}`` a rendered call."""
    result_role: Literal["user", "tool", "system"] = "user"
    """Role of the turn that carries tool results."""
    result_template: str = "<tool_response>\n{content}\n</tool_response>"
    """Wraps one tool result; may use ``{content}``, ``{name}``, ``{id}``."""
    result_separator: str = "\n"
    """Between results merged into one turn."""


class DialectSpec(SpecModel):
    """A model family's tool-call dialect, as data. See the module docstring for the anatomy."""

    id: str
    """Registry name, e.g. ``hermes``."""
    family: str = ""
    """Human-readable family name."""
    origin: Origin = "user"
    """How the spec was obtained: ``builtin``, ``derived``, ``polyfill`` or ``user``."""
    description: str = ""
    """One line on where the format comes from."""
    formats: list[CallFormat] = Field(min_length=1)
    """Layouts the parser accepts; the first is canonical (``render_call`` writes it, forced
    grammars use it); later ones are tolerated variants (e.g. a bare JSON call without tags)."""
    reasoning: ReasoningMarkers | None = None
    """Reasoning markers, if the family reasons in-band."""
    strip: list[str] = Field(default_factory=list)
    """Marker text removed from content (channel headers, end-of-turn markers)."""
    stop: list[str] = Field(default_factory=list)
    """Extra stop strings that end a turn (``<|eom_id|>``, ``<|call|>``)."""
    id_template: str | None = None
    """Template of a native call id (Kimi ``functions.{name}:{index}``); parsed calls get it."""
    id_format: IdFormat = "openai"
    """Format of generated ids when the model writes none."""
    polyfill: Polyfill | None = None
    """Set when the template has no tool support and tools are carried as text."""
    parallel_calls: bool = True
    """Whether one reply may hold several calls. False where the template renders only the first
    call of a turn (GigaChat 3) or the model stops after one call (gpt-oss ends at ``<|call|>``);
    grammars then allow one call and parsers read one."""
    messages: MessageHeaders | None = None
    """Set for a family whose replies are header-addressed messages (harmony): the parser reads
    the reply message by message (``parse/header_messages.py``); ``formats`` still say how a call
    is written (grammars, ``render_call``)."""
    forcible: bool = True
    """Whether ``tool_choice="required"``/named can be enforced by a grammar."""
    unforcible_reason: str = ""
    """Why not, when ``forcible`` is false."""

    @property
    def primary(self) -> CallFormat:
        """The canonical layout."""
        return self.formats[0]

    @classmethod
    def builtin(cls, name: str) -> DialectSpec:
        """The builtin dialect called ``name``; raises ``DialectError`` listing the valid names."""
        return builtin_spec(name)

    def new_id(self, *, name: str = "", index: int = 0) -> str:
        """A fresh call id in this dialect's style."""
        if self.id_template:
            return format_template(self.id_template, name=name, index=index, id="")
        return new_call_id(self.id_format, index=index)

    def render_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        call_id: str | None = None,
        index: int = 0,
    ) -> str:
        """One call exactly as the model writes it, section markers included."""
        return self.render_calls([(name, arguments, call_id)], start_index=index)

    def render_calls(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | str, str | None]],
        *,
        start_index: int = 0,
    ) -> str:
        """Several ``(name, arguments, id)`` calls as one emission in the canonical layout."""
        fmt = self.primary
        parts = []
        for i, (name, arguments, call_id) in enumerate(calls):
            args = _as_mapping(arguments)
            index = start_index + i
            cid = call_id if call_id is not None else self.new_id(name=name, index=index)
            parts.append(
                fmt.call_open
                + render_body(fmt.body, name, args, cid, index + fmt.index_base)
                + fmt.call_close
            )
        return fmt.section_open + fmt.separator.join(parts) + fmt.section_close


SpecFactory = Callable[[], DialectSpec]

# The builtin catalogue, name -> factory. It sits here, under ``DialectSpec.builtin``, rather than
# with the families, which build DialectSpecs and so import this module. The families add to it
# through ``dialect.registry.builtin`` when ``tooldialect.dialect``'s ``__init__`` loads them, and
# Python runs that ``__init__`` before any module of the package, so the catalogue is full before
# anyone can look a name up.
_FACTORIES: dict[str, SpecFactory] = {}
_BUILT: dict[str, DialectSpec] = {}


def add_builtin(factory: SpecFactory) -> DialectSpec:
    """Adds ``factory``'s spec to the catalogue under its ``id`` and returns it
    (``dialect.registry.builtin`` calls this); a duplicate id or an origin other than ``builtin``
    or ``polyfill`` raises ``DialectError``."""
    spec = factory()
    if spec.id in _FACTORIES:
        raise DialectError(f"duplicate builtin dialect id {spec.id!r}")
    if spec.origin not in ("builtin", "polyfill"):
        raise DialectError(
            f"builtin {spec.id!r} must have origin 'builtin' or 'polyfill', got {spec.origin!r}"
        )
    _FACTORIES[spec.id] = factory
    return spec


def builtin_names() -> list[str]:
    """Names of all builtin dialects, sorted."""
    return sorted(_FACTORIES)


def builtin_spec(name: str) -> DialectSpec:
    """The builtin spec ``name``, built on first use; the error lists the valid names."""
    if name not in _FACTORIES:
        raise DialectError(
            f"unknown dialect {name!r}; builtin dialects are: {', '.join(builtin_names())}"
        )
    if name not in _BUILT:
        _BUILT[name] = _FACTORIES[name]()
    return _BUILT[name]


def _as_mapping(arguments: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise DialectError(f"arguments are not valid JSON: {arguments!r} ({exc})") from None
        arguments = decoded
    if not isinstance(arguments, Mapping):
        raise DialectError(f"arguments must be a JSON object, got {arguments!r}")
    return arguments


_ALNUM = string.ascii_letters + string.digits


def new_call_id(id_format: IdFormat = "openai", *, index: int = 0) -> str:
    """A fresh tool-call id: ``call_`` + 24 characters, Mistral's 9 characters, or the index."""
    if id_format == "alnum9":
        return _random_alnum(9)
    if id_format == "numeric":
        return str(index)
    return "call_" + _random_alnum(24)


def _random_alnum(n: int) -> str:
    # One urandom read instead of n secrets.choice calls (ids are minted on the streaming hot
    # path); the modulo bias of 256 % 62 is irrelevant for ids.
    return "".join([_ALNUM[b % 62] for b in secrets.token_bytes(n)])
