"""``null`` for an optional argument (issue 38 §4): BFCL counts ``null`` as "not given", and
models trained on its style write it. A tool call's grammar accepts ``null`` for a top-level
argument that is optional and whose schema does not admit ``null`` (the parser then drops the
member: tests/parse/test_optional_null.py); a required key still needs a value, a schema that
admits ``null`` keeps its own semantics, nested objects and structured output are unchanged.

The automaton checks run without a model; llama.cpp's own grammar engine checks a forced and a
lazy grammar in the model-marked test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.dialect.spec import ElementBody
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.codec import ArgumentLayout
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.grammar.schema import schema_grammar

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "enum": ["c", "f"]},
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "note": {"type": ["string", "null"]},
        "detail": {
            "type": "object",
            "properties": {"level": {"type": "integer"}, "lang": {"type": "string"}},
        },
        "when": {"$ref": "#/$defs/When"},
    },
    "required": ["city"],
    "$defs": {"When": {"type": "string", "enum": ["today", "tomorrow"]}},
}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
DAYS_REQUIRED = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {**PARAMETERS, "required": ["city", "days"]},
    },
}
SPECS = list(builtin_dialects())
LAYOUTS: tuple[ArgumentLayout, ...] = ("free", "natural", "canonical")


def forced(spec_id: str = "hermes", layout: Any = "natural", tool: Any = WEATHER) -> GbnfAutomaton:
    grammar = build_grammar(
        get_builtin(spec_id),
        [tool],
        tool_choice="required",
        parallel_tool_calls=False,
        argument_layout=layout,
    )
    assert grammar is not None
    return GbnfAutomaton(grammar.gbnf, grammar.root)


def accepts(arguments: str, *, spec_id: str = "hermes", layout: Any = "natural") -> bool:
    """Whether the forced grammar takes a whole hermes call with ``arguments`` as its text (to
    its closer: the arguments object is then complete)."""
    text = f'<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call>'
    return forced(spec_id, layout).feed(text)


def test_the_keys_null_omits() -> None:
    """Optional keys whose schema rejects ``null`` (through a ``$ref`` too); not ``city``
    (required) nor ``note`` (its schema admits ``null``)."""
    from tooldialect.grammar.optional_null import optional_null_keys

    assert optional_null_keys(PARAMETERS) == {"unit", "days", "detail", "when"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 1},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "anyOf": [{}]},
        {"type": "object", "properties": {"a": {}}},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"type": "object", "properties": {"a": False}},
        {"$ref": "#/$defs/A", "$defs": {"A": {"properties": {"a": {"type": "integer"}}}}},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "dependentRequired": {}},
        "not a schema",
    ],
    ids=[
        "min-properties",
        "combinator",
        "any-value",
        "required",
        "forbidden",
        "ref",
        "deps",
        "bad",
    ],
)
def test_no_key_where_dropping_could_break_the_call_or_null_is_a_value(schema: Any) -> None:
    from tooldialect.grammar.optional_null import optional_null_keys

    assert optional_null_keys(schema) == frozenset()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "arguments",
    [
        {"unit": None, "city": "Paris"},
        {"unit": "c", "city": "Paris", "days": None},
        {"unit": None, "city": "Paris", "days": None, "detail": None, "when": None},
        {"city": "Paris", "days": None, "note": None},
    ],
)
def test_null_for_an_optional_argument(layout: str, arguments: dict[str, Any]) -> None:
    """First, middle, last, every one (in the schema's order: past five keys, the natural
    layout's too)."""
    assert accepts(json.dumps(arguments), layout=layout)
    if layout == "natural":
        assert accepts(json.dumps(arguments, indent=2).replace("\n", "\n  "), layout=layout)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_null_for_a_required_argument_is_refused(layout: str) -> None:
    assert not accepts('{"city": null}', layout=layout)
    assert not accepts('{"city": null, "unit": "c"}', layout=layout)


def test_null_inside_a_nested_object_is_refused() -> None:
    """Top level only: a nested object's optional key still needs a value (see
    ``grammar/optional_null.py`` for why)."""
    assert accepts('{"city": "Paris", "detail": {"level": 2}}')
    assert not accepts('{"city": "Paris", "detail": {"level": null}}')


def test_structured_output_keeps_the_schema_strict() -> None:
    """``response_format``: the answer's schema means what it says."""
    for layout in LAYOUTS:
        a = GbnfAutomaton(schema_grammar(PARAMETERS, layout=layout), "root")
        assert not a.feed('{"unit": null'), layout


def test_an_answer_grammar_beside_the_calls_keeps_its_own_rules() -> None:
    """The answer and the calls share one builder: a schema written for both compiles to two
    objects, the call's taking ``null``, the answer's not."""
    from tooldialect.grammar.answer import build_answer_grammar

    grammar = build_answer_grammar(
        get_builtin("hermes"), PARAMETERS, tools=build_tools(), argument_layout="natural"
    )
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"unit": null, "city": "P"}}'
    assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(call + "\n</tool_call>")
    assert not GbnfAutomaton(grammar.gbnf, grammar.root).feed('{"unit": null, "city": "P"')


def build_tools() -> Any:
    from tooldialect.tool_defs import normalize_tools

    return normalize_tools([WEATHER])


def ordered(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` in the schema's order (the canonical layout's)."""
    return {k: arguments[k] for k in PARAMETERS["properties"] if k in arguments}


def writes_null(spec_id: str, key: str) -> bool:
    """Whether ``spec_id``'s body kind carries ``null`` for ``key``: every kind for a key whose
    schema admits no string; an element body writes strings as raw text, where ``null`` is the
    string ``"null"``."""
    spec = get_builtin(spec_id)
    return not (isinstance(spec.primary.body, ElementBody) and key in ("unit", "when"))


@pytest.mark.parametrize("layout", ["natural", "canonical"])
@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_every_body_kind_takes_null_for_an_optional_argument(spec_id: str, layout: str) -> None:
    """JSON, tagged, element and Python bodies (``None``, ``null`` in Gemma 4's codec), as
    ``render_call`` writes them."""
    spec = get_builtin(spec_id)
    for key in ("days", "detail", "unit"):
        rendered = spec.render_call("get_weather", ordered({"city": "Paris", key: None}))
        took = forced(spec_id, layout).feed(rendered)
        assert took == writes_null(spec_id, key), (key, rendered)
    # a required key (an integer: in an element body ``null`` for a string is the text "null")
    rendered = spec.render_call("get_weather", {"city": "Paris", "days": None})
    assert not forced(spec_id, layout, DAYS_REQUIRED).feed(rendered), rendered


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_the_lazy_grammar_takes_null_for_an_optional_argument(spec_id: str) -> None:
    spec = get_builtin(spec_id)
    grammar = build_grammar(spec, [WEATHER], tool_choice="auto", argument_layout="natural")
    if grammar is None or not grammar.trigger_words + grammar.trigger_patterns:
        pytest.skip("no lazy grammar")
    rendered = spec.render_call("get_weather", {"city": "Paris", "days": None})
    alternatives = [GbnfAutomaton(grammar.gbnf, grammar.root)]
    if grammar.strict_gbnf:
        alternatives.append(GbnfAutomaton(grammar.strict_gbnf, grammar.strict_root))
    for a in alternatives:
        assert a.feed(rendered.lstrip()), rendered


@pytest.mark.model
def test_llama_cpp_agrees(smollm2_vocab: Any) -> None:
    from grammar_check import grammar_accepts, lazy_grammar_accepts, validate_grammar

    spec = get_builtin("hermes")
    for layout in LAYOUTS:
        grammar = build_grammar(spec, [WEATHER], tool_choice="required", argument_layout=layout)
        assert grammar is not None
        validate_grammar(grammar.gbnf, vocab=smollm2_vocab._model.vocab)
        ok = spec.render_call("get_weather", {"unit": None, "city": "Paris", "days": None})
        assert grammar_accepts(grammar.gbnf, ok, llama=smollm2_vocab), layout
        bad = spec.render_call("get_weather", {"city": None})
        assert not grammar_accepts(grammar.gbnf, bad, llama=smollm2_vocab), layout
        nested = spec.render_call("get_weather", {"city": "P", "detail": {"level": None}})
        assert not grammar_accepts(grammar.gbnf, nested, llama=smollm2_vocab), layout
    lazy = build_grammar(spec, [WEATHER], tool_choice="auto", argument_layout="natural")
    assert lazy is not None
    text = "Sure.\n" + spec.render_call("get_weather", {"city": "Paris", "days": None})
    assert lazy_grammar_accepts(
        lazy.gbnf, text, llama=smollm2_vocab, trigger_patterns=lazy.lazy_patterns()
    )
