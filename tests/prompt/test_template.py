"""ChatTemplate: byte-identical with transformers, sandboxed, honest about what it renders."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, TEMPLATES, read_template
from tooldialect.errors import TemplateError, TemplateSecurityError
from tooldialect.prompt.template import ChatTemplate, TemplateCapabilities, normalize_messages

RENDERS = FIXTURES / "renders"
DATA: dict[str, Any] = json.loads((RENDERS / "conversations.json").read_text(encoding="utf-8"))
NOW = datetime.fromisoformat(DATA["now"])
TEMPLATE_NAMES = sorted(path.name for path in TEMPLATES.glob("*.jinja"))

# (template, case) pairs transformers cannot render but tooldialect can, on purpose.
BEYOND_TRANSFORMERS = {
    # list.append on a template-built list (immutable sandbox refuses it)
    ("Kimi-K2-Instruct", "tool_call"): "get_weather",
    ("Kimi-K2-Instruct", "tool_result"): "get_weather",
    # `tools | map(...) | tojson`: tojson of a lazy iterator
    ("llama-cpp-deepseek-r1", "tools"): "get_weather",
    ("llama-cpp-deepseek-r1", "tool_call"): "get_weather",
    ("llama-cpp-deepseek-r1", "tool_result"): "get_weather",
    # concatenates arguments as a string; ChatTemplate.argument_form passes JSON text
    ("meetkai-functionary-medium-v3.2", "tool_call"): '{"city": "Paris", "unit": "celsius"}',
    ("meetkai-functionary-medium-v3.2", "tool_result"): '{"city": "Paris", "unit": "celsius"}',
}


def golden_params() -> list[Any]:
    params = []
    for path in sorted(RENDERS.glob("*.json")):
        if path.name == "conversations.json":
            continue
        golden = json.loads(path.read_text(encoding="utf-8"))
        for case, expected in golden["cases"].items():
            params.append(
                pytest.param(golden["template"], case, expected, id=f"{path.stem}-{case}")
            )
    return params


def render_case(template: ChatTemplate, case: str) -> str:
    spec = DATA["cases"][case]
    return template.render(
        spec["messages"],
        tools=DATA["tools"] if spec.get("with_tools") else None,
        add_generation_prompt=spec.get("add_generation_prompt", True),
    )


def chat_template(name: str) -> ChatTemplate:
    kwargs = DATA["template_kwargs"]
    return ChatTemplate(
        read_template(name),
        bos_token=kwargs["bos_token"],
        eos_token=kwargs["eos_token"],
        now=lambda: NOW,
    )


@pytest.mark.parametrize(("name", "case", "expected"), golden_params())
def test_matches_transformers(name: str, case: str, expected: dict[str, str]) -> None:
    template = chat_template(name)
    if "text" in expected:
        assert render_case(template, case) == expected["text"]
    elif (key := (Path(name).stem, case)) in BEYOND_TRANSFORMERS:
        assert BEYOND_TRANSFORMERS[key] in render_case(template, case)
    else:
        with pytest.raises(TemplateError):
            render_case(template, case)


def test_every_template_has_a_golden_file() -> None:
    assert {Path(n).stem for n in TEMPLATE_NAMES} <= {p.stem for p in RENDERS.glob("*.json")}


# Extra variables a few templates need to render a plain chat at all.
RENDER_KWARGS: dict[str, dict[str, Any]] = {
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": {"tools": []},
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": {"tools": []},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": {"tools": []},
    "fireworks-ai-llama-3-firefunction-v2.jinja": {"functions": "", "datetime": "2025-01-15"},
}


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_template_renders_a_simple_chat(name: str) -> None:
    messages = [
        {"role": "user", "content": "ping-7f3a"},
        {"role": "assistant", "content": "pong-9c1e"},
        {"role": "user", "content": "again-2b8d"},
    ]
    rendered = chat_template(name).render(messages, **RENDER_KWARGS.get(name, {}))
    for text in ("ping-7f3a", "pong-9c1e", "again-2b8d"):
        assert text in rendered


# ------------------------------------------------------------------ normalisation


def test_string_arguments_render_like_objects() -> None:
    template = chat_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    messages = json.loads(json.dumps(DATA["cases"]["tool_call"]["messages"]))
    as_object = template.render(messages)
    function = messages[1]["tool_calls"][0]["function"]
    function["arguments"] = json.dumps(function["arguments"])
    assert template.render(messages) == as_object
    assert '"{\\"city' not in as_object


def test_none_content_renders_as_empty_string() -> None:
    template = chat_template("Qwen-Qwen3-0.6B.jinja")
    messages = json.loads(json.dumps(DATA["cases"]["tool_call"]["messages"]))
    with_empty = template.render(messages)
    messages[1]["content"] = None
    assert template.render(messages) == with_empty


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"role": "user", "content": "a\nb"},
        ),
        (
            {"role": "assistant", "content": None, "name": None},
            {"role": "assistant", "content": ""},
        ),
        (
            {"role": "assistant", "content": "x", "reasoning": "r"},
            {
                "thinking": "r",
                "role": "assistant",
                "content": "x",
                "reasoning": "r",
                "reasoning_content": "r",
            },
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
            },
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": "[1, 2]"}}],
            },
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": "[1, 2]"}}],
            },
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}],
            },
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}],
            },
        ),
    ],
    ids=[
        "text-parts",
        "none-content",
        "reasoning-alias",
        "json-args",
        "array-args",
        "bad-json-args",
    ],
)
def test_normalize_messages(message: dict[str, Any], expected: dict[str, Any]) -> None:
    before = json.dumps(message)
    assert normalize_messages([message]) == [expected]
    assert json.dumps(message) == before


def test_image_part_is_refused() -> None:
    with pytest.raises(TemplateError, match="image_url"):
        normalize_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])


def test_mutation_does_not_leak_to_caller() -> None:
    source = (
        "{% set _ = messages.append({'role': 'x'}) %}"
        "{% set _ = messages[0].update({'content': 'z'}) %}"
        "{% set _ = tools.pop() %}{{ messages | length }}{{ messages[0].content }}"
    )
    messages = [{"role": "user", "content": "hi"}]
    tools = [DATA["tools"][0]]
    assert ChatTemplate(source).render(messages, tools=tools) == "2z"
    assert messages == [{"role": "user", "content": "hi"}]
    assert tools == [DATA["tools"][0]]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "{% set d = {} %}{% set _ = d.update({'a': 1}) %}{{ d.setdefault('b', 2) }}{{ d }}",
            "2{'a': 1, 'b': 2}",
        ),
        ("{% set l = [3] %}{% set _ = l.extend([1, 2]) %}{{ l.pop(0) }}{{ l }}", "3[1, 2]"),
        ('{{ \'{"a": [1, "é"]}\' | from_json | tojson }}', '{"a": [1, "é"]}'),
        ("{{ '[1]' | fromjson | tojson(indent=2) }}", "[\n  1\n]"),
        ("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true, separators=(',', ':')) }}", '{"a":2,"b":1}'),
        ("{{ ' A,b '.strip().lower().split(',') }}{{ 'xy'.startswith('x') }}", "['a', 'b']True"),
        (
            "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}"
            "{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
            "02",
        ),
        ("{% generation %}kept{% endgeneration %}", "kept"),
        ("{{ strftime_now('%Y-%m-%d') }}", "2025-01-15"),
        (
            "{% set ns = namespace(n=1) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{{ dict(a=1) }}",
            "2{'a': 1}",
        ),
        ("{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}", "<s>|</s>|hi"),
    ],
    ids=[
        "dict-update",
        "list-extend-pop",
        "from_json",
        "fromjson-indent",
        "tojson-args",
        "str-methods",
        "loopcontrols",
        "generation-tag",
        "strftime_now",
        "namespace-dict",
        "tokens",
    ],
)
def test_extensions(source: str, expected: str) -> None:
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>", now=lambda: NOW)
    assert template.render([{"role": "user", "content": "hi"}]) == expected


# ------------------------------------------------------------------ errors and the sandbox


def test_raise_exception_message_is_kept() -> None:
    with pytest.raises(TemplateError, match="System role not supported"):
        chat_template("google-gemma-2-2b-it.jinja").render(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        )


@pytest.mark.parametrize(
    "source",
    ["{% if %}", "{{ messages[0].content.nope() }}", "{{ 1 / 0 }}", "{% for x in 3 %}{% endfor %}"],
    ids=["syntax", "undefined-call", "zero-division", "not-iterable"],
)
def test_template_bugs_are_template_errors(source: str) -> None:
    with pytest.raises(TemplateError):
        ChatTemplate(source).render([{"role": "user", "content": "hi"}])


SENTINEL = Path("/tmp/tooldialect-pwned")

ESCAPES = {
    "self-init-globals": "{{ self.__init__.__globals__.__builtins__.__import__('os').system('touch "
    f"{SENTINEL}') }}}}",
    "str-mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "cycler-globals": "{{ cycler.__init__.__globals__.os.system('touch " + str(SENTINEL) + "') }}",
    "joiner-globals": "{{ joiner.__init__.__globals__.os.popen('touch " + str(SENTINEL) + "') }}",
    "namespace-globals": "{{ namespace.__init__.__globals__.os.system('touch "
    + str(SENTINEL)
    + "') }}",
    "message-class": "{{ messages[0].__class__ }}",
    "format-string": '{{ "{0.__class__.__base__.__subclasses__}".format(messages) }}',
    "attr-filter": "{{ messages | attr('__class__') }}",
    "map-attribute": "{{ messages | map(attribute='__class__') | list }}",
    "namespace-dunder": "{% set ns = namespace(__class__=1) %}",
    "lipsum-globals": "{{ lipsum.__globals__['os'].system('touch " + str(SENTINEL) + "') }}",
}


@pytest.mark.parametrize("source", list(ESCAPES.values()), ids=list(ESCAPES))
def test_sandbox_escapes_are_refused(source: str) -> None:
    SENTINEL.unlink(missing_ok=True)
    with pytest.raises(TemplateSecurityError):
        ChatTemplate(source).render([{"role": "user", "content": "hi"}])
    assert not SENTINEL.exists()


# ------------------------------------------------------------------ capabilities

ALL = TemplateCapabilities(
    system_role=True,
    tools=True,
    tool_calls=True,
    tool_role=True,
    parallel_calls=True,
    object_arguments=True,
    string_arguments=False,
    reasoning=False,
)
NONE = TemplateCapabilities(
    system_role=True,
    tools=False,
    tool_calls=False,
    tool_role=False,
    parallel_calls=False,
    object_arguments=False,
    string_arguments=False,
    reasoning=False,
)

CAPABILITIES = {
    "Qwen2.5-Coder-0.5B-Instruct.jinja": ALL,
    "Qwen-Qwen2.5-7B-Instruct.jinja": ALL,
    "Qwen-Qwen3-0.6B.jinja": ALL.model_copy(update={"reasoning": True, "string_arguments": True}),
    "SmolLM2-135M-Instruct.jinja": NONE.model_copy(update={"tool_role": True}),
    "google-gemma-2-2b-it.jinja": NONE.model_copy(update={"system_role": False}),
    "microsoft-Phi-3.5-mini-instruct.jinja": NONE,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ALL.model_copy(update={"parallel_calls": False}),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ALL,
    "meetkai-functionary-medium-v3.2.jinja": ALL.model_copy(
        update={"object_arguments": False, "string_arguments": True}
    ),
    "openai-gpt-oss-120b.jinja": ALL.model_copy(
        update={"parallel_calls": False, "reasoning": True}
    ),
    "deepseek-ai-DeepSeek-V3.1.jinja": ALL.model_copy(update={"tools": False, "reasoning": True}),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ALL.model_copy(
        update={
            "tool_calls": False,
            "parallel_calls": False,
            "object_arguments": False,
            "reasoning": True,
        }
    ),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ALL.model_copy(
        update={"string_arguments": True}
    ),
}


def test_functionary_v32_gets_string_arguments() -> None:
    template = chat_template("meetkai-functionary-medium-v3.2.jinja")
    assert template.argument_form == "string"
    assert chat_template("Qwen-Qwen3-0.6B.jinja").argument_form == "object"


@pytest.mark.parametrize("name", list(CAPABILITIES), ids=[Path(n).stem for n in CAPABILITIES])
def test_capabilities(name: str) -> None:
    assert chat_template(name).capabilities == CAPABILITIES[name]


def test_compiled_once_per_source() -> None:
    source = read_template("SmolLM2-135M-Instruct.jinja")
    assert ChatTemplate(source)._template is ChatTemplate(source)._template


def test_capabilities_probed_once_per_source() -> None:
    source = read_template("Qwen-Qwen3-0.6B.jinja")
    assert ChatTemplate(source).capabilities is ChatTemplate(source).capabilities


def test_calls_render_where_template_needs_none_content() -> None:
    """DeepSeek R1 Distill Llama renders calls only for `content is none`: probing finds that."""
    template = ChatTemplate(read_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"))
    call = {
        "id": "a",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    rendered = template.render(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        ]
    )
    assert template.call_content_form == "none"
    assert 'get_weather\n```json\n{"city": "Paris"}\n```' in rendered
    assert (
        ChatTemplate(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")).call_content_form
        == "empty"
    )
