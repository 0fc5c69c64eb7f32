"""render_prompt: the exact prompt the handler sends, native and polyfilled."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import read_template
from tool_defs import WEATHER
from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.polyfill import apply_polyfill
from tooldialect.dialect.spec import ReasoningMarkers
from tooldialect.errors import TemplateError, ToolSpecError
from tooldialect.frontend.render import prompt_opens_reasoning, render_prompt
from tooldialect.prompt.template import ChatTemplate
from tooldialect.tool_defs import normalize_tools

TOOLS: list[dict[str, Any]] = [WEATHER]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


def test_native_template_gets_tools_and_messages() -> None:
    source = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    prompt = render_prompt(source, get_builtin("hermes"), CONVERSATION, tools=TOOLS)
    expected = ChatTemplate(source).render(CONVERSATION, tools=TOOLS)
    assert prompt == expected
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert call in prompt
    assert "<tool_response>\nsunny\n</tool_response>" in prompt


def test_polyfill_renders_rewritten_conversation() -> None:
    source = read_template("SmolLM2-135M-Instruct.jinja")
    spec = get_builtin("polyfill-json")
    prompt = render_prompt(source, spec, CONVERSATION, tools=TOOLS)
    rewritten = apply_polyfill(CONVERSATION, spec, normalize_tools(TOOLS))
    assert prompt == ChatTemplate(source).render(rewritten)
    assert prompt.endswith("<|im_start|>assistant\n")
    assert spec.render_call("get_weather", {"city": "Paris"}) in prompt


def test_polyfill_without_system_role_folds_guide_into_user() -> None:
    source = (
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system') }}"
        "{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    )
    prompt = render_prompt(source, get_builtin("polyfill-json"), CONVERSATION[:1], tools=TOOLS)
    assert prompt.startswith("[user]You can call these tools.")
    assert prompt.endswith("Weather in Paris?")


def test_template_kwargs_reach_the_template() -> None:
    source = "{{ messages[0].content }}{% if enable_thinking %}+think{% endif %}"
    prompt = render_prompt(source, get_builtin("hermes"), CONVERSATION[:1], enable_thinking=True)
    assert prompt == "Weather in Paris?+think"


def test_template_that_raises_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="boom"):
        render_prompt("{{ raise_exception('boom') }}", get_builtin("hermes"), CONVERSATION[:1])


def test_bad_tools_raise_tool_spec_error() -> None:
    with pytest.raises(ToolSpecError):
        render_prompt("x", get_builtin("hermes"), CONVERSATION[:1], tools=[{"type": "nope"}])


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [("<|im_start|>assistant\n<think>\n", True), ("<|im_start|>assistant\n", False)],
    ids=["open", "closed"],
)
def test_prompt_opens_reasoning(prompt: str, expected: bool) -> None:
    spec = get_builtin("hermes").model_copy(update={"reasoning": ReasoningMarkers()})
    assert prompt_opens_reasoning(prompt, spec) is expected
    assert prompt_opens_reasoning(prompt, spec.model_copy(update={"reasoning": None})) is False


@pytest.mark.parametrize(
    ("template_file", "spec_id", "expected"),
    [
        ("meetkai-functionary-medium-v3.2.jinja", "functionary-v3.2", ">>>"),
        ("llama-cpp-deepseek-r1.jinja", "deepseek-r1", "<think>"),
        ("Qwen2.5-Coder-0.5B-Instruct.jinja", "hermes", ""),
    ],
    ids=["functionary-call-opener", "r1-open-think", "qwen-none"],
)
def test_prompt_prefill_reads_markers_the_prompt_already_wrote(
    template_file: str, spec_id: str, expected: str
) -> None:
    from tooldialect.frontend.render import prompt_prefill

    spec = get_builtin(spec_id)
    prompt = render_prompt(
        read_template(template_file), spec, [{"role": "user", "content": "hi"}], tools=TOOLS
    )
    assert prompt_prefill(prompt, spec).strip() == expected
