"""Fuzzing, a few examples each (the long run is ``python bench/fuzz.py --budget 600``).

Strategies and checks live in ``bench/fuzz_cases.py`` so the suite and the long run test the same
properties: schemas compile or point at what they cannot compile; the parser never raises, loses no
word and streams what it parses whole; malformed messages get a ``ToolSpecError`` naming the field.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.fuzz_cases import (
    check_conversation,
    check_output,
    conversations,
    deep_schema,
    dialect_markers,
    instance_schema,
    model_outputs,
    schema_case,
    schemas,
)
from bench.parse_scaling import adversarial_output, parse_steps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TEMPLATES, model_path
from tooldialect import ToolChatHandler, ToolSpecError, detect_dialect
from tooldialect.dialect.builtins import builtin_dialects
from tooldialect.prompt.template import ChatTemplate

ROOT = Path(__file__).resolve().parent.parent
FAST = settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ---- schemas -> grammar ------------------------------------------------------------------------


@settings(FAST, max_examples=60)
@given(schema=schemas())
def test_random_schema_compiles_or_points_at_the_keyword(schema: Any) -> None:
    case = schema_case(schema, [])  # raises if an UnsupportedSchemaError's pointer does not resolve
    assert (
        isinstance(case, str) or case["gbnf"].startswith("root ::=") or "root ::=" in case["gbnf"]
    )


@pytest.mark.parametrize("depth", [1, 16, 64, 200], ids=lambda d: f"depth{d}")
def test_deep_schema_compiles_without_recursion_error(depth: int) -> None:
    case = schema_case(deep_schema(depth), [])
    assert isinstance(case, dict) and case["gbnf"]


TYPELESS = [
    # a schema without ``type``, its implied type, instances of that type it admits
    ({"patternProperties": {"^x": {"type": "integer"}}}, "object", ['{"x1": 3}', "{}"]),
    ({"minProperties": 1}, "object", ['{"a": null}']),
    ({"multipleOf": 3}, "number", ["9", "-3"]),
    ({"minLength": 2}, "string", ['"ab"']),
    ({"maxItems": 2}, "array", ["[]", '[1, "x"]']),
]


@pytest.mark.parametrize(
    ("schema", "typ", "valid"), TYPELESS, ids=[json.dumps(c[0]) for c in TYPELESS]
)
def test_typeless_schema_is_compiled_as_its_implied_type(
    schema: Any, typ: str, valid: list[str]
) -> None:
    """The grammar of a schema without ``type`` accepts its implied type's instances and rejects
    other types (the documented narrowing), and ``instance_schema`` writes that type out for the
    fuzz's instance generator (the fuzz once drew ``false`` for ``{"patternProperties": ...}``,
    valid in JSON Schema, and counted it against the grammar)."""
    from tooldialect.grammar import schema_grammar
    from tooldialect.grammar.forced import GbnfAutomaton

    nested = instance_schema({"type": "object", "properties": {"v": schema}, "anyOf": [schema]})
    assert nested["properties"]["v"]["type"] == typ
    assert nested["anyOf"][0]["type"] == typ
    assert instance_schema({"not": schema}) == {"not": schema}  # a type under not changes it
    gbnf = schema_grammar(schema)
    for text in valid:
        assert GbnfAutomaton(gbnf, "root").feed(text), text
    others = {"object": "{}", "number": "3", "string": '"ab"', "array": "[]"}
    for other, text in others.items():
        if other != typ:
            assert not GbnfAutomaton(gbnf, "root").feed(text), (other, text)
    assert not GbnfAutomaton(gbnf, "root").feed("false")


def test_pattern_classes_are_ascii_as_in_ecma_262() -> None:
    """``\\w`` in a schema's pattern is ECMA-262's ``[A-Za-z0-9_]``: the grammar rejects ``É``,
    and the fuzz draws its valid instances with Python's ASCII classes (it once drew
    ``"ÉȺ𡮠ŋĭ"`` for ``^\\w{2,5}$`` with Python's Unicode ``\\w`` and counted it)."""
    from hypothesis_jsonschema import from_schema

    from tooldialect.grammar import schema_grammar
    from tooldialect.grammar.forced import GbnfAutomaton

    schema: dict[str, Any] = {"type": "string", "pattern": "^\\w{2,5}$", "minLength": 3}
    gbnf = schema_grammar(schema)
    assert GbnfAutomaton(gbnf, "root").feed('"ab_9"')
    assert not GbnfAutomaton(gbnf, "root").feed('"Éab"')
    drawn = instance_schema(schema)
    assert drawn["pattern"] == "(?a)" + schema["pattern"]
    keyed = instance_schema({"type": "object", "patternProperties": {"^\\w$": schema}})
    assert list(keyed["patternProperties"]) == ["(?a)^\\w$"]

    @settings(FAST, max_examples=25)
    @given(from_schema(drawn))
    def accepted(value: str) -> None:
        assert GbnfAutomaton(gbnf, "root").feed(json.dumps(value)), value

    accepted()


@pytest.mark.model
def test_random_schemas_on_llama_cpp_sampler_in_a_child_process() -> None:
    """Grammars load in llama.cpp's sampler, accept valid instances, reject garbage; a child
    process that llama.cpp aborts is counted, not fatal."""
    model = model_path("smollm2")
    out = subprocess.run(
        [sys.executable, "bench/fuzz.py", "schemas", "--count", "24", "--model", str(model)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout.splitlines()[-1])["schemas"]
    assert summary["fuzzed"] == 24
    assert summary["aborts"] == 0
    assert summary["findings"] == [], summary["findings"]
    assert summary["grammars_checked"] + summary["unsupported"] == 24
    assert summary["instances_accepted"] > 0 and summary["invalid_rejected"] > 0


# ---- model outputs -> parser -------------------------------------------------------------------

DIALECTS = builtin_dialects()
# specs derived from a few invented templates whose parser paths no builtin takes: header-addressed
# messages, nested and escaped element bodies, attributes inside special-token markers
DERIVED = [
    "derived:" + name
    for name in (
        "recipient-reasoning.jinja",
        "recipient-constrain.jinja",
        "nested-singular-items.jinja",
        "xml-escaped-attrs.jinja",
        "attr-markers-typed.jinja",
    )
]


@pytest.mark.parametrize("name", DIALECTS + DERIVED, ids=DIALECTS + DERIVED)
def test_parser_on_random_marker_soup(name: str) -> None:
    markers = dialect_markers(name)

    @settings(FAST, max_examples=10)
    @given(case=model_outputs(markers))
    def run(case: tuple[str, list[str], list[int]]) -> None:
        check_output(name, *case)

    run()


# outputs the soup drew once that broke a rule (kept so that every run checks them)
FOUND_OUTPUTS = [
    # a special token foreign to the family before header-like words: they are no header
    (
        "derived:recipient-reasoning.jinja",
        '<|im_end|>w1qw2qw3qw4q to=get_weather<|body|>{"city": "Paris", "n": 3}<|eom|>',
        ["w1q", "w2q", "w3q", "w4q"],
    ),
    ("derived:recipient-reasoning.jinja", "<|im_end|>w1q<|body|>hi<|eom|>", ["w1q", "hi"]),
    ("derived:recipient-constrain.jinja", "<|im_end|>w1q<|body|>hi<|eom|>", ["w1q", "hi"]),
    # a recipient that is neither offered nor known (a built-in's message, reasoning) keeps its
    # name, also where its body is empty
    (
        "derived:recipient-constrain.jinja",
        " to=w1qw2qw3qw4qw5qw6q<|lane|>final<|txt|>",
        ["w1q", "w2q", "w3q", "w4q", "w5q", "w6q"],
    ),
    ("gpt-oss", " to=w1q<|channel|>final<|message|>w2q<|end|>", ["w1q", "w2q"]),
]


@pytest.mark.parametrize(("name", "text", "words"), FOUND_OUTPUTS)
@pytest.mark.parametrize("cuts", [[], [1, 3, 7, 11, 15, 19, 23]])
def test_parser_on_outputs_the_soup_found(
    name: str, text: str, words: list[str], cuts: list[int]
) -> None:
    check_output(name, text, words, cuts)


@pytest.mark.parametrize("name", DIALECTS, ids=DIALECTS)
def test_parser_work_grows_linearly_with_adversarial_output(name: str) -> None:
    """Four times the half-open markers, about four times the parser's work: a count of executed
    parser lines, not a clock (a rescan per opener made lfm2, gemma4 and llama-4-pythonic 16x)."""
    small = parse_steps(name, adversarial_output(name, 2_000))
    large = parse_steps(name, adversarial_output(name, 8_000))
    assert large / small < 6, f"{name}: 4x the text took {large / small:.1f}x the parser steps"


# ---- messages and tools -> handler -------------------------------------------------------------

STABLE_TEMPLATES = [
    "Qwen2.5-Coder-0.5B-Instruct.jinja",
    "SmolLM2-135M-Instruct.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "Qwen-Qwen3-0.6B.jinja",
]


@pytest.mark.parametrize("name", STABLE_TEMPLATES, ids=STABLE_TEMPLATES)
def test_malformed_messages_get_tool_spec_errors(name: str) -> None:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    spec = detect_dialect(source, bos_token="<s>", eos_token="</s>")

    @settings(FAST, max_examples=25)
    @given(case=conversations())
    def run(case: tuple[Any, Any]) -> None:
        assert check_conversation(template, spec, *case) != "crashed"

    run()


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "[0].content[0]"),
        ([{"role": "user", "content": "hi"}, {"content": "x"}], "messages[1].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]}],
            "messages[0].tool_calls[0].function.arguments",
        ),
        (["hi"], "messages[0]"),
        ({"role": "user", "content": "hi"}, "messages must be a list"),
    ],
    ids=["image-part", "missing-role", "int-content", "int-arguments", "str-message", "dict"],
)
def test_tool_spec_error_names_index_and_field(messages: Any, field: str) -> None:
    from tooldialect.prompt.request_messages import validate_messages

    with pytest.raises(ToolSpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate_messages(messages)


def test_text_parts_render_like_a_string() -> None:
    source = (TEMPLATES / "Qwen2.5-Coder-0.5B-Instruct.jinja").read_text(encoding="utf-8")
    template = ChatTemplate(source)
    parts = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert template.render(parts) == template.render([{"role": "user", "content": "hello"}])


@pytest.fixture(scope="module")
def qwen_vocab() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("qwen")), vocab_only=True, verbose=False)


@pytest.mark.model
def test_handler_prepare_on_malformed_conversations(qwen_vocab: Any) -> None:
    """The real request path (``prepare``: validate, tools, render, grammar) on fuzzed input."""
    handler = ToolChatHandler()

    @settings(FAST, max_examples=30)
    @given(case=conversations(), choice=st.sampled_from(["auto", "required", "none"]))
    def run(case: tuple[Any, Any], choice: str) -> None:
        messages, tools = case
        before = json.dumps([messages, tools], sort_keys=True, default=str)
        try:
            handler.prepare(llama=qwen_vocab, messages=messages, tools=tools, tool_choice=choice)
        except ToolSpecError as exc:
            assert "messages" in str(exc) or "tools" in str(exc) or "tool_choice" in str(exc)
        after = json.dumps([messages, tools], sort_keys=True, default=str)
        assert after == before

    run()
