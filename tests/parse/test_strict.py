"""``parse_output(strict=True)``: a call the reply opens but that does not parse raises
``ToolCallParseError`` instead of staying content (the lenient default)."""

from __future__ import annotations

import pytest

from tooldialect import DialectSpec, ToolCallParseError, parse_output

BROKEN = [
    ("hermes", 'Sure. <tool_call>\n{"name": "f", "argu</tool_call> after'),
    ("hermes", "x <tool_call>not json</tool_call> y"),
    ("mistral-nemo", "[TOOL_CALLS] not a list"),
]


@pytest.mark.parametrize(("dialect", "text"), BROKEN)
def test_strict_raises_where_lenient_keeps_content(dialect: str, text: str) -> None:
    spec = DialectSpec.builtin(dialect)
    lenient = parse_output(text, spec)
    assert lenient.tool_calls == [] and lenient.content is not None
    with pytest.raises(ToolCallParseError, match="does not parse"):
        parse_output(text, spec, strict=True)


@pytest.mark.parametrize(
    ("dialect", "text"),
    [
        ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'),
        ("hermes", "plain text, no call"),
        ("mistral-nemo", 'Done.[TOOL_CALLS][{"name": "f", "arguments": {}}]'),
    ],
)
def test_strict_accepts_what_parses(dialect: str, text: str) -> None:
    spec = DialectSpec.builtin(dialect)
    strict, lenient = parse_output(text, spec, strict=True), parse_output(text, spec)
    assert strict.content == lenient.content
    assert [(c.name, c.arguments) for c in strict.tool_calls] == [
        (c.name, c.arguments) for c in lenient.tool_calls
    ]
