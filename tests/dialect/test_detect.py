"""detect_dialect: signatures as data, most specific first; then derivation, then the polyfill.

The per-template expectations for all vendored templates are in test_templates.py; this file covers
the rules themselves.
"""

from __future__ import annotations

import pytest

from conftest import read_template
from tooldialect.dialect.builtins import builtin_signatures, get_builtin
from tooldialect.dialect.detect import detect_builtin
from tooldialect.verify import detect_dialect

# Gemma 3's instruction template as Google publishes it (reconstructed: not in the vendored corpus,
# and the gemma-3-270m test model carries none). No tools, no tool role.
GEMMA3_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- set role = "model" if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- else -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}
"""

# A template whose tool-call format no builtin knows: derivation must find it.
NOVEL_TEMPLATE = """{%- for m in messages -%}
<|{{ m.role }}|>{{ m.content or '' }}
{%- if m.tool_calls -%}{%- for tc in m.tool_calls -%}
<<CALL>>{{ tc.function.name }}|{{ tc.function.arguments | tojson }}<</CALL>>
{%- endfor -%}{%- endif -%}<|end|>
{%- endfor -%}{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"""


def test_gemma3_template_gets_the_tool_code_polyfill() -> None:
    spec = detect_dialect(GEMMA3_TEMPLATE)
    assert spec.id == "gemma3-tool-code"
    assert spec.origin == "polyfill" and spec.polyfill is not None
    assert spec.polyfill.result_role == "user"
    assert "```tool_output" in spec.polyfill.result_template


def test_gemma2_template_is_not_taken_for_gemma3() -> None:
    assert detect_dialect(read_template("google-gemma-2-2b-it.jinja")).id == "polyfill-json"


@pytest.mark.parametrize(
    "source", [None, "", "{{ messages[0].content }}"], ids=["none", "empty", "plain"]
)
def test_templates_without_tools_get_the_polyfill(source: str | None) -> None:
    spec = detect_dialect(source)
    assert spec.id == "polyfill-json" and spec.origin == "polyfill"
    assert spec.reasoning is None


def test_polyfill_keeps_think_markers_of_a_reasoning_template() -> None:
    spec = detect_dialect(read_template("HuggingFaceTB-SmolLM3-3B.jinja"))
    assert spec.id == "polyfill-json"
    assert spec.reasoning is not None and spec.reasoning.close == "</think>"
    # the registry's own polyfill is untouched
    assert get_builtin("polyfill-json").reasoning is None


def test_builtin_specs_are_returned_as_registered() -> None:
    spec = detect_dialect(read_template("Qwen-Qwen3-0.6B.jinja"))
    assert spec is get_builtin("hermes")
    assert spec.origin == "builtin"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("<tool_call>", "hermes"),
        ("<tool_call><function=<parameter=", "qwen3-coder"),
        ("<tool_call>{{ name }}<arg_key>", "glm-4.5"),
        ("<tool_call>{{ name }}<arg_key>k</arg_key><arg_value>", "glm-4.7"),
        ("<|start_of_role|> <tool_call>", "granite-4"),
        ("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|> Action:", "command-r-plus"),
        ("<|CHATBOT_TOKEN|> Action: <|START_ACTION|>", "command-r7b"),
        ("[TOOL_CALLS][", "mistral-nemo"),
        ("[TOOL_CALLS] [ARGS]", "mistral-v11"),
        ("[TOOL_CALLS] [CALL_ID] [ARGS]", "mistral-small-3.2"),
        ("<｜tool▁calls▁begin｜>", "deepseek-v3.1"),
        ("<｜tool▁calls▁begin｜> ```json", "deepseek-r1"),
        ("<function= <|start_header_id|>", "functionary-v3.1"),
        ('<|start_header_id|> "parameters": ', "llama-3"),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v and len(v) < 20 else None,
)
def test_more_specific_signatures_win(source: str, expected: str) -> None:
    assert detect_builtin(source) == expected


def test_signature_order_is_by_priority() -> None:
    order = [name for name, _ in builtin_signatures()]
    assert order.index("qwen3-coder") < order.index("hermes")
    assert order.index("mistral-small-3.2") < order.index("mistral-v11")
    assert order.index("deepseek-r1") < order.index("deepseek-v3.1")
    assert "polyfill-json" not in order


def test_unknown_format_is_derived_before_the_polyfill() -> None:
    spec = detect_dialect(NOVEL_TEMPLATE)
    assert spec.origin == "derived"
    text = spec.render_call("get_weather", {"city": "Paris"})
    assert text.startswith("<<CALL>") and "get_weather" in text


@pytest.mark.parametrize(
    "name",
    ["Qwen-Qwen2.5-7B-Instruct.jinja", "Kimi-K2-Instruct.jinja", "SmolLM2-135M-Instruct.jinja"],
)
def test_builtins_false_never_returns_a_builtin(name: str) -> None:
    spec = detect_dialect(read_template(name), builtins=False)
    assert spec.origin in ("derived", "polyfill")


def test_builtins_false_derives_hermes_markers() -> None:
    spec = detect_dialect(read_template("Qwen-Qwen2.5-7B-Instruct.jinja"), builtins=False)
    assert spec.origin == "derived"
    assert spec.primary.call_open.strip() == "<tool_call>"
