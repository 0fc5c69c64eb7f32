"""Validation and normalisation of OpenAI ``tools`` and ``tool_choice``, done once at the entrance.

Everything downstream (grammar, parser, polyfill) receives ``list[ToolDef]`` and a ``ToolChoice``
and never re-inspects the raw request: what a choice means for the prompt, the grammar and the
parser is asked of the ``ToolChoice`` (``reads_calls``, ``shows_tools``, ``forced``,
``allows_several``, ``callable_tools``), never read off its mode elsewhere.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeAlias, TypeGuard, cast

from pydantic import BaseModel, ConfigDict, Field

from .errors import ToolSpecError, UnsupportedToolChoiceError

__all__ = [
    "ToolChoice",
    "ToolChoiceMode",
    "ToolDef",
    "ToolLike",
    "function_call_choice",
    "normalize_response_format",
    "normalize_tool_choice",
    "normalize_tools",
    "tools_key",
]

_NAME_PUNCT = frozenset("_-.: ")


def _valid_name(name: object) -> TypeGuard[str]:
    # letters and digits of any script, '_', '-', '.', ':' and inner spaces: real tool sets name
    # functions in Chinese or with spaces; quotes, brackets and '=' would break the markers
    return (
        isinstance(name, str)
        and bool(name)
        and name == name.strip()
        and all(c.isalnum() or c in _NAME_PUNCT for c in name)
    )


class ToolDef(BaseModel):
    """One function tool, validated."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Function name."""
    description: str = ""
    """What the tool does, shown to the model."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments object."""
    strict: bool = False
    """OpenAI's ``strict`` flag. Accepted and kept for round-tripping; the grammar enforces the
    schema as written whether or not it is set (docs/structured-output.md, "strict")."""

    @functools.cached_property
    def fingerprint(self) -> str:
        """The tool as canonical JSON (keys sorted): equal tools, equal text. Computed once."""
        return json.dumps(self.model_dump(), sort_keys=True, ensure_ascii=False, default=repr)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``{"type": "function", "function": {...}}`` form."""
        fn: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            fn["description"] = self.description
        if self.strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}


class SupportsOpenAI(Protocol):
    """An object that knows its OpenAI tool form, such as ``tooldialect.Tool``."""

    def to_openai(self) -> Mapping[str, Any]: ...


ToolLike: TypeAlias = Mapping[str, Any] | ToolDef | SupportsOpenAI
"""What every public entry point takes as a tool: an OpenAI dict (or a legacy bare function dict),
a ``ToolDef`` already validated, or an object with ``to_openai()``."""


ToolChoiceMode: TypeAlias = Literal["auto", "none", "required", "named"]
"""What a ``tool_choice`` asks: ``auto`` (the model decides), ``none`` (no call), ``required``
(a call, to any allowed tool), ``named`` (one call, to the one function named)."""


@dataclass(frozen=True)
class ToolChoice:
    """A normalised ``tool_choice``, and the one place its mode is read: the pipeline asks it
    what it needs (does the reply hold calls, does the prompt show the tools, may it hold
    several calls, which tools may a call name) instead of comparing modes itself."""

    mode: ToolChoiceMode
    """``named`` forces the single function ``name``."""
    name: str | None = None
    """The forced function for ``named``."""
    allowed: tuple[str, ...] | None = None
    """OpenAI's ``allowed_tools`` subset (with ``auto`` or ``required``): a call may only name
    these. The prompt still lists every tool, so it (and its cache) stays the same across
    requests that change the subset; only the grammar narrows. ``None``: every tool."""

    def __post_init__(self) -> None:
        if (self.mode == "named") != (self.name is not None):
            raise ToolSpecError(
                f"ToolChoice(mode={self.mode!r}, name={self.name!r}): a function name goes with "
                "mode 'named', and only with it"
            )
        if self.allowed is not None and not self.optional and self.mode != "required":
            raise ToolSpecError(
                f"ToolChoice(mode={self.mode!r}, allowed=...): a subset goes with 'auto' or "
                "'required'"
            )

    @property
    def reads_calls(self) -> bool:
        """Whether the reply may hold calls, read as calls: every mode but ``none``, under which
        a call the model writes anyway stays text (batch and stream alike)."""
        return self.mode != "none"

    @property
    def shows_tools(self) -> bool:
        """Whether the prompt shows the tools: where calls are read (``none`` hides them, so the
        model is not invited to call)."""
        return self.reads_calls

    @property
    def forced(self) -> bool:
        """True when a call must be made from the first token (``required``, ``named``)."""
        return self.mode in ("required", "named")

    @property
    def optional(self) -> bool:
        """True when calls are read but the model decides whether to make one (``auto``)."""
        return self.reads_calls and not self.forced

    @property
    def names(self) -> tuple[str, ...]:
        """The functions this choice names (the forced one, or the ``allowed_tools`` subset):
        whatever offers a subset of the tools must offer these."""
        if self.name is not None:
            return (self.name,)
        return self.allowed or ()

    def allows_several(self, asked: bool) -> bool:
        """Whether a reply may hold several calls, ``asked`` being the request's
        ``parallel_tool_calls`` (or the handler's default): a named choice means one call of
        that function (vLLM's named tool choice does the same)."""
        return asked and self.mode != "named"

    def callable_tools(self, tools: Sequence[ToolDef]) -> list[ToolDef]:
        """The tools a call may name under this choice (the prompt shows all of ``tools``)."""
        if not self.reads_calls:
            return []
        if self.mode == "named":
            return [t for t in tools if t.name == self.name]
        if self.allowed is None:
            return list(tools)
        return [t for t in tools if t.name in self.allowed]

    def requiring(self) -> ToolChoice:
        """This choice with a call required from the first token (the same tools allowed)."""
        return self if self.forced else replace(self, mode="required")

    def model_copy(self, *, update: Mapping[str, Any]) -> ToolChoice:
        """``dataclasses.replace`` under pydantic's name: ``ToolChoice`` was a pydantic model,
        and callers written for it (``frontend.steering``) still use this spelling."""
        return replace(self, **update)

    def to_openai(self) -> str | dict[str, Any]:
        """The Chat Completions form (``normalize_tool_choice`` reads it back to an equal
        choice): what a client of any OpenAI-shaped endpoint sends."""
        if self.mode == "named":
            return {"type": "function", "function": {"name": self.name}}
        if self.allowed is None:
            return self.mode
        listed = [{"type": "function", "function": {"name": n}} for n in self.allowed]
        return {"type": "allowed_tools", "allowed_tools": {"mode": self.mode, "tools": listed}}


def tools_key(tools: Sequence[ToolDef]) -> tuple[str, ...]:
    """A hashable key naming ``tools`` by content (for caches of what is built from them)."""
    return tuple(t.fingerprint for t in tools)


_RECENT_CAPACITY = 8
_recent: OrderedDict[tuple[str, ...], tuple[list[Any], list[ToolDef]]] = OrderedDict()
"""Tool names -> (a copy of the raw tools, their ToolDefs): agents send the same tools each turn."""


def normalize_tools(tools: Sequence[ToolLike] | None) -> list[ToolDef]:
    """Validate OpenAI-shaped ``tools`` (or legacy bare function dicts, or objects with a
    ``to_openai()`` method such as ``tooldialect.Tool``) into ``ToolDef`` s.

    The one normalisation: every public entry point that takes tools calls this, and everything
    below it takes ``list[ToolDef]``. ``ToolDef`` s pass through as they are (already valid).

    Tools equal to a recent call's give that call's ``ToolDef`` objects again, so what was built
    from them (template forms, grammars, their keys) is found without being rebuilt.
    """
    if tools is None:
        return []
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise ToolSpecError(f"tools must be a list of tool objects, got {tools!r}")
    names = _recent_names(tools)
    if names is None:
        return _validate_tools(tools)
    hit = _recent.get(names)
    # `==` is deep and in C; a copy (not the caller's objects) is what it compares with
    if hit is not None and hit[0] == list(tools):
        return list(hit[1])
    out = _validate_tools(tools)
    try:
        copy = json.loads(json.dumps(list(tools)))
    except (TypeError, ValueError):  # not JSON (a callable default, a NaN...): not cached
        return out
    _recent[names] = (copy, list(out))
    while len(_recent) > _RECENT_CAPACITY:
        _recent.pop(next(iter(_recent)), None)
    return out


def _recent_names(tools: Sequence[Any]) -> tuple[str, ...] | None:
    """Each tool's name, or ``None`` when the tools are not plain JSON dicts (never cached)."""
    names: list[str] = []
    for tool in tools:
        fn = tool.get("function", tool) if type(tool) is dict else None
        name = fn.get("name") if type(fn) is dict else None
        if not isinstance(name, str):
            return None
        names.append(name)
    return tuple(names)


def _validate_tools(tools: Sequence[Any]) -> list[ToolDef]:
    out: list[ToolDef] = []
    seen: set[str] = set()
    for i, item in enumerate(tools):
        tool = item if isinstance(item, ToolDef) else _tool_def(i, item)
        if tool.name in seen:
            raise ToolSpecError(f"tools[{i}]: duplicate function name {tool.name!r}")
        seen.add(tool.name)
        out.append(tool)
    return out


def _tool_def(i: int, item: object) -> ToolDef:
    """``tools[i]`` (a dict, or an object with ``to_openai()``) validated."""
    tool = item
    if not isinstance(item, Mapping) and callable(getattr(item, "to_openai", None)):
        tool = cast(SupportsOpenAI, item).to_openai()  # a tooldialect.Tool (or alike)
    if not isinstance(tool, Mapping):
        raise ToolSpecError(f"tools[{i}] must be an object, got {tool!r}")
    kind = tool.get("type", "function")
    if kind != "function":
        raise ToolSpecError(f"tools[{i}].type must be 'function', got {kind!r}")
    fn = tool.get("function", tool if "name" in tool else None)
    if not isinstance(fn, Mapping):
        raise ToolSpecError(f"tools[{i}] needs a 'function' object, got {tool!r}")
    name = fn.get("name")
    if not _valid_name(name):
        raise ToolSpecError(
            f"tools[{i}].function.name must be a non-empty string of letters, digits, "
            f"'_', '-', '.', ':' or inner spaces, got {name!r}"
        )
    params = fn.get("parameters")
    if params is None:
        params = {"type": "object", "properties": {}}
    if not isinstance(params, Mapping):
        raise ToolSpecError(
            f"tools[{i}].function.parameters must be a JSON Schema object, got {params!r}"
        )
    if params.get("type", "object") != "object":
        raise ToolSpecError(
            f"tools[{i}].function.parameters must describe an object, "
            f"got type {params.get('type')!r}"
        )
    desc = fn.get("description") or ""
    if not isinstance(desc, str):
        raise ToolSpecError(f"tools[{i}].function.description must be a string, got {desc!r}")
    return ToolDef(
        name=name, description=desc, parameters=dict(params), strict=bool(fn.get("strict"))
    )


_CHOICE_FORMS = (
    "'auto', 'none', 'required' (or 'any', the same), a tool's name, "
    "{'type': 'function', 'function': {'name': ...}}, or "
    "{'type': 'allowed_tools', 'allowed_tools': {'mode': 'auto' | 'required', "
    "'tools': [{'type': 'function', 'function': {'name': ...}}, ...]}}"
)

_MODE_WORDS: dict[str, ToolChoiceMode] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
    "any": "required",
}


def normalize_tool_choice(tool_choice: Any, tools: Sequence[ToolDef]) -> ToolChoice:
    """Normalise ``tool_choice`` against the tools. No tools means ``none``.

    The one reader of ``tool_choice``, in the Chat Completions forms the handler takes:
    ``"auto"``, ``"none"``, ``"required"``, ``"any"`` (LangChain's word for ``required``), a bare
    tool name (LangChain's ``bind_tools(tool_choice="name")``), ``{"type": "function",
    "function": {"name": ...}}`` and ``allowed_tools`` (its tools listed in that form, or by
    name); a ``ToolChoice`` is checked against the tools. Other APIs' forms are translated by
    their converters (``apps.responses``, ``apps.messages``), the legacy ``function_call`` by
    ``function_call_choice``. Unknown names raise ``ToolSpecError`` naming them.
    """
    if tool_choice is None:
        tool_choice = "auto"
    known = [t.name for t in tools]
    if isinstance(tool_choice, ToolChoice):
        missing = [n for n in tool_choice.names if n not in known]
        if missing:
            raise ToolSpecError(f"tool_choice names unknown functions {missing}; tools are {known}")
        return tool_choice if tools else _mode_choice(tool_choice.mode, tools)
    if isinstance(tool_choice, str):
        if tool_choice in _MODE_WORDS:
            return _mode_choice(_MODE_WORDS[tool_choice], tools)
        if tool_choice in known:
            return ToolChoice(mode="named", name=tool_choice)
        raise ToolSpecError(
            f"tool_choice {tool_choice!r} is neither a mode nor a tool's name (tools are "
            f"{known}); accepted forms: {_CHOICE_FORMS}"
        )
    if isinstance(tool_choice, Mapping):
        kind = tool_choice.get("type")
        if kind == "allowed_tools":
            return _allowed_choice(tool_choice, tools)
        fn = tool_choice.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if kind != "function" or not isinstance(name, str):
            raise ToolSpecError(
                f"tool_choice object {tool_choice!r} is not understood; accepted forms: "
                f"{_CHOICE_FORMS}"
            )
        if name not in known:
            raise ToolSpecError(f"tool_choice names unknown function {name!r}; tools are {known}")
        return ToolChoice(mode="named", name=name)
    raise ToolSpecError(
        f"tool_choice must be a string or an object, got {tool_choice!r}; accepted forms: "
        f"{_CHOICE_FORMS}"
    )


def function_call_choice(function_call: Any) -> Any:
    """The legacy ``function_call`` (``"auto"``, ``"none"``, ``{"name": ...}``) as a
    ``tool_choice`` ``normalize_tool_choice`` reads."""
    if isinstance(function_call, Mapping):
        return {"type": "function", "function": {"name": function_call.get("name")}}
    return function_call


def _mode_choice(mode: ToolChoiceMode, tools: Sequence[ToolDef]) -> ToolChoice:
    if mode == "required" and not tools:
        raise ToolSpecError("tool_choice='required' needs at least one tool in tools")
    if not tools:
        return ToolChoice(mode="none")
    return ToolChoice(mode=mode)


def _allowed_choice(tool_choice: Mapping[str, Any], tools: Sequence[ToolDef]) -> ToolChoice:
    """OpenAI's ``allowed_tools``: ``{"type": "allowed_tools", "allowed_tools": {"mode",
    "tools"}}``."""
    body = tool_choice.get("allowed_tools")
    mode = body.get("mode", "auto") if isinstance(body, Mapping) else None
    listed = body.get("tools") if isinstance(body, Mapping) else None
    if mode not in ("auto", "required") or not isinstance(listed, Sequence) or not listed:
        raise ToolSpecError(
            f"tool_choice {dict(tool_choice)!r} is not an allowed_tools choice: it needs "
            "{'type': 'allowed_tools', 'allowed_tools': {'mode': 'auto' | 'required', "
            "'tools': [{'type': 'function', 'function': {'name': ...}}, ...]}} with a non-empty "
            "tools list"
        )
    names: list[str] = []
    for i, entry in enumerate(listed):
        if isinstance(entry, Mapping) and entry.get("type", "function") != "function":
            raise UnsupportedToolChoiceError(
                f"tool_choice.allowed_tools.tools[{i}] is a {entry.get('type')!r} tool; only "
                "function tools can be allowed here"
            )
        fn = entry.get("function") if isinstance(entry, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else entry
        if not isinstance(name, str):
            raise ToolSpecError(
                f"tool_choice.allowed_tools.tools[{i}] names no function: {entry!r}; pass "
                "{'type': 'function', 'function': {'name': ...}} or the function's name"
            )
        names.append(name)
    known = [t.name for t in tools]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ToolSpecError(
            f"tool_choice allowed_tools names unknown functions {unknown}; tools are {known}"
        )
    allowed = tuple(dict.fromkeys(names))
    # the whole set allowed is the plain mode: the same grammar, the same cache entry
    return ToolChoice(mode=mode, allowed=None if set(allowed) == set(known) else allowed)


_FORMAT_FORMS = (
    "{'type': 'text'}, {'type': 'json_object'}, {'type': 'json_object', 'schema': {...}} "
    "(llama-cpp-python) or {'type': 'json_schema', 'json_schema': {'name': ..., 'schema': {...}}} "
    "(OpenAI)"
)


def normalize_response_format(response_format: Any) -> dict[str, Any] | None:
    """The JSON Schema a ``response_format`` asks the reply to follow; ``None`` for free text.

    ``{"type": "json_object"}`` without a schema means any JSON object.
    """
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise ToolSpecError(
            f"response_format must be an object, got {response_format!r}; accepted forms: "
            f"{_FORMAT_FORMS}"
        )
    kind = response_format.get("type")
    schema: Any
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
    elif kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping):
            raise ToolSpecError(
                f"response_format {response_format!r} lacks its 'json_schema' object; accepted "
                f"forms: {_FORMAT_FORMS}"
            )
        schema = spec.get("schema")
    else:
        raise ToolSpecError(
            f"response_format type {kind!r} is not understood; accepted forms: {_FORMAT_FORMS}"
        )
    if schema is None:
        return {"type": "object"}
    if isinstance(schema, bool):
        return {} if schema else {"not": {}}
    if not isinstance(schema, Mapping):
        raise ToolSpecError(f"response_format schema must be a JSON Schema object, got {schema!r}")
    return dict(schema)
