"""``verify.check_own_call`` with the rich call (every JSON type): what the template wrote."""

from __future__ import annotations

from tooldialect.dialect.builtins import get_builtin
from tooldialect.verify import RICH_ARGUMENTS, check_own_call, schema_for, tool_for

# A Qwen2.5-style template whose element rendering leaves out null arguments (MiniMax M3 does):
# the call as written has no ``after``, so reading it back without ``after`` is exact.
_ELEMENTS = """{%- for m in messages -%}
<|im_start|>{{ m.role }}
{%- if m.tool_calls %}
{%- for c in m.tool_calls %}
<tool_call>
<function={{ c.function.name }}>
{%- for k, v in c.function.arguments.items() %}{% if v is not none %}
<parameter={{ k }}>
{{ v if v is string else v | tojson }}
</parameter>{% endif %}{% endfor %}
</function>
</tool_call>
{%- endfor %}
{%- else %}
{{ m.content }}
{%- endif %}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}
{%- if tools %}{% for t in tools %}{{ t.function.name }}{% endfor %}{% endif -%}"""


def test_a_null_argument_the_template_leaves_out_is_not_expected() -> None:
    spec = get_builtin("qwen3-coder")
    assert check_own_call(spec, _ELEMENTS, arguments=RICH_ARGUMENTS).ok is True


def test_a_null_argument_the_template_writes_must_be_read() -> None:
    writes_null = _ELEMENTS.replace("{% if v is not none %}", "{% if true %}")
    writes_null = writes_null.replace("v if v is string", "'zz' if v is none else v if v is string")
    agreement = check_own_call(get_builtin("qwen3-coder"), writes_null, arguments=RICH_ARGUMENTS)
    assert agreement.ok is False and "'after': 'zz'" in agreement.reason


def test_rich_tool_schemas_type_what_templates_recurse_into() -> None:
    schema = tool_for(RICH_ARGUMENTS)["function"]["parameters"]["properties"]
    assert schema["tags"]["items"] == {
        "anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"}]
    }
    assert schema["where"]["properties"]["box"] == schema_for({"n": 1})
    assert schema["after"] == {
        "description": "the after"
    }  # untyped: null renders as the template likes


# A template that writes its last user turn unlike a past one (mistral.rs' Mistral Small copy
# moves it into the system block): the reply of a past call starts after the re-rendered turn.
_LAST_USER_MOVED = """{%- for m in messages -%}
{%- if m.role == 'user' and loop.last -%}[SYS]{{ m.content }}[/SYS]
{%- elif m.role == 'user' -%}[INST]{{ m.content }}[/INST]
{%- elif m.tool_calls -%}[TOOL_CALLS][{% for c in m.tool_calls %}{"name": "{{ c.function.name }}", \
"arguments": {{ c.function.arguments | tojson }}}{% endfor %}]</s>
{%- elif m.role == 'assistant' -%}{{ m.content }}</s>
{%- endif -%}
{%- endfor -%}{%- if tools %}[TOOLS]{{ tools | tojson }}[/TOOLS]{% endif -%}"""


def test_a_last_user_turn_rendered_unlike_a_past_one_is_not_left_as_markers() -> None:
    agreement = check_own_call(get_builtin("mistral-nemo"), _LAST_USER_MOVED)
    assert agreement.ok is True, agreement.reason
