"""Every ``tool_choice`` and ``response_format`` form a client sends, normalised (no model)."""

from __future__ import annotations

from typing import Any

import pytest

from tooldialect import ToolSpecError
from tooldialect.tool_defs import normalize_response_format, normalize_tool_choice, normalize_tools

TOOLS = normalize_tools(
    [
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "function", "function": {"name": "search"}},
    ]
)

CHOICES: list[tuple[str, Any, str, str | None]] = [
    ("none-given", None, "auto", None),
    ("auto", "auto", "auto", None),
    ("none", "none", "none", None),
    ("required", "required", "required", None),
    ("any-is-required", "any", "required", None),
    ("bare-name", "search", "named", "search"),
    (
        "openai-object",
        {"type": "function", "function": {"name": "get_weather"}},
        "named",
        "get_weather",
    ),
]


@pytest.mark.parametrize(
    ("choice", "mode", "name"), [c[1:] for c in CHOICES], ids=[c[0] for c in CHOICES]
)
def test_tool_choice_forms(choice: Any, mode: str, name: str | None) -> None:
    got = normalize_tool_choice(choice, TOOLS)
    assert (got.mode, got.name) == (mode, name)


BAD_CHOICES: list[tuple[str, Any]] = [
    ("unknown-word", "sometimes"),
    ("unknown-object", {"type": "web_search_preview"}),
    ("number", 3),
]


@pytest.mark.parametrize("choice", [c[1] for c in BAD_CHOICES], ids=[c[0] for c in BAD_CHOICES])
def test_bad_tool_choice_lists_the_accepted_forms(choice: Any) -> None:
    with pytest.raises(ToolSpecError) as err:
        normalize_tool_choice(choice, TOOLS)
    text = str(err.value)
    assert repr(choice) in text and "'any'" in text and "tool's name" in text


def test_the_legacy_function_call_is_read_as_its_tool_choice() -> None:
    from tooldialect.frontend.options import ChatOptions

    tools = [{"name": "get_weather"}, {"name": "search"}]
    for call, mode, name in (({"name": "search"}, "named", "search"), ("none", "none", None)):
        got = ChatOptions.build({"functions": tools, "function_call": call}, where="test")
        assert (got.choice.mode, got.choice.name) == (mode, name)
        assert [t.name for t in got.tools] == ["get_weather", "search"]


def test_unknown_name_lists_the_tools() -> None:
    with pytest.raises(ToolSpecError, match="get_weather"):
        normalize_tool_choice({"type": "function", "function": {"name": "nope"}}, TOOLS)


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
FORMATS: list[tuple[str, Any, Any]] = [
    ("absent", None, None),
    ("text", {"type": "text"}, None),
    ("json-object", {"type": "json_object"}, {"type": "object"}),
    ("json-object-schema", {"type": "json_object", "schema": SCHEMA}, SCHEMA),
    (
        "openai-json-schema",
        {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA, "strict": True}},
        SCHEMA,
    ),
    (
        "json-schema-without-schema",
        {"type": "json_schema", "json_schema": {"name": "A"}},
        {"type": "object"},
    ),
]


@pytest.mark.parametrize(("fmt", "schema"), [f[1:] for f in FORMATS], ids=[f[0] for f in FORMATS])
def test_response_format_forms(fmt: Any, schema: Any) -> None:
    assert normalize_response_format(fmt) == schema


BAD_FORMATS: list[tuple[str, Any]] = [
    ("string", "json"),
    ("unknown-type", {"type": "yaml"}),
    ("json-schema-missing", {"type": "json_schema"}),
    ("schema-not-object", {"type": "json_object", "schema": [1]}),
]


@pytest.mark.parametrize("fmt", [f[1] for f in BAD_FORMATS], ids=[f[0] for f in BAD_FORMATS])
def test_bad_response_format_says_what_is_accepted(fmt: Any) -> None:
    with pytest.raises(ToolSpecError, match="response_format"):
        normalize_response_format(fmt)


# ---- allowed_tools, strict, and the other forms agent frameworks send ------------------------

THREE = normalize_tools(
    [
        {"type": "function", "function": {"name": "get_weather", "strict": True}},
        {"type": "function", "function": {"name": "search"}},
        {"type": "function", "function": {"name": "get_time"}},
    ]
)


def chat_allowed(mode: str, *entries: Any) -> dict[str, Any]:
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": list(entries)}}


def fn(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


MORE_CHOICES: list[tuple[str, Any, str, str | None, tuple[str, ...] | None]] = [
    ("chat-allowed-tools", chat_allowed("required", fn("search")), "required", None, ("search",)),
    (
        "allowed-by-name",
        chat_allowed("auto", fn("get_time"), "search"),
        "auto",
        None,
        ("get_time", "search"),
    ),
    (
        "allowed-everything-is-the-plain-mode",
        chat_allowed("auto", "get_weather", "search", "get_time"),
        "auto",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("choice", "mode", "name", "allowed"),
    [c[1:] for c in MORE_CHOICES],
    ids=[c[0] for c in MORE_CHOICES],
)
def test_agent_framework_choice_forms(
    choice: Any, mode: str, name: str | None, allowed: tuple[str, ...] | None
) -> None:
    got = normalize_tool_choice(choice, THREE)
    assert (got.mode, got.name, got.allowed) == (mode, name, allowed)


@pytest.mark.parametrize(
    ("choice", "words"),
    [
        (chat_allowed("auto", fn("nope"), fn("zap")), "['nope', 'zap']"),
        (chat_allowed("sometimes", "search"), "'mode': 'auto' | 'required'"),
        (chat_allowed("auto"), "non-empty tools"),
        (chat_allowed("auto", {"type": "function"}), "names no function"),
        # the Responses API's flat form: its converter translates it (apps.responses.convert)
        ({"type": "allowed_tools", "mode": "auto", "tools": ["search"]}, "non-empty tools"),
    ],
)
def test_bad_allowed_tools_name_the_problem(choice: Any, words: str) -> None:
    with pytest.raises(ToolSpecError) as err:
        normalize_tool_choice(choice, THREE)
    assert words in str(err.value)


def test_allowed_tools_rejects_hosted_tool_entries() -> None:
    from tooldialect.errors import UnsupportedToolChoiceError

    with pytest.raises(UnsupportedToolChoiceError, match="'mcp'"):
        normalize_tool_choice(chat_allowed("auto", {"type": "mcp", "server_label": "x"}), THREE)


def test_strict_is_kept() -> None:
    assert THREE[0].strict and not THREE[1].strict
    assert THREE[0].to_openai()["function"]["strict"] is True


def test_callable_tools_narrow_only_the_calls() -> None:
    choice = normalize_tool_choice(chat_allowed("required", "get_time"), THREE)
    assert [t.name for t in choice.callable_tools(THREE)] == ["get_time"]
    assert [t.name for t in normalize_tool_choice("auto", THREE).callable_tools(THREE)] == [
        "get_weather",
        "search",
        "get_time",
    ]
    assert normalize_tool_choice("none", THREE).callable_tools(THREE) == []
