"""Derivation learns the wire format from what a template renders, not from how it is written.

Small invented templates with the features real ones have (a section closer written only after a
second call, an empty reasoning close before the calls, ...), then the real templates of the
corpus that show them (skipped where ``../shared/templates-corpus`` is absent).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldialect.conformance import check_template
from tooldialect.dialect.derive import PROBE_NAME
from tooldialect.parse import parse_output
from tooldialect.verify import derive_dialect

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "templates-corpus"

_TURNS = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<u>{{ m.content }}</u>"
    "{%- elif m.role == 'assistant' -%}<a>"
    "{%- if m.tool_calls -%}CALLS"
    "{%- else -%}{{ m.content }}{%- endif -%}</a>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<a>{%- endif -%}"
)

ARGS = {"q": "lamp", "n": 2}
TOOL = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
        },
    },
}


def _template(calls: str) -> str:
    return _TURNS.replace("CALLS", calls)


# the section closer follows the second call only: a lone call's render leaves it out
LATE_CLOSE = _template(
    "{%- for c in m.tool_calls -%}"
    "{%- if loop.first -%}<calls><call>{{ c.function.name }}\n~~~\n"
    "{{ c.function.arguments | tojson }}\n~~~</call>"
    "{%- else -%}\n<call>{{ c.function.name }}\n~~~\n"
    "{{ c.function.arguments | tojson }}\n~~~</call></calls>{%- endif -%}"
    "{%- endfor -%}"
)

# an empty reasoning close, then the calls
THINK_CLOSED = _template(
    "</think>  <calls>{%- for c in m.tool_calls -%}"
    "<call>{{ c.function.name }}|{{ c.function.arguments | tojson }}</call>  "
    "{%- endfor -%}</calls>"
)


def test_a_section_closer_a_lone_call_omits_is_optional() -> None:
    spec = derive_dialect(LATE_CLOSE)
    assert spec is not None
    fmt = spec.primary
    assert fmt.section_close == "</calls>"
    assert fmt.optional_markers == ["</calls>"]
    lone = '<calls><call>f\n~~~\n{"q": "lamp", "n": 2}\n~~~</call>'
    calls = parse_output(lone, spec).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("f", ARGS)]


def test_an_empty_reasoning_close_before_calls_is_no_marker() -> None:
    spec = derive_dialect(THINK_CLOSED)
    assert spec is not None
    assert spec.primary.section_open == "<calls>"
    assert "think" not in spec.render_call(PROBE_NAME, ARGS)


# a long run of glue between a value and the closing tag that names its key
FAR_ECHO = _template(
    '{%- for c in m.tool_calls -%}<inv n="{{ c.function.name }}">'
    "{%- for k, v in c.function.arguments.items() -%}"
    "]::glue::[<{{ k }}>{{ v }}]::glue::[</{{ k }}>"
    "{%- endfor -%}]::glue::[</inv>{%- endfor -%}"
)


def test_a_closing_tag_naming_the_key_after_long_glue_is_learnt() -> None:
    spec = derive_dialect(FAR_ECHO)
    assert spec is not None and spec.primary.body.kind == "element"
    text = spec.render_call("f", ARGS)
    assert "</q>" in text and "</n>" in text
    calls = parse_output(text, spec, tools=[TOOL]).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("f", ARGS)]


# a Kimi-K3-like layout, invented: a named reasoning block the generation prompt opens, an
# answer channel left empty before the calls, calls numbered from 1, typed attribute headers
NAMED_BLOCKS = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<!o!>msg role=\"user\"<!s!>{{ m.content }}<!c!>msg<!s!>"
    "{%- elif m.role == 'assistant' -%}<!o!>msg role=\"assistant\"<!s!>"
    "<!o!>muse<!s!>{{ m.reasoning_content or '' }}<!c!>muse<!s!>"
    "<!o!>say<!s!>{{ m.content or '' }}<!c!>say<!s!>"
    "{%- if m.tool_calls -%}<!o!>acts<!s!>"
    "{%- for c in m.tool_calls -%}"
    '<!o!>act fn="{{ c.function.name }}" n="{{ loop.index }}"<!s!>'
    "{%- for k, v in c.function.arguments.items() -%}"
    "<!o!>arg name=\"{{ k }}\" kind=\"{{ 'text' if v is string else 'num' }}\"<!s!>"
    "{{ v }}<!c!>arg<!s!>"
    "{%- endfor -%}<!c!>act<!s!>{%- endfor -%}<!c!>acts<!s!>"
    "{%- endif -%}<!c!>msg<!s!><!e!>"
    "{%- endif -%}{%- endfor -%}"
    '{%- if add_generation_prompt -%}<!o!>msg role="assistant"<!s!><!o!>muse<!s!>{%- endif -%}'
)


def test_named_blocks_an_empty_channel_and_calls_counted_from_one() -> None:
    spec = derive_dialect(NAMED_BLOCKS)
    assert spec is not None and spec.reasoning is not None
    assert (spec.reasoning.open, spec.reasoning.close) == ("<!o!>muse<!s!>", "<!c!>muse<!s!>")
    assert spec.primary.index_base == 1
    text = spec.render_calls([("f", ARGS, None), ("f", ARGS, None)])
    assert 'n="1"' in text and 'n="2"' in text and "say" not in text
    calls = parse_output("<!c!>muse<!s!>" + text, spec, tools=[TOOL]).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("f", ARGS)] * 2


# a call is a message addressed to the tool by name, its body the call written out again
ADDRESSED = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<|hd|>user<|body|>{{ m.content }}<|fin|>"
    "{%- elif m.role == 'assistant' -%}"
    "{%- if m.reasoning_content -%}<|hd|>bot @self<|body|>{{ m.reasoning_content }}<|more|>"
    "{%- endif -%}"
    "{%- if m.tool_calls -%}{%- for c in m.tool_calls -%}"
    '<|hd|>bot @{{ c.function.name }}<|body|><calls><call fn="{{ c.function.name }}">'
    '{%- for k, v in c.function.arguments.items() -%}<p k="{{ k }}">{{ v }}</p>{%- endfor -%}'
    "</call></calls>{{ '<|fin|>' if loop.last else '<|more|>' }}"
    "{%- endfor -%}"
    "{%- else -%}<|hd|>bot @user<|body|>{{ m.content }}<|fin|>{%- endif -%}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|hd|>bot{%- endif -%}"
)


def test_a_call_addressed_to_the_tool_by_its_message_header() -> None:
    spec = derive_dialect(ADDRESSED)
    assert spec is not None and spec.messages is not None
    assert spec.messages.recipient.strip() == "@"
    # the lazy grammar fires on a header naming a tool, not on any "@" in prose
    assert [t.value for t in spec.primary.triggers] == [r"(@){name}<\|body\|>"]
    reply = (
        ' @self<|body|>hmm<|more|><|hd|>bot @f<|body|><calls><call fn="f">'
        '<p k="q">lamp</p><p k="n">2</p></call></calls><|fin|>'
    )
    out = parse_output(reply, spec, tools=[TOOL])
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("f", ARGS)]
    assert out.reasoning_content == "hmm" and not out.content


def _pythonic(value: str) -> str:
    return _template(
        "[{%- for c in m.tool_calls -%}{{ c.function.name }}("
        "{%- for k, v in c.function.arguments.items() -%}"
        "{{ k }}=" + value + "{{ ', ' if not loop.last }}{%- endfor -%})"
        "{{ ', ' if not loop.last }}{%- endfor -%}]"
    )


# Python calls whose template writes values by str(): strings bare, or every value quoted
BARE_VALUES = _pythonic("{{ v }}")
STRING_VALUES = _pythonic('"{{ v }}"')


@pytest.mark.parametrize("source", [BARE_VALUES, STRING_VALUES], ids=["bare", "stringified"])
def test_python_calls_a_template_writes_by_str(source: str) -> None:
    spec = derive_dialect(source)
    assert spec is not None and spec.primary.body.kind == "python"
    assert spec.render_call("f", ARGS) == '[f(q="lamp", n=2)]'
    calls = parse_output('[f(q="lamp", n=2)]', spec, tools=[TOOL]).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("f", ARGS)]


REAL = [
    "ollama-deepseek-v3-671b.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "vllm-tool_chat_template_deepseekv31.jinja",
    "ollama-deepseek-v2.5-236b.jinja",
    "moonshotai-Kimi-K3.jinja",
    "muse-glimmer.jinja",
    "vllm-tool_chat_template_llama3.2_pythonic.jinja",
    "vllm-tool_chat_template_llama4_pythonic.jinja",
]


@pytest.mark.parametrize("name", REAL)
def test_real_template_derives_its_call(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"the corpus is not at {CORPUS}")
    source = path.read_text(encoding="utf-8")
    verdict = check_template(source, builtins=False, bos_token="<s>", eos_token="</s>")
    assert verdict.verdict == "reads", verdict.reason
