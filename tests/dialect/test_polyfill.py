"""apply_polyfill: guide injection, assistant calls as text, tool results as turns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.polyfill import apply_polyfill, example_arguments, render_guide
from tooldialect.dialect.spec import DialectSpec, Polyfill
from tooldialect.errors import DialectError
from tooldialect.tool_defs import normalize_tools

SPEC = get_builtin("polyfill-json")
# not tool_defs.WEATHER_DAYS: the guide test reads this description back
TOOLS = normalize_tools(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"],
                },
            },
        }
    ]
)
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def test_guide_lists_tools_and_example_call() -> None:
    guide = render_guide(SPEC, TOOLS)
    signature = json.dumps(
        {"name": "get_weather", "description": "Current weather", "parameters": TOOLS[0].parameters}
    )
    assert signature in guide
    assert SPEC.render_call("get_weather", {"city": "<city>"}) in guide
    assert "{tools}" not in guide and "{example}" not in guide


def test_no_tools_no_guide() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    assert apply_polyfill(msgs, SPEC, []) == msgs


@pytest.mark.parametrize(
    ("messages", "expected_roles", "system_at"),
    [
        ([{"role": "user", "content": "hi"}], ["system", "user"], 0),
        (
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            ["system", "user"],
            0,
        ),
    ],
    ids=["prepends-system", "merges-into-system"],
)
def test_guide_goes_to_system(
    messages: list[dict[str, Any]], expected_roles: list[str], system_at: int
) -> None:
    out = apply_polyfill(messages, SPEC, TOOLS)
    assert [m["role"] for m in out] == expected_roles
    assert render_guide(SPEC, TOOLS) in out[system_at]["content"]
    if messages[0]["role"] == "system":
        assert out[0]["content"].startswith("Be brief.\n\n")


def test_without_system_role_guide_leads_first_user_message() -> None:
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    out = apply_polyfill(msgs, SPEC, TOOLS, system_role=False)
    assert [m["role"] for m in out] == ["user"]
    assert out[0]["content"] == "Be brief.\n\n" + render_guide(SPEC, TOOLS) + "\n\nhi"


def test_calls_and_results_become_text_turns() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_1", "content": "22C"},
        {"role": "assistant", "content": "Sunny, 22C."},
    ]
    out = apply_polyfill(msgs, SPEC, TOOLS)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant"]
    assert out[2]["content"] == SPEC.render_call("get_weather", {"city": "Paris"})
    assert "tool_calls" not in out[2]
    assert out[3]["content"] == (
        "<tool_response>\nsunny\n</tool_response>\n<tool_response>\n22C\n</tool_response>"
    )
    assert msgs[1]["tool_calls"] == [CALL]  # input untouched


def test_result_template_fields_and_role() -> None:
    spec = SPEC.model_copy(
        update={
            "polyfill": Polyfill(
                result_role="tool", result_template="{name}#{id}: {content}", result_separator=" | "
            )
        }
    )
    msgs: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Checking.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    out = apply_polyfill(msgs, spec, TOOLS)
    assert out[1]["content"].startswith("Checking.\n<tool_call>")
    assert out[2] == {"role": "tool", "content": "get_weather#call_1: sunny"}


def test_native_spec_has_no_polyfill() -> None:
    with pytest.raises(DialectError, match="hermes"):
        apply_polyfill([], get_builtin("hermes"), TOOLS)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "properties": {}}, {}),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1}),
        (
            {"type": "object", "properties": {"u": {"enum": ["c", "f"]}}, "required": ["u"]},
            {"u": "c"},
        ),
        (
            {
                "type": "object",
                "properties": {"b": {"type": "boolean"}, "x": {}},
                "required": ["b"],
            },
            {"b": True},
        ),
    ],
    ids=["empty", "integer", "enum", "required-only"],
)
def test_example_arguments(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert example_arguments(schema) == expected


def test_spec_is_a_dialect_spec() -> None:
    assert isinstance(SPEC, DialectSpec) and SPEC.polyfill is not None
