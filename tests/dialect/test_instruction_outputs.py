"""Templates that list tools but never render a past call: the format is read off the tool
instructions, and the spec must read what models of those families write.

The templates are in tests/fixtures/templates/invented/ (``like-*-instructions.jinja`` and
``instructions-only.jinja``); each shows its call format only as an example in the prose (a
Python list, a JSON list, a JSON object with ``<function-name>`` placeholders, an XML call with
``example_function_name``). Derivation alone (``builtins=False``) must read the format from the
instructions instead of falling back to the polyfill, and the rows below, written as those
models write (stray whitespace, several calls, prose before the calls, reasoning, a call quoted
inside reasoning that must not run), must parse the same batch and streamed in random chunks,
with derivation alone and with detection as shipped.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import check_own_call, detect_dialect

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
                },
            },
        },
    }
    for name in ("get_weather", "get_time")
]
W, T = "get_weather", "get_time"
PARIS = {"city": "Paris", "days": 2}

# template -> the body kind read off its instructions
KINDS = {
    "instructions-only.jinja": "python",
    "like-lfm2-instructions.jinja": "python",
    "like-phi-4-mini-instructions.jinja": "json",
    "like-granite-4-instructions.jinja": "json",
    "like-nemotron-3-instructions.jinja": "element",
}

# (template, output, expected calls, expected content)
ROWS: list[tuple[str, str, list[tuple[str, dict[str, Any]]], str | None]] = [
    (
        "like-lfm2-instructions.jinja",
        '<|tool_call_start|>[get_weather(city="Paris", days=2)]<|tool_call_end|>',
        [(W, PARIS)],
        None,
    ),
    (
        "like-lfm2-instructions.jinja",
        "Checking both.<|tool_call_start|>[get_weather(city='Paris', days=2), "
        'get_time(city="Oslo")]<|tool_call_end|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        "Checking both.",
    ),
    (
        "like-lfm2-instructions.jinja",
        '<think>I could write <|tool_call_start|>[get_time(city="Rome")]<|tool_call_end|> '
        'but weather first.</think><|tool_call_start|>[ get_weather(city="Paris", days=2) ]'
        "<|tool_call_end|>",
        [(W, PARIS)],
        None,
    ),
    (
        "like-lfm2-instructions.jinja",
        "Paris is lovely in spring; no tool needed.",
        [],
        "Paris is lovely in spring; no tool needed.",
    ),
    (
        "like-phi-4-mini-instructions.jinja",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]'
        "<|/tool_call|>",
        [(W, PARIS)],
        None,
    ),
    (
        "like-phi-4-mini-instructions.jinja",
        '<|tool_call|>[{"name":"get_weather","arguments":{"city":"Paris","days":2}}, '
        '{"name": "get_time", "arguments": {"city": "Oslo"}}]<|/tool_call|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        None,
    ),
    (
        "like-phi-4-mini-instructions.jinja",
        'Let me look that up.\n<|tool_call|>[{"name": "get_weather", "arguments": '
        '{"city": "Paris", "strict": true}}]',  # the closer is missing at the end
        [(W, {"city": "Paris", "strict": True})],
        "Let me look that up.",
    ),
    (
        "like-granite-4-instructions.jinja",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n'
        "</tool_call>",
        [(W, PARIS)],
        None,
    ),
    (
        "like-granite-4-instructions.jinja",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n'
        "</tool_call>",
        [(W, PARIS), (T, {"city": "Oslo"})],
        None,
    ),
    (
        "like-granite-4-instructions.jinja",
        'Sure.<tool_call>{"name": "get_time", "arguments": {"city": "Oslo"}}</tool_call>',
        [(T, {"city": "Oslo"})],
        "Sure.",
    ),
    (
        "like-nemotron-3-instructions.jinja",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
        [(W, PARIS)],
        None,
    ),
    (
        "like-nemotron-3-instructions.jinja",
        "The user wants two cities.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=get_time>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>",
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        None,
    ),
    (
        "like-nemotron-3-instructions.jinja",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=strict>\ntrue\n</parameter>\n</function>",  # stopped before </tool_call>
        [(W, {"city": "Paris", "strict": True})],
        None,
    ),
    (
        "instructions-only.jinja",
        '<|act_start|>[get_weather(city="Paris", days=2)]<|act_end|>',
        [(W, PARIS)],
        None,
    ),
]

# the prompt of these templates ends inside an open reasoning block
OPEN_REASONING = {"like-nemotron-3-instructions.jinja"}

_SPECS: dict[tuple[str, bool], DialectSpec] = {}


def _spec(name: str, builtins: bool) -> DialectSpec:
    if (name, builtins) not in _SPECS:
        source = (INVENTED / name).read_text(encoding="utf-8")
        _SPECS[(name, builtins)] = detect_dialect(source, builtins=builtins)
    return _SPECS[(name, builtins)]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_format_is_read_off_the_instructions(name: str) -> None:
    source = (INVENTED / name).read_text(encoding="utf-8")
    spec = _spec(name, False)
    assert spec.origin == "derived"
    assert spec.family == "derived from the template's tool instructions"
    assert spec.primary.body.kind == KINDS[name]
    assert check_own_call(spec, source).ok is None  # there is no past call to check against


def _calls(out: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in out.tool_calls]


@pytest.mark.parametrize("builtins", [False, True], ids=["derived", "detected"])
@pytest.mark.parametrize(
    ("name", "text", "calls", "content"), ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)]
)
def test_instruction_format_reads_model_output(
    name: str,
    text: str,
    calls: list[tuple[str, dict[str, Any]]],
    content: str | None,
    builtins: bool,
) -> None:
    spec = _spec(name, builtins)
    opened = name in OPEN_REASONING
    out = parse_output(text, spec, tools=TOOLS, reasoning_open=opened)
    assert _calls(out) == calls
    assert (out.content or None) == content
    rng = random.Random(text)
    for _ in range(3):
        parser = StreamParser(spec, tools=TOOLS, reasoning_open=opened)
        assert _calls(feed_in_random_chunks(parser, text, rng)) == calls
        assert (parser.result.content or None) == content


def test_a_call_quoted_in_reasoning_does_not_run() -> None:
    spec = _spec("like-lfm2-instructions.jinja", False)
    text = '<think>maybe <|tool_call_start|>[get_time(city="Rome")]<|tool_call_end|></think>Done.'
    out = parse_output(text, spec, tools=TOOLS)
    assert out.tool_calls == [] and out.content == "Done."
    assert "get_time" in (out.reasoning_content or "")


def test_a_builtin_that_cannot_read_the_instructions_example_is_rejected() -> None:
    """No past call to check a signature's pick against: the instructions' example is the
    evidence. Phi-4's builtin writes ``functools[...]``; this template tells the model to write
    ``<|tool_call|>[...]<|/tool_call|>``. The builtin's form stays readable (parse-only)."""
    from tooldialect.verify import explain_detection

    source = (INVENTED / "like-phi-4-mini-instructions.jinja").read_text(encoding="utf-8")
    found = explain_detection(source)
    assert found.tried == "phi-4" and found.chosen == "derived"
    assert "tool instructions" in found.reason
    old = 'functools[{"name": "get_time", "arguments": {"city": "Oslo"}}]'
    assert _calls(parse_output(old, found.spec, tools=TOOLS)) == [(T, {"city": "Oslo"})]


@pytest.mark.parametrize(
    "name", ["like-lfm2-instructions.jinja", "like-nemotron-3-instructions.jinja"]
)
def test_a_builtin_that_reads_the_instructions_example_is_kept(name: str) -> None:
    source = (INVENTED / name).read_text(encoding="utf-8")
    spec = detect_dialect(source)
    assert spec.origin == "builtin"


def _instructed(instructions: str) -> str:
    """A minimal template that lists tools, shows ``instructions`` and renders no past call."""
    return (
        "{%- if tools %}<|sys|>Tools: {{ tools | tojson }}\n" + instructions + "<|/sys|>\n"
        "{%- endif %}{%- for m in messages %}<|{{ m.role }}|>{{ m.content or '' }}<|end|>\n"
        "{%- endfor %}{%- if add_generation_prompt %}<|assistant|>{%- endif %}"
    )


PHRASINGS = [
    (  # a JSON object with other key names, inside a special-token pair
        'To use a tool write <function_call>{"function": "function_name", "parameters": '
        '{"param_1": "value"}}</function_call>.',
        '<function_call>{"function": "get_time", "parameters": {"city": "Oslo"}}</function_call>',
    ),
    (  # one unbracketed Python call between start/end tokens
        'Call a tool like this: <|python_start|>function_name(arg1="value1", arg2=2)<|python_end|>',
        '<|python_start|>get_time(city="Oslo")<|python_end|>',
    ),
    (  # an XML call with attribute placeholders
        'Respond with <calls><invoke name="function_name"><parameter name="arg1">value1'
        "</parameter></invoke></calls> to call a function.",
        '<calls><invoke name="get_time"><parameter name="city">Oslo</parameter></invoke></calls>',
    ),
    (  # a JSON list whose entries are elided
        'Write calls as <tool_calls>[{"name": ..., "arguments": {...}}, ...]</tool_calls>.',
        '<tool_calls>[{"name": "get_time", "arguments": {"city": "Oslo"}}]</tool_calls>',
    ),
]


@pytest.mark.parametrize(("instructions", "output"), PHRASINGS)
def test_several_instruction_phrasings_are_read(instructions: str, output: str) -> None:
    spec = detect_dialect(_instructed(instructions), builtins=False)
    assert spec.family == "derived from the template's tool instructions", spec.id
    out = parse_output(output, spec, tools=TOOLS)
    assert _calls(out) == [(T, {"city": "Oslo"})] and not out.content


def test_prose_that_names_no_call_is_not_read_as_one() -> None:
    source = _instructed("Use the tools above when they help. <b>Be brief.</b>")
    assert detect_dialect(source, builtins=False).id == "polyfill-json"


FIRST_ROWS = {r[0]: r[1] for r in reversed(ROWS)}


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_grammar_accepts_a_call_written_as_the_instructions_show(
    name: str, smollm2_path: Path
) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from grammar_check import grammar_accepts
    from tooldialect.grammar import build_grammar

    llama = llama_cpp.Llama(str(smollm2_path), vocab_only=True, verbose=False, n_threads=2)
    spec = _spec(name, False)
    forced = build_grammar(spec, TOOLS, tool_choice="required")
    assert forced is not None
    text = FIRST_ROWS[name]
    assert grammar_accepts(forced.gbnf, text, root=forced.root, llama=llama), text
    wrong = text.replace("get_weather", "get_wrong", 1)
    assert not grammar_accepts(forced.gbnf, wrong, root=forced.root, llama=llama)
