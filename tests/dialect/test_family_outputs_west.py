"""Model outputs as 2025-2026 families write them, read with the spec detected from a template
like theirs (tests/fixtures/templates/invented/like-*.jinja).

Rows carry what real models of the family write: stray whitespace, several calls, prose before
the calls, reasoning (closed, or opened by the generation prompt), a call quoted inside reasoning
that must not run, a missing closer at the end, the end-of-turn marker after the calls. Each row is
checked with detection as shipped and with derivation alone (``builtins=False``), batch and
streamed in random chunks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import detect_dialect

INVENTED = Path(__file__).parent.parent / "fixtures" / "templates" / "invented"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "strict": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    }
    for name in ("get_weather", "get_time")
]
W, T = "get_weather", "get_time"
PARIS = {"city": "Paris", "days": 2}
OSLO = {"city": "Oslo"}


@dataclass(frozen=True)
class Row:
    template: str
    text: str
    calls: list[tuple[str, dict[str, Any]]]
    content: str | None = None
    reasoning: str | None = None
    """Text the reasoning must hold (``None``: no reasoning)."""
    reasoning_open: bool = False
    end_of_turn: list[str] = field(default_factory=list)


ROWS: list[Row] = [
    # LFM2.5: pythonic list between special tokens
    Row(
        "like-lfm2.5-tools.jinja",
        '<|tool_call_start|>[get_weather(city="Paris", days=2)]<|tool_call_end|>',
        [(W, PARIS)],
    ),
    Row(
        "like-lfm2.5-tools.jinja",
        "<think>Two lookups.</think>Checking.<|tool_call_start|>"
        '[get_weather(city="Paris", days=2), get_time(city="Oslo")]<|tool_call_end|>',
        [(W, PARIS), (T, OSLO)],
        "Checking.",
        "Two lookups.",
    ),
    Row(
        "like-lfm2.5-tools.jinja",
        '<think>Maybe <|tool_call_start|>[get_time(city="Rome")]'
        '<|tool_call_end|>? No.</think><|tool_call_start|>[get_weather(city="Paris", days=2)]'
        "<|tool_call_end|><|im_end|>",
        [(W, PARIS)],
        None,
        "No.",
        end_of_turn=["<|im_end|>"],
    ),
    Row(
        "like-lfm2.5-tools.jinja",
        '<|tool_call_start|>[get_weather(city="Paris", days=2)]',
        [(W, PARIS)],
    ),  # stopped before the closer
    Row(
        "like-lfm2-json-calls.jinja",
        '<|tool_call_start|>[{"name": "get_weather", '
        '"arguments": {"city": "Paris", "days": 2}}]<|tool_call_end|>',
        [(W, PARIS)],
    ),
    Row(
        "like-lfm2-json-calls.jinja",
        'Sure!\n<|tool_call_start|>[{"name": "get_weather", '
        '"arguments": {"city": "Paris", "days": 2}}, {"name": "get_time", "arguments": '
        '{"city": "Oslo"}}]<|tool_call_end|>',
        [(W, PARIS), (T, OSLO)],
        "Sure!",
    ),
    # Phi-4-mini
    Row(
        "like-phi-4-mini-tools.jinja",
        '<|tool_call|>[{"name": "get_weather", "arguments": '
        '{"city": "Paris", "days": 2}}]<|/tool_call|>',
        [(W, PARIS)],
    ),
    Row(
        "like-phi-4-mini-tools.jinja",
        '<|tool_call|>[{"name":"get_time","arguments":{"city":"Oslo"}}]<|/tool_call|><|end|>',
        [(T, OSLO)],
        end_of_turn=["<|end|>"],
    ),
    # Granite 3.x: a JSON list after <|tool_call|>, no closer
    Row(
        "like-granite-3-tools.jinja",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]',
        [(W, PARIS)],
    ),
    Row(
        "like-granite-3-tools.jinja",
        '<|tool_call|>[{"name": "get_weather", "arguments": '
        '{"city": "Paris", "days": 2}}, {"name": "get_time", "arguments": {"city": "Oslo"}}]',
        [(W, PARIS), (T, OSLO)],
    ),
    # Nemotron Nano v2: <TOOLCALL>, reasoning opened by the generation prompt
    Row(
        "like-nemotron-nano-v2-chatml.jinja",
        "The user asks for Paris.\n</think>\n\n<TOOLCALL>"
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]</TOOLCALL>',
        [(W, PARIS)],
        None,
        "The user asks for Paris.",
        reasoning_open=True,
    ),
    Row(
        "like-nemotron-nano-v2-chatml.jinja",
        "Two cities, two calls.\n</think>\n<TOOLCALL>"
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, {"name": '
        '"get_time", "arguments": {"city": "Oslo"}}]</TOOLCALL>',
        [(W, PARIS), (T, OSLO)],
        None,
        "Two cities, two calls.",
        reasoning_open=True,
    ),
    Row(
        "like-nemotron-nano-v2-chatml.jinja",
        '<think></think><TOOLCALL>[{"name": "get_time", "arguments": {"city": "Oslo"}}]</TOOLCALL>',
        [(T, OSLO)],
    ),
    # Nemotron 3 Nano: XML calls
    Row(
        "like-nemotron-3-nano.jinja",
        "Looking it up.\n</think>\n<tool_call>\n<function="
        "get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>"
        "\n</function>\n</tool_call>",
        [(W, PARIS)],
        None,
        "Looking it up.",
        reasoning_open=True,
    ),
    Row(
        "like-nemotron-3-nano.jinja",
        "<think></think><tool_call>\n<function=get_weather>\n"
        '<parameter=city>\nParis\n</parameter>\n<parameter=tags>\n["a", "b"]\n</parameter>\n'
        "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=city>\nOslo\n"
        "</parameter>\n</function>\n</tool_call>",
        [(W, {"city": "Paris", "tags": ["a", "b"]}), (T, OSLO)],
    ),
    # Apertus: {NAME: args} list, inner reasoning tokens
    Row(
        "like-apertus.jinja",
        '<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 2}}]<|tools_suffix|>',
        [(W, PARIS)],
    ),
    Row(
        "like-apertus.jinja",
        "<|inner_prefix|>Need both.<|inner_suffix|><|tools_prefix|>"
        '[{"get_weather": {"city": "Paris", "days": 2}}, {"get_time": {"city": "Oslo"}}]'
        "<|tools_suffix|>",
        [(W, PARIS), (T, OSLO)],
        None,
        "Need both.",
    ),
    # Magistral: [THINK] then [TOOL_CALLS]name[ARGS]{...}
    Row(
        "like-magistral.jinja",
        '[THINK]Paris weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}',
        [(W, PARIS)],
        None,
        "Paris weather.",
    ),
    Row(
        "like-magistral.jinja",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}'
        '[TOOL_CALLS]get_time[ARGS]{"city": "Oslo"}</s>',
        [(W, PARIS), (T, OSLO)],
        end_of_turn=["</s>"],
    ),
    Row(
        "like-magistral.jinja",
        '[THINK]Should I use [TOOL_CALLS]get_time[ARGS]{"city": "Rome"}? No.[/THINK]It is sunny.',
        [],
        "It is sunny.",
        "No.",
    ),
    # Devstral: [CALL_ID]
    Row(
        "like-devstral.jinja",
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris", "days": 2}',
        [(W, PARIS)],
    ),
    # OLMo 3: one Python call per line in <function_calls>
    Row(
        "like-olmo-3.jinja",
        '<function_calls>get_weather(city="Paris", days=2)\nget_time(city="Oslo")</function_calls>',
        [(W, PARIS), (T, OSLO)],
    ),
    Row(
        "like-olmo-3.jinja",
        'I will check.<function_calls>\nget_weather(city="Paris", days=2)\n</function_calls>',
        [(W, PARIS)],
        "I will check.",
    ),
    # SmolLM3: hermes blocks; /no_think turns carry an empty think block
    Row(
        "like-smollm3-tools.jinja",
        "<think>\nuser wants weather\n</think>\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>',
        [(W, PARIS)],
        None,
        "user wants weather",
    ),
    Row(
        "like-smollm3-tools.jinja",
        '<think>\n\n</think>\n<tool_call>\n{"name": "get_time", '
        '"arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>',
        [(T, OSLO)],
        end_of_turn=["<|im_end|>"],
    ),
    # Command A: actions list with ids, thinking, response channel
    Row(
        "like-command-a.jinja",
        "<|START_THINKING|>Look up Paris.<|END_THINKING|><|START_ACTION|>"
        '[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": '
        '"Paris", "days": 2}}\n]<|END_ACTION|>',
        [(W, PARIS)],
        None,
        "Look up Paris.",
    ),
    Row(
        "like-command-a.jinja",
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": '
        '"get_weather", "parameters": {"city": "Paris", "days": 2}},\n    {"tool_call_id": "1", '
        '"tool_name": "get_time", "parameters": {"city": "Oslo"}}\n]<|END_ACTION|>',
        [(W, PARIS), (T, OSLO)],
    ),
    # Jamba
    Row(
        "like-jamba.jinja",
        ' <tool_calls>[{"name": "get_weather", "arguments": {"city": '
        '"Paris", "days": 2}}]</tool_calls>',
        [(W, PARIS)],
    ),
    # Falcon-H1: hermes-like, prose first
    Row(
        "like-falcon-h1.jinja",
        'Let me check.\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n<tool_call>\n{"name": '
        '"get_time", "arguments": {"city": "Oslo"}}\n</tool_call>',
        [(W, PARIS), (T, OSLO)],
        "Let me check.",
    ),
    # EXAONE 4: <thought> reasoning, then a call
    Row(
        "like-exaone-4.jinja",
        "<thought>\nThe user wants Paris.\n</thought>\n\n<tool_call>"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</tool_call>',
        [(W, PARIS)],
        None,
        "The user wants Paris.",
    ),
    Row(
        "like-exaone-4.jinja",
        '<thought>\nI could write <tool_call>{"name": "get_time", '
        '"arguments": {"city": "Rome"}}</tool_call> but Paris first.\n</thought>\n\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'
        "</tool_call>[|endofturn|]",
        [(W, PARIS)],
        None,
        "but Paris first.",
        end_of_turn=["[|endofturn|]"],
    ),
    # Hermes 4
    Row(
        "like-hermes-4.jinja",
        "<think>\nweather in Paris\n</think>\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n',
        [(W, PARIS)],
        None,
        "weather in Paris",
    ),
    Row(
        "like-hermes-4.jinja",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}',
        [(W, PARIS)],
    ),  # stopped before </tool_call>
    # Llama 4 pythonic, markerless
    Row(
        "like-llama-4-pythonic.jinja",
        '[get_weather(city="Paris", days=2), get_time(city="Oslo")]',
        [(W, PARIS), (T, OSLO)],
    ),
    # FunctionGemma: keyed values, strings between <escape> tokens
    Row(
        "like-functiongemma.jinja",
        "<start_function_call>call:get_weather{city:<escape>Paris"
        "<escape>,days:2}<end_function_call>",
        [(W, PARIS)],
    ),
    Row(
        "like-functiongemma.jinja",
        "<start_function_call>call:get_weather{city:<escape>Paris"
        "<escape>,days:2}<end_function_call><start_function_call>call:get_time{city:<escape>"
        "Oslo<escape>}<end_function_call>",
        [(W, PARIS), (T, OSLO)],
    ),
    Row(
        "like-functiongemma.jinja",
        "<start_function_call>call:get_weather{city:<escape>Paris,"
        " France<escape>,tags:[<escape>a<escape>,<escape>b<escape>],strict:true}",
        [(W, {"city": "Paris, France", "tags": ["a", "b"], "strict": True})],
    ),
    Row(
        "like-functiongemma.jinja",
        "<start_function_call>call:get_time{city:<escape>Oslo"
        "<escape>}<end_function_call><start_function_response>",
        [(T, OSLO)],
        end_of_turn=["<start_function_response>"],
    ),
    # Gemma 3n tool_code fence
    Row(
        "like-gemma-3n-tool-code.jinja",
        '```tool_code\nget_weather(city="Paris", days=2)\n```',
        [(W, PARIS)],
    ),
    Row(
        "like-gemma-3n-tool-code.jinja",
        'Let me see.\n```tool_code\nget_time(city="Oslo")\n```\n',
        [(T, OSLO)],
        "Let me see.",
    ),
    # Arcee: a JSON list inside one <tool_call>
    Row(
        "like-arcee-afm.jinja",
        '<tool_call>\n[{"name": "get_weather", "arguments": {"city": '
        '"Paris", "days": 2}}, {"name": "get_time", "arguments": {"city": "Oslo"}}]\n'
        "</tool_call>",
        [(W, PARIS), (T, OSLO)],
    ),
    # Muse-like: reflect reasoning, invoke section
    Row(
        "like-muse.jinja",
        "<|reflect|>Paris.<|/reflect|><|actions|><|invoke|>get_weather"
        '<|with|>{"city": "Paris", "days": 2}<|/invoke|><|invoke|>get_time<|with|>'
        '{"city": "Oslo"}<|/invoke|><|/actions|>',
        [(W, PARIS), (T, OSLO)],
        None,
        "Paris.",
    ),
    Row(
        "like-muse.jinja",
        'On it. <|actions|><|invoke|>get_weather<|with|>{"city": "Paris", "days": 2}<|/invoke|>',
        [(W, PARIS)],
        "On it.",
    ),  # section never closed
]

_SPECS: dict[tuple[str, bool], DialectSpec] = {}


def _spec(name: str, builtins: bool) -> DialectSpec:
    if (name, builtins) not in _SPECS:
        source = (INVENTED / name).read_text(encoding="utf-8")
        _SPECS[(name, builtins)] = detect_dialect(source, builtins=builtins)
    return _SPECS[(name, builtins)]


def _calls(out: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in out.tool_calls]


def _check(out: Any, row: Row) -> None:
    assert _calls(out) == row.calls
    assert (out.content or None) == row.content
    if row.reasoning is None:
        assert not out.reasoning_content
    else:
        assert row.reasoning in (out.reasoning_content or "")


@pytest.mark.parametrize("builtins", [True, False], ids=["detected", "derived"])
@pytest.mark.parametrize("row", ROWS, ids=[f"{r.template[5:-6]}-{i}" for i, r in enumerate(ROWS)])
def test_family_output_is_read(row: Row, builtins: bool) -> None:
    spec = _spec(row.template, builtins)
    opts: dict[str, Any] = {"reasoning_open": row.reasoning_open}
    out = parse_output(row.text, spec, tools=TOOLS, end_of_turn=row.end_of_turn, **opts)
    _check(out, row)
    rng = random.Random(row.text)
    for _ in range(2):
        parser = StreamParser(spec, tools=TOOLS, end_of_turn=row.end_of_turn, **opts)
        _check(feed_in_random_chunks(parser, row.text, rng), row)


def test_every_family_template_here_has_rows() -> None:
    """The 21 templates of these families that render past calls (other families' ``like-*``
    templates have their own tables)."""
    names = {r.template for r in ROWS}
    assert len(names) >= 21
    assert all((INVENTED / n).is_file() for n in names)


def test_a_kept_builtin_takes_the_reasoning_markers_the_template_writes() -> None:
    """EXAONE-like: hermes' call tags read the template's call, but its reasoning is
    ``<thought>``, which hermes does not know; ``<think>`` stays readable."""
    from tooldialect.verify import explain_detection

    found = explain_detection((INVENTED / "like-exaone-4.jinja").read_text(encoding="utf-8"))
    assert found.chosen == "builtin" and found.spec.id == "hermes"
    assert found.spec.reasoning is not None
    assert (found.spec.reasoning.open, found.spec.reasoning.close) == ("<thought>", "</thought>")
    assert "<think>" in found.spec.reasoning.alt_open
    out = parse_output("<think>hm</think>Sunny.", found.spec, tools=TOOLS)
    assert out.reasoning_content == "hm" and out.content == "Sunny."


def test_a_builtin_whose_reasoning_the_template_mentions_is_unchanged() -> None:
    from tooldialect.dialect.builtins import get_builtin

    source = (INVENTED / "like-hermes-4.jinja").read_text(encoding="utf-8")
    assert detect_dialect(source) == get_builtin("hermes")
