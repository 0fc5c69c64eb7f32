"""Input contracts real templates enforce, met by probing: never read as "no format".

Templates print arguments as text, iterate content parts, call helpers their serving stack passes,
demand alternating turns, or have no tool turn at all. Each case is an inline template reproducing
the contract (the test fails without the adaptation), then the real corpus templates that have it
(skipped when ``../shared/templates-corpus`` is absent).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bench.corpus import CORPUS

from tooldialect.conformance import check_template, conversation
from tooldialect.dialect.derive import ProbeRenderer
from tooldialect.dialect.spec import DialectSpec
from tooldialect.errors import ToolSpecError
from tooldialect.frontend.render import render_prompt
from tooldialect.prompt.compat import close_tool_runs, render_adapted
from tooldialect.prompt.conventions import typescript_schema
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import RICH_ARGUMENTS, tool_for

ARGS = {"query": 'a "lamp"', "limit": 3}
CALL = {"id": "qx7call01", "type": "function", "function": {"name": "find", "arguments": ARGS}}
TOOL = {
    "type": "function",
    "function": {
        "name": "find",
        "description": "Find things.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what"},
                "limit": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"]},
            },
            "required": ["query"],
        },
    },
}
TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
]


def corpus(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"the real-template corpus is not at {CORPUS}")
    return path.read_text(encoding="utf-8")


def spec(dialect: str) -> DialectSpec:
    return DialectSpec.builtin(dialect)


# ------------------------------------------------------------------ arguments printed as text

CONCATENATES = (
    "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
    "{{ '{\"name\": \"' ~ c.function.name ~ '\", \"arguments\": ' ~ c.function.arguments ~ '}' }}"
    "{% endfor %}{% else %}{{ m.content }}{% endif %}{% endfor %}"
)


def test_arguments_printed_as_text_go_as_json() -> None:
    template = ChatTemplate(CONCATENATES)
    assert template.capabilities.mangles_object_arguments
    assert template.argument_form == "string"
    assert json.dumps(ARGS) in template.render(TURN)


@pytest.mark.parametrize(
    "name",
    [
        "meetkai-functionary-cogito.jinja",
        "meetkai-functionary-gemma3.jinja",
        "meetkai-functionary-qwen2.5-text-only.jinja",
        "meetkai-functionary-r1_distilled_qwen.jinja",
        "vllm-tool_chat_template_phi4_mini.jinja",
    ],
)
def test_corpus_templates_printing_arguments_get_json(name: str) -> None:
    template = ChatTemplate(corpus(name))
    rendered = template.render(TURN, tools=[TOOL])
    assert json.dumps(ARGS) in rendered
    assert "'query'" not in rendered


def test_objects_rendered_as_json_stay_objects() -> None:
    template = ChatTemplate(
        "{% for m in messages %}{% for c in m.tool_calls or [] %}"
        "{{ c.function.arguments | tojson }}{% endfor %}{{ m.content }}{% endfor %}"
    )
    assert template.argument_form == "object"
    assert not template.capabilities.mangles_object_arguments


# ------------------------------------------------------------------ content as parts

PARTS_ONLY = (
    "{% for m in messages %}{{ m.role }}: {% for p in m.content %}{% if p.type == 'text' %}"
    "{{ p.text }}{% endif %}{% endfor %}\n{% endfor %}"
)


def test_templates_iterating_parts_get_parts() -> None:
    template = ChatTemplate(PARTS_ONLY)
    assert template.capabilities.content_parts
    assert "user: hello there" in template.render([{"role": "user", "content": "hello there"}])


def test_corpus_template_indexing_parts_renders_calls() -> None:
    template = ChatTemplate(corpus("CohereLabs-command-a-reasoning-08-2025.jinja"))
    assert template.capabilities.content_parts and template.capabilities.tool_calls
    assert "find" in template.render(TURN, tools=[TOOL])


def test_corpus_template_iterating_parts_keeps_text() -> None:
    template = ChatTemplate(corpus("mistralrs-idefics3.jinja"))
    assert "User: hello there" in template.render([{"role": "user", "content": "hello there"}])


# ------------------------------------------------------------------ helpers passed by convention

CALLS_HELPER = (
    "{{ generate_schema_from_functions(tools or []) }}"
    "{% for m in messages %}{{ m.content }}{% endfor %}"
)


def test_schema_helper_is_passed_to_probes_and_prompts() -> None:
    template = ChatTemplate(CALLS_HELPER)
    assert template.capabilities.tools
    prompt = render_prompt(
        template, spec("hermes"), [{"role": "user", "content": "hi"}], tools=[TOOL]
    )
    assert "type find = (_: {" in prompt
    assert ProbeRenderer(CALLS_HELPER).render([{"role": "user", "content": "hi"}], tools=[TOOL])


def test_typescript_schema() -> None:
    assert typescript_schema([TOOL]) == "\n".join(
        [
            "// Supported function definitions that should be called when necessary.",
            "namespace functions {",
            "",
            "// Find things.",
            "type find = (_: {",
            "// what",
            "query: string,",
            "limit?: number,",
            "tags?: string[],",
            'mode?: "a" | "b",',
            "}) => any;",
            "",
            "} // namespace functions",
        ]
    )


@pytest.mark.parametrize(
    "name",
    [
        "meetkai-functionary-v2.jinja",
        "meetkai-functionary-v2.llama3.jinja",
        "meetkai-functionary-v3.llama3.jinja",
        "meetkai-functionary-v3.llava_llama.jinja",
    ],
)
def test_corpus_templates_calling_the_schema_helper_read(name: str) -> None:
    report = check_template(corpus(name))
    assert report.verdict == "reads", report.reason


# ------------------------------------------------------------------ alternation after tool results

ALTERNATES = (
    "{% for m in messages | rejectattr('role', 'equalto', 'tool') "
    "| selectattr('tool_calls', 'undefined') %}"
    "{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}{% endfor %}"
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
)
AFTER_RESULT: list[dict[str, Any]] = [
    *TURN,
    {"role": "tool", "tool_call_id": "qx7call01", "content": "found"},
    {"role": "user", "content": "more"},
]


def test_tool_results_then_user_get_an_assistant_turn_between() -> None:
    template = ChatTemplate(ALTERNATES)

    def render(m: list[dict[str, Any]], t: Any) -> str:
        return template.render(m, tools=t)

    with pytest.raises(Exception, match="alternate"):
        render(AFTER_RESULT, None)
    prompt = render_adapted(render, AFTER_RESULT, None, alnum9=False)
    assert "[tool]found[assistant][user]more" in prompt


def test_close_tool_runs_only_between_results_and_user() -> None:
    closed = close_tool_runs([*AFTER_RESULT, {"role": "assistant", "content": "ok"}])
    assert [m["role"] for m in closed] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert close_tool_runs(TURN) == TURN


@pytest.mark.parametrize(
    "name",
    [
        "axolotl-mistral_v2v3.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja",
        "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
        "vllm-tool_chat_template_mistral.jinja",
        "ollama-command-r7b-7b.jinja",
    ],
)
def test_corpus_conversation_renders_after_tool_results(name: str) -> None:
    assert not check_template(corpus(name)).conversation_error


# ------------------------------------------------------------------ no tool turn

NO_TOOL_TURN = (
    "{% for m in messages %}{% if m.role in ['user', 'assistant'] %}"
    "<{{ m.role }}>{{ m.content }}{% endif %}{% endfor %}"
)


def test_tool_results_a_template_drops_go_as_user_turns() -> None:
    prompt = render_prompt(ChatTemplate(NO_TOOL_TURN), spec("hermes"), AFTER_RESULT, tools=[TOOL])
    assert "<user>Result of find (call qx7call01):\nfound<user>more" in prompt


def test_a_message_no_form_carries_still_raises() -> None:
    only_user = (
        "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"
    )
    with pytest.raises(ToolSpecError, match="messages\\[1\\]"):
        render_prompt(
            ChatTemplate(only_user),
            spec("hermes"),
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        )


@pytest.mark.parametrize(
    "name",
    [
        "ollama-granite3-dense-2b.jinja",
        "ibm-granite-granite-3.3-2B-Instruct.jinja",
        "vllm-tool_chat_template_glm4.jinja",
        "axolotl-command_a.jinja",
    ],
)
def test_corpus_templates_without_tool_turns_carry_results(name: str) -> None:
    source = corpus(name)
    report = check_template(source)
    assert not report.conversation_error
    prompt = render_prompt(
        ChatTemplate(source),
        report.detection.spec,
        conversation(),
        tools=[tool_for(RICH_ARGUMENTS)],
    )
    assert '{"found": 1}' in prompt


# ------------------------------------------------------------------ no past call


def test_past_calls_a_template_drops_go_into_content_as_the_model_writes_them() -> None:
    hermes = spec("hermes")
    prompt = render_prompt(ChatTemplate(NO_TOOL_TURN), hermes, AFTER_RESULT, tools=[TOOL])
    call = TURN[-1]["tool_calls"][0]["function"]
    written = hermes.render_call(call["name"], call["arguments"], call_id="qx7call01")
    assert f"<assistant>{written}<user>Result of find (call qx7call01)" in prompt


@pytest.mark.parametrize(
    "name", ["ollama-granite3.2-8b.jinja", "vllm-tool_chat_template_glm4.jinja"]
)
def test_corpus_templates_without_past_calls_still_show_them(name: str) -> None:
    source = corpus(name)
    detected = DialectSpec.model_validate(check_template(source).detection.spec.model_dump())
    prompt = render_prompt(ChatTemplate(source), detected, AFTER_RESULT, tools=[TOOL])
    assert '"a \\"lamp\\""' in prompt or 'a "lamp"' in prompt
