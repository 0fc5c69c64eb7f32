"""Key order: under the natural layout (``auto``'s default) an object's properties, and a call's
arguments in every body kind, come in the order the model writes them, each at most once and
the required ones all present; the canonical layout and structured output keep the schema's
order. BFCL ``live_multiple_684-164-0`` (Qwen2.5-Coder-1.5B) wrote three optional arguments in
another order than the schema's and the grammar cut the last one (issue 31).

The automaton checks run without a model; llama.cpp's own grammar engine checks the same
grammars in the model-marked test."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from test_argument_layout import NOTE

from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.grammar.schema import schema_grammar
from tooldialect.grammar.schema.objects import MAX_ANY_ORDER

SCHEMA = {
    "type": "object",
    "properties": {
        "directed_by": {"type": "string"},
        "genre": {"type": "string", "enum": ["Thriller", "Comedy"]},
        "cast": {"type": "string"},
    },
    "required": [],
}
VALUES = {"directed_by": "Riley Stearns", "genre": "Thriller", "cast": "Steve Terada"}
# NOTE's order reversed at both levels: an optional key first, a required one last
REORDERED = {"meta": {"rank": 2, "pinned": True}, "tags": ["a"], "title": "Lunch"}
SPECS = list(builtin_dialects())


def automaton(schema: Any, layout: Any) -> GbnfAutomaton:
    return GbnfAutomaton(schema_grammar(schema, layout=layout), "root")


def accepts_whole(schema: Any, layout: Any, text: str) -> bool:
    a = automaton(schema, layout)
    return a.feed(text) and a.forced().complete


@pytest.mark.parametrize("size", [1, 2, 3])
def test_natural_takes_every_order_of_any_subset(size: int) -> None:
    for keys in itertools.permutations(VALUES, size):
        text = json.dumps({k: VALUES[k] for k in keys})
        assert accepts_whole(SCHEMA, "natural", text), text
        pretty = json.dumps({k: VALUES[k] for k in keys}, indent=2)
        assert accepts_whole(SCHEMA, "natural", pretty), pretty


@pytest.mark.parametrize("layout", ["canonical", "free"])
def test_other_layouts_keep_the_schema_order(layout: str) -> None:
    """Structured output (the free layout) relies on the order: ``reasoning`` before
    ``answer`` makes the model reason first."""
    in_order = json.dumps(VALUES)
    assert accepts_whole(SCHEMA, layout, in_order)
    out_of_order = '{"cast": "Steve Terada", "directed_by"'
    assert not automaton(SCHEMA, layout).feed(out_of_order)
    assert automaton(SCHEMA, "natural").feed(out_of_order)


def test_a_key_is_written_once() -> None:
    a = automaton(SCHEMA, "natural")
    assert a.feed('{"cast": "Steve Terada", "directed_by": "Riley Stearns", ')
    assert a.viable('"genre"')
    assert not a.viable('"cast"')
    assert not a.viable('"directed_by"')


def test_the_object_closes_only_with_every_required_key() -> None:
    schema = {**SCHEMA, "required": ["genre", "cast"]}
    a = automaton(schema, "natural")
    assert a.feed('{"cast": "Steve Terada", "directed_by": "Riley Stearns"')
    assert not a.viable("}")
    assert a.viable(', "genre": "Comedy"}')
    assert accepts_whole(schema, "natural", '{"genre": "Comedy", "cast": "X"}')
    assert not accepts_whole(schema, "natural", '{"cast": "X"}')


def test_extra_keys_follow_the_declared_ones() -> None:
    schema = {**SCHEMA, "additionalProperties": {"type": "integer"}}
    assert accepts_whole(schema, "natural", '{"cast": "X", "genre": "Comedy", "year": 2024}')
    assert accepts_whole(schema, "natural", '{"year": 2024}')
    assert not automaton(schema, "natural").feed('{"cast": "X", "cast"')


def test_beyond_the_bound_the_schema_order_keeps_the_grammar_linear() -> None:
    """One rule per subset of keys written: bounded at ``MAX_ANY_ORDER`` keys."""
    props = {f"k{i}": {"type": "integer"} for i in range(MAX_ANY_ORDER + 1)}
    big = {"type": "object", "properties": props}
    small = {"type": "object", "properties": dict(list(props.items())[:MAX_ANY_ORDER])}
    assert accepts_whole(small, "natural", '{"k1": 1, "k0": 2}')
    assert not automaton(big, "natural").feed('{"k1": 1, "k0"')
    assert accepts_whole(big, "natural", '{"k0": 1, "k5": 2}')
    # linear beyond the bound: fewer rules for six keys in order than for five in any order
    rules = {n: schema_grammar(s, layout="natural").count("::=") for n, s in ((6, big), (5, small))}
    assert rules[6] < rules[5], rules


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_every_body_kind_takes_arguments_in_the_models_order(spec_id: str) -> None:
    """JSON, tagged, element (``<parameter=...>``) and Python (``f(k=v)``) bodies alike."""
    spec = get_builtin(spec_id)
    rendered = spec.render_call("save_note", REORDERED)
    grammars = {
        layout: build_grammar(
            spec,
            [NOTE],
            tool_choice="required",
            parallel_tool_calls=False,
            argument_layout=layout,
        )
        for layout in ("natural", "canonical")
    }
    natural, canonical = grammars["natural"], grammars["canonical"]
    assert natural is not None and canonical is not None
    assert GbnfAutomaton(natural.gbnf, natural.root).feed(rendered), rendered
    assert not GbnfAutomaton(canonical.gbnf, canonical.root).feed(rendered), rendered


@pytest.mark.model
def test_llama_cpp_agrees(smollm2_vocab: Any) -> None:
    from grammar_check import grammar_accepts

    spec = get_builtin("hermes")
    natural = build_grammar(spec, [NOTE], tool_choice="required", argument_layout="natural")
    canonical = build_grammar(spec, [NOTE], tool_choice="required", argument_layout="canonical")
    assert natural is not None and canonical is not None
    reordered = spec.render_call("save_note", REORDERED)
    assert grammar_accepts(natural.gbnf, reordered, llama=smollm2_vocab)
    assert not grammar_accepts(canonical.gbnf, reordered, llama=smollm2_vocab)
    twice = reordered.replace('"tags": ["a"]', '"tags": ["a"], "tags": ["b"]')
    assert twice != reordered
    assert not grammar_accepts(natural.gbnf, twice, llama=smollm2_vocab)
    no_title = spec.render_call("save_note", {"meta": {"pinned": True}})
    assert not grammar_accepts(natural.gbnf, no_title, llama=smollm2_vocab)
