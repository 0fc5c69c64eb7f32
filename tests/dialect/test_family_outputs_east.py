"""Outputs of 2025-2026 families, read with the spec detection and derivation give their templates.

Each ``like-*`` template (tests/fixtures/templates/invented/README.md says what it resembles) gets
rows written as a model of that family writes: reasoning before the calls (or inside an unclosed
block), prose before calls, several calls, stray whitespace, a missing closer, the end-of-turn
token as text, a call quoted in reasoning that must not run. The reply is parsed the way the
front end parses it: with the template's own end-of-turn markers and whatever its generation
prompt already wrote (an open ``<think>``). Both the detected spec (builtins allowed) and the spec
derived alone (``builtins=False``) must read every row, batch and streamed in random chunks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.frontend.render import prompt_prefill
from tooldialect.parse import StreamParser, parse_output
from tooldialect.prompt.template import ChatTemplate
from tooldialect.prompt.turns import end_of_turn_markers
from tooldialect.verify import detect_dialect

INVENTED = Path(__file__).parent.parent / "fixtures" / "templates" / "invented"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "strict": {"type": "boolean"},
                },
            },
        },
    }
    for name in ("get_weather", "get_time")
]
W, T = "get_weather", "get_time"
PARIS = {"city": "Paris", "days": 2}
OSLO = {"city": "Oslo"}
SKIP = "<any>"  # reasoning not checked

Calls = list[tuple[str, dict[str, Any]]]

# (template, output, calls, content, reasoning)
ROWS: list[tuple[str, str, Calls, str | None, str | None]] = [
    # Kimi K2 Thinking: reasoning, prose, then the section; ids functions.NAME:IDX
    (
        "like-kimi-k2-thinking.jinja",
        "<think>The user wants the weather.</think>Let me check."
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris", "days": 2}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        [(W, PARIS)],
        "Let me check.",
        "The user wants the weather.",
    ),
    (
        "like-kimi-k2-thinking.jinja",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city":"Paris","days":2}<|tool_call_end|>'
        "<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>"
        '{"city":"Oslo"}<|tool_call_end|><|im_end|>',  # the section's closer never written
        [(W, PARIS), (T, OSLO)],
        None,
        None,
    ),
    (
        "like-kimi-k2-thinking.jinja",
        "<think>I need the weather first.<|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris", "days": 2}'
        "<|tool_call_end|><|tool_calls_section_end|>",  # K2 skips </think> before its section
        [(W, PARIS)],
        None,
        "I need the weather first.",
    ),
    (
        "like-kimi-k2-thinking.jinja",
        "<think>Should I write <|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>"
        "{}<|tool_call_end|>? No, I know it.</think>It is sunny in Paris.",
        [],
        "It is sunny in Paris.",
        SKIP,
    ),
    (
        "like-kimi-k3.jinja",
        "<think>Two lookups.</think> <|tool_calls_open|> <|tool_call_begin|> "
        "functions.get_weather:0 "
        '<|tool_call_argument_begin|> {"city": "Paris", "days": 2} <|tool_call_end|>\n'
        '<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"city": "Oslo"}'
        "<|tool_call_end|> <|tool_calls_close|>",
        [(W, PARIS), (T, OSLO)],
        None,
        "Two lookups.",
    ),
    (
        "like-kimi-k3.jinja",
        "Checking.<|tool_calls_open|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris", "days": 2}<|tool_call_end|><|im_end|>',
        [(W, PARIS)],
        "Checking.",
        None,
    ),
    # MiniMax M2.1: the generation prompt opened <think>
    (
        "like-minimax-m2.1.jinja",
        "The user asks for the weather.\n</think>\n\n<minimax:tool_call>\n"
        '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        '<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
        [(W, PARIS)],
        None,
        "The user asks for the weather.",
    ),
    (
        "like-minimax-m2.1.jinja",
        "Plan.\n</think>\n\nChecking both.\n<minimax:tool_call>\n"
        '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n'
        '<invoke name="get_time">\n<parameter name="city">Oslo</parameter>\n</invoke>\n',
        [(W, {"city": "Paris"}), (T, OSLO)],
        "Checking both.",
        "Plan.",
    ),
    (
        "like-minimax-m2.1.jinja",
        'ok\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
        '<parameter name="city">Paris</parameter>\n<parameter name="tags">["rain", "wind"]'
        '</parameter>\n<parameter name="strict">true</parameter>\n</invoke>\n'
        "</minimax:tool_call>[e~[",
        [(W, {"city": "Paris", "tags": ["rain", "wind"], "strict": True})],
        None,
        "ok",
    ),
    (
        "like-minimax-m3.jinja",
        '<think>\nSimple.\n</think>\n\n<mmx:tool_call>\n<mmx:invoke name="get_weather">\n'
        '<mmx:parameter name="city">Paris</mmx:parameter>\n<mmx:parameter name="days">2'
        "</mmx:parameter>\n</mmx:invoke>\n</mmx:tool_call>[e~[\n",
        [(W, PARIS)],
        None,
        "Simple.",
    ),
    (
        "like-minimax-m3.jinja",
        'Sure.\n<mmx:tool_call>\n<mmx:invoke name="get_weather">\n<mmx:parameter name="city">'
        'Paris</mmx:parameter>\n</mmx:invoke>\n<mmx:invoke name="get_time">\n'
        '<mmx:parameter name="city">Oslo</mmx:parameter>\n</mmx:invoke>\n',
        [(W, {"city": "Paris"}), (T, OSLO)],
        "Sure.",
        None,
    ),
    # DeepSeek V3.2 DSML (chat mode: the generation prompt wrote </think>)
    (
        "like-deepseek-v3.2-dsml.jinja",
        'Let me look it up.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>",
        [(W, PARIS)],
        "Let me look it up.",
        None,
    ),
    (
        "like-deepseek-v3.2-dsml.jinja",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">2024</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="tags" string="false">["a", "b"]</｜DSML｜parameter>\n'
        '</｜DSML｜invoke>\n<｜DSML｜invoke name="get_time">\n'
        '<｜DSML｜parameter name="city" string="true">Oslo</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n",  # the section's closer missing
        [(W, {"city": "2024", "tags": ["a", "b"]}), (T, OSLO)],
        None,
        None,
    ),
    (
        "like-deepseek-v4.jinja",
        '<｜DSML｜tool_calls>\n<｜DSML｜call name="get_weather">\n'
        '<｜DSML｜arg name="city" type="string">Paris</｜DSML｜arg>\n'
        '<｜DSML｜arg name="days" type="integer">2</｜DSML｜arg>\n'
        "</｜DSML｜call>\n</｜DSML｜tool_calls>",
        [(W, PARIS)],
        None,
        None,
    ),
    (
        "like-deepseek-v4.jinja",
        'Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜call name="get_weather">\n'
        '<｜DSML｜arg name="city" type="string">Paris</｜DSML｜arg>\n'
        '<｜DSML｜arg name="strict" type="boolean">false</｜DSML｜arg>\n'
        '<｜DSML｜arg name="tags" type="array">["x"]</｜DSML｜arg>\n'
        "</｜DSML｜call>\n</｜DSML｜tool_calls><｜end▁of▁sentence｜>",
        [(W, {"city": "Paris", "strict": False, "tags": ["x"]})],
        "Checking.",
        None,
    ),
    # InternLM 2.5
    (
        "like-internlm2.5.jinja",
        "I will check the weather.<|action_start|><|plugin|>\n"
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}<|action_end|>',
        [(W, PARIS)],
        "I will check the weather.",
        None,
    ),
    (
        "like-internlm2.5.jinja",
        '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Paris", '
        '"days": 2}}\n<|action_end|>\n<|im_end|>',
        [(W, PARIS)],
        None,
        None,
    ),
    (
        "like-internlm2.5.jinja",
        '<|action_start|><|plugin|>\n{"name": "get_time", "parameters": {"city": "Oslo"}}',
        [(T, OSLO)],  # the closer missing at the end
        None,
        None,
    ),
    # Hunyuan A13B: every reply is <think>…</think><answer>…</answer>, calls inside the answer
    (
        "like-hunyuan-a13b.jinja",
        "<think>\nNeed the weather.\n</think>\n<answer>\n<tool_calls>"
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]</tool_calls>\n'
        "</answer>",
        [(W, PARIS)],
        None,
        "Need the weather.",
    ),
    (
        "like-hunyuan-a13b.jinja",
        "<think>\n\n</think>\n<answer>\nIt is sunny.\n</answer><|eos|>",
        [],
        "It is sunny.",
        SKIP,
    ),
    (
        "like-hunyuan-a13b.jinja",
        "<think>\nBoth.\n</think>\n<answer>\nChecking.<tool_calls>"
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, '
        '{"name": "get_time", "arguments": {"city": "Oslo"}}]</tool_calls>\n</answer>',
        [(W, PARIS), (T, OSLO)],
        "Checking.",
        "Both.",
    ),
    # MiniCPM4 / MiniCPM5-like
    (
        "like-minicpm4.jinja",
        '<|tool_call_start|>\n```python\nget_weather(city="Paris", days=2)\n```\n<|tool_call_end|>',
        [(W, PARIS)],
        None,
        None,
    ),
    (
        "like-minicpm4.jinja",
        "<think>\nTwo calls.\n</think>\n<|tool_call_start|>\n```python\n"
        'get_weather(city="Paris", days=2)\nget_time(city="Oslo")\n```\n<|tool_call_end|>'
        "<|im_end|>",
        [(W, PARIS), (T, OSLO)],
        None,
        "Two calls.",
    ),
    (
        "like-minicpm5.jinja",
        "Weather needed.\n</think>\n\n<|tool_call_start|>"
        '[get_weather(city="Paris", days=2), get_time(city="Oslo")]<|tool_call_end|>',
        [(W, PARIS), (T, OSLO)],
        None,
        "Weather needed.",
    ),
    # StepFun Step3 (the generation prompt opened <think>)
    (
        "like-step3.jinja",
        "Need to call.\n</think>\n<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        '</steptml:parameter><steptml:parameter name="days">2</steptml:parameter>'
        "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        [(W, PARIS)],
        None,
        "Need to call.",
    ),
    (
        "like-step3.jinja",
        "x\n</think>\n<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="get_weather">\n<steptml:parameter name="city">Paris'
        "</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜>\n<｜tool_call_begin｜>function"
        '<｜tool_sep｜><steptml:invoke name="get_time">\n<steptml:parameter name="city">Oslo'
        "</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜><|EOT|>",
        [(W, {"city": "Paris"}), (T, OSLO)],
        None,
        "x",
    ),
    # GLM-4.7 (the generation prompt opened <think>)
    (
        "like-glm-4.7.jinja",
        "Let me check.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
        "</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
        [(W, PARIS)],
        None,
        "Let me check.",
    ),
    (
        "like-glm-4.7.jinja",
        "Two.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris"
        "</arg_value>\n</tool_call>\n<tool_call>get_time\n<arg_key>city</arg_key>\n"
        "<arg_value>Oslo</arg_value>\n</tool_call><|user|>",
        [(W, {"city": "Paris"}), (T, OSLO)],
        None,
        "Two.",
    ),
    # Qwen3.5-like (the generation prompt opened <think>)
    (
        "like-qwen3.5.jinja",
        "The user wants the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n"
        "</tool_call>",
        [(W, PARIS)],
        None,
        "The user wants the weather.",
    ),
    (
        "like-qwen3.5.jinja",
        "ok\n</think>\n\nI'll look both up.\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=get_time>\n<parameter=city>\nOslo\n</parameter>\n</function>\n<|im_end|>",
        [(W, {"city": "Paris"}), (T, OSLO)],
        "I'll look both up.",
        "ok",
    ),
    # ERNIE 4.5 thinking, Ring 2, Seed-OSS 2-like
    (
        "like-ernie-4.5.jinja",
        "I should call the tool.\n</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n',
        [(W, PARIS)],
        None,
        "I should call the tool.",
    ),
    (
        "like-ring-2.jinja",
        '<think>\nplan\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Paris", "days": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_time", '
        '"arguments": {"city": "Oslo"}}\n</tool_call><|role_end|>',
        [(W, PARIS), (T, OSLO)],
        None,
        "plan",
    ),
    (
        "like-seed-oss-2.jinja",
        "<seed:think>Weather, then time.</seed:think>\n<seed:tool_calls>\n<seed:tool_call>\n"
        "<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>2</parameter>\n"
        "</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=get_time>\n"
        "<parameter=city>Oslo</parameter>\n</function>\n</seed:tool_call>\n</seed:tool_calls>",
        [(W, PARIS), (T, OSLO)],
        None,
        "Weather, then time.",
    ),
    # variants: a channel or section left out, blocks repeated, whitespace
    (
        "like-hunyuan-a13b.jinja",
        "<think>\nx\n</think>\n<tool_calls>"  # no <answer> channel around the calls
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]</tool_calls>',
        [(W, PARIS)],
        None,
        "x",
    ),
    (
        "like-minimax-m2.1.jinja",
        'x\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
        '<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>\n'
        '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="city">Oslo</parameter>\n'
        "</invoke>\n</minimax:tool_call>",  # one section per call
        [(W, {"city": "Paris"}), (T, OSLO)],
        None,
        "x",
    ),
    (
        "like-seed-oss-2.jinja",
        "<seed:think>x</seed:think>\n<seed:tool_call>\n<function=get_weather>\n"
        "<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>",  # no outer section
        [(W, {"city": "Paris"})],
        None,
        "x",
    ),
    (
        "like-kimi-k3.jinja",
        "<|tool_calls_open|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"}<|tool_call_end|><|tool_calls_close|><|tool_calls_open|>'
        '<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"city": "Oslo"}'
        "<|tool_call_end|><|tool_calls_close|>",
        [(W, {"city": "Paris"}), (T, OSLO)],
        None,
        None,
    ),
    (
        "like-glm-4.7.jinja",
        "x</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        '<arg_key>tags</arg_key><arg_value>["a", "b"]</arg_value></tool_call>',
        [(W, {"city": "Paris", "tags": ["a", "b"]})],
        None,
        "x",
    ),
    (
        "like-internlm2.5.jinja",
        'Sure.<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}'
        '<|action_end|>\n<|action_start|><|plugin|>\n{"name": "get_time", "parameters": '
        '{"city": "Oslo"}}<|action_end|>',
        [(W, {"city": "Paris"}), (T, OSLO)],
        "Sure.",
        None,
    ),
    (
        "like-step3.jinja",
        "x\n</think>\n<｜tool_call_begin｜>function<｜tool_sep｜>"  # no calls section around it
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        "</steptml:parameter></steptml:invoke><｜tool_call_end｜>",
        [(W, {"city": "Paris"})],
        None,
        "x",
    ),
    (
        "like-minicpm5.jinja",
        'x\n</think>\n\n<|tool_call_start|>\n[get_weather(city="Paris", days=2)]\n'
        "<|tool_call_end|>",
        [(W, PARIS)],
        None,
        "x",
    ),
    (
        "like-ernie-4.5.jinja",
        'x\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n'
        "</tool_call>",
        [(W, {"city": "Paris"}), (T, OSLO)],
        None,
        "x",
    ),
]


@dataclass(frozen=True)
class Setup:
    spec: DialectSpec
    prefill: str
    reasoning_open: bool
    end_of_turn: tuple[str, ...]


_SETUPS: dict[tuple[str, bool], Setup] = {}


def _setup(name: str, *, builtins: bool) -> Setup:
    """What the front end parses a reply with (frontend/request.py does the same)."""
    key = (name, builtins)
    if key not in _SETUPS:
        source = (INVENTED / name).read_text(encoding="utf-8")
        spec = detect_dialect(source, builtins=builtins)
        template = ChatTemplate(source)
        prompt = template.render(
            [{"role": "user", "content": "Weather in Paris?"}],
            tools=TOOLS,
            add_generation_prompt=True,
        )
        prefill = prompt_prefill(prompt, spec)
        reasoning_open = spec.reasoning is not None and prefill in spec.reasoning.opens()
        _SETUPS[key] = Setup(
            spec, "" if reasoning_open else prefill, reasoning_open, end_of_turn_markers(template)
        )
    return _SETUPS[key]


def _calls(out: Any) -> Calls:
    return [(c.name, c.arguments) for c in out.tool_calls]


def _cases() -> list[Any]:
    return [
        pytest.param(*row, builtins, id=f"{row[0][5:-6]}-{i}-{'detect' if builtins else 'derive'}")
        for i, row in enumerate(ROWS)
        for builtins in (True, False)
    ]


@pytest.mark.parametrize(("name", "text", "calls", "content", "reasoning", "builtins"), _cases())
def test_family_output_is_read(
    name: str,
    text: str,
    calls: Calls,
    content: str | None,
    reasoning: str | None,
    builtins: bool,
) -> None:
    s = _setup(name, builtins=builtins)
    kwargs: dict[str, Any] = {
        "tools": TOOLS,
        "reasoning_open": s.reasoning_open,
        "prefill": s.prefill,
        "end_of_turn": s.end_of_turn,
    }
    out = parse_output(text, s.spec, **kwargs)
    assert _calls(out) == calls, s.spec.id
    assert (out.content or None) == content
    if reasoning != SKIP:
        assert (out.reasoning_content or "").strip() == (reasoning or "")
    rng = random.Random(text)
    streamed = feed_in_random_chunks(StreamParser(s.spec, **kwargs), text, rng, most=7)
    assert _calls(streamed) == calls
    assert (streamed.content or None) == (out.content or None)


# the Asian labs' families and their next versions (other like-* templates have their own rows)
FAMILIES = {
    "like-deepseek-v3.2-dsml.jinja",
    "like-deepseek-v4.jinja",
    "like-ernie-4.5.jinja",
    "like-glm-4.7.jinja",
    "like-hunyuan-a13b.jinja",
    "like-internlm2.5.jinja",
    "like-kimi-k2-thinking.jinja",
    "like-kimi-k3.jinja",
    "like-minicpm4.jinja",
    "like-minicpm5.jinja",
    "like-minimax-m2.1.jinja",
    "like-minimax-m3.jinja",
    "like-qwen3.5.jinja",
    "like-ring-2.jinja",
    "like-seed-oss-2.jinja",
    "like-step3.jinja",
}


def test_every_family_template_has_rows() -> None:
    assert {r[0] for r in ROWS} == FAMILIES
    assert all((INVENTED / name).is_file() for name in FAMILIES)
