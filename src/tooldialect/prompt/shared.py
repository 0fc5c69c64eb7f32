"""Template data made once and shared by every render, so a request with many tools is cheap.

A render must not let a template change what the caller, or a later render, sees; the simple
way is a deep copy of everything per render (:func:`plain_data`). With 250 MCP tools that copy,
and the ``tojson`` of each tool the template prints, cost tens of milliseconds per request. So a
tool's template form (``{"type": "function", "function": {...}}`` in OpenAI's key order) is
built once per ``ToolDef`` (:func:`tool_form`) and every container in it is registered here.
The sandbox refuses a mutating method called on a registered container (:class:`SharedMutation`,
which makes the template render again on copies), and ``tojson`` of a registered value is
computed once (:func:`shared_json`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..tool_defs import ToolDef

__all__ = ["SharedMutation", "is_shared", "plain_data", "shared_json", "tool_form", "tool_forms"]

_CAPACITY = 4096
"""Tool forms kept (a few agents' worth of MCP tool sets); the oldest go first."""

_forms: OrderedDict[int, tuple[ToolDef, dict[str, Any], list[int]]] = OrderedDict()
"""id(ToolDef) -> (the ToolDef, kept alive so the id stays its own; its form; container ids)."""
_shared_ids: dict[int, int] = {}
"""id of a registered container -> how many forms hold it."""
DEFAULT_JSON_OPTIONS = (False, None, None, False)
"""``tojson``'s defaults as :func:`shared_json` gets them: ensure_ascii, indent, separators,
sort_keys."""
_json: dict[tuple[Any, ...], str] = {}
"""(id of a registered value, tojson options) -> its JSON text."""


_MISSING: tuple[None, None, None] = (None, None, None)


class SharedMutation(Exception):
    """A template called a mutating method on shared data; the render is redone on copies."""


def plain_data(value: Any) -> Any:
    """A deep copy built only of JSON-like types (as transformers' ``_plain_template_data``).

    Objects with methods the sandbox cannot vet become an inert ``"<TypeName>"`` placeholder.
    """
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain_data(key): plain_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain_data(item) for item in value)
    if isinstance(value, ToolDef):
        return plain_data(value.to_openai())
    if isinstance(value, BaseModel):
        return plain_data(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return f"<{type(value).__name__}>"


def tool_form(tool: ToolDef) -> dict[str, Any]:
    """The shared template form of ``tool``; never mutate it (renders get it uncopied)."""
    entry = _forms.get(id(tool))
    if entry is not None and entry[0] is tool:
        with contextlib.suppress(KeyError):  # another thread evicted it meanwhile
            _forms.move_to_end(id(tool))
        return entry[1]
    # OpenAI's own key order (name, description, parameters): templates print tools with tojson,
    # so the order is visible to the model
    fn: dict[str, Any] = {"name": tool.name}
    if tool.description:
        fn["description"] = tool.description
    fn["parameters"] = tool.parameters
    form, text = _json_copy({"type": "function", "function": fn})
    ids = _containers(form)
    if text is not None:  # what `tool | tojson` prints with its defaults: known already
        memo_key = (id(form), *DEFAULT_JSON_OPTIONS)
        _json[memo_key] = text
    for key in ids:
        _shared_ids[key] = _shared_ids.get(key, 0) + 1
    _forms[id(tool)] = (tool, form, ids)
    while len(_forms) > _CAPACITY:
        try:
            _forget(_forms.popitem(last=False)[1][2])
        except KeyError:  # emptied by another thread
            break
    return form


_LISTS_CAPACITY = 16
_lists: OrderedDict[tuple[int, ...], tuple[tuple[ToolDef, ...], list[dict[str, Any]]]] = (
    OrderedDict()
)
"""ids of a tool list's ToolDefs -> (those ToolDefs, their forms): a request with the tools of an
earlier one (an agent's every step) finds the list whole instead of looking up each tool."""


def tool_forms(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    """``[tool_form(t) for t in tools]`` (a new list each call: the caller may change it)."""
    key = tuple(map(id, tools))
    hit = _lists.get(key)
    # the same ToolDef objects (identity, not equality: a form belongs to its ToolDef), and
    # every form still the one tool_form holds (a form evicted there is unregistered)
    if (
        hit is not None
        and all(a is b for a, b in zip(hit[0], tools, strict=True))
        and all(_forms.get(k, _MISSING)[1] is f for k, f in zip(key, hit[1], strict=True))
    ):
        with contextlib.suppress(KeyError):  # another thread evicted it meanwhile
            _lists.move_to_end(key)
        return list(hit[1])
    forms = [tool_form(t) for t in tools]
    _lists[key] = (tuple(tools), forms)
    while len(_lists) > _LISTS_CAPACITY:
        try:
            _lists.popitem(last=False)
        except KeyError:
            break
    return list(forms)


def _forget(ids: list[int]) -> None:
    for key in ids:
        left = _shared_ids.pop(key, 1) - 1
        if left:
            _shared_ids[key] = left
    gone = set(ids)
    for memo_key in [k for k in list(_json) if k[0] in gone]:
        _json.pop(memo_key, None)


def _json_copy(value: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A plain deep copy and its JSON text: through JSON (in C) when it is JSON, else
    :func:`plain_data` (and no text)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # an object, a non-string key, a NaN: copy it the slow way
        return dict(plain_data(value)), None
    copy: dict[str, Any] = json.loads(text)
    return copy, text


def _containers(value: Any) -> list[int]:
    """Ids of every dict and list in ``value`` (made of JSON types only)."""
    found: list[int] = []
    stack = [value] if type(value) in (dict, list) else []
    while stack:  # plain loops: the first render of many tools walks thousands of containers
        item = stack.pop()
        found.append(id(item))
        for v in item.values() if type(item) is dict else item:
            kind = type(v)
            if kind is dict or kind is list:
                stack.append(v)
    return found


def is_shared(value: object) -> bool:
    """Whether ``value`` is a container of a shared tool form."""
    return id(value) in _shared_ids


def shared_json(value: object, options: tuple[Any, ...], dump: Callable[[], str]) -> str:
    """``dump()`` (``value``'s JSON under ``options``), computed once for a shared value."""
    if not is_shared(value):
        return dump()
    key = (id(value), *options)
    text = _json.get(key)
    if text is None:
        text = _json[key] = dump()
    return text
