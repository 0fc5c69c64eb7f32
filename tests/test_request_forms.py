"""Every ``tool_choice`` and ``response_format`` form a client sends, normalised (no model)."""

from __future__ import annotations

from typing import Any

import pytest

from tooldialect import ToolSpecError
from tooldialect.tools import normalize_response_format, normalize_tool_choice, normalize_tools

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
    ("legacy-function-call", {"name": "search"}, "named", "search"),
]


@pytest.mark.parametrize(
    ("choice", "mode", "name"), [c[1:] for c in CHOICES], ids=[c[0] for c in CHOICES]
)
def test_tool_choice_forms(choice: Any, mode: str, name: str | None) -> None:
    got = normalize_tool_choice(choice, TOOLS)
    assert (got.mode, got.name) == (mode, name)


BAD_CHOICES: list[tuple[str, Any]] = [
    ("unknown-word", "sometimes"),
    ("unknown-object", {"type": "tool", "name": "x"}),
    ("number", 3),
]


@pytest.mark.parametrize("choice", [c[1] for c in BAD_CHOICES], ids=[c[0] for c in BAD_CHOICES])
def test_bad_tool_choice_lists_the_accepted_forms(choice: Any) -> None:
    with pytest.raises(ToolSpecError) as err:
        normalize_tool_choice(choice, TOOLS)
    text = str(err.value)
    assert repr(choice) in text and "'any'" in text and "tool's name" in text


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
