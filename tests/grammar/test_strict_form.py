"""A lazy grammar's strict form (``ToolGrammar.strict_gbnf``): the same formats with a forced
call's exact envelope (a JSON envelope compact or indented by 2 or 4), which the in-process
engine switches to once a trigger fired and the strict form accepts the capture.

Automaton checks, no model: the strict form accepts what ``render_call`` writes for every
builtin dialect (and what the lenient grammar accepts of it), rejects envelope whitespace no
layout writes, and forces the envelope the lenient grammar leaves free."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.dialect.spec import JsonBody, TaggedBody
from tooldialect.grammar.bodies import BodyRequest, register_body_grammar
from tooldialect.grammar.bodies.tagged import tagged_body_rule
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.forced import GbnfAutomaton

NOTE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "save_note",
        "description": "Save a note.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "pinned": {"type": "boolean"},
            },
            "required": ["title"],
        },
    },
}
OTHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "send_mail",
        "parameters": {"type": "object", "properties": {"to": {"type": "string"}}},
    },
}
ARGS = {"title": "Lunch", "tags": ["food", "team"], "pinned": True}
SPECS = list(builtin_dialects())


def grammars(spec_id: str, layout: Any = "canonical") -> Any:
    grammar = build_grammar(get_builtin(spec_id), [NOTE, OTHER], argument_layout=layout)
    return grammar


def strict(grammar: Any) -> GbnfAutomaton:
    return GbnfAutomaton(grammar.strict_gbnf, grammar.strict_root)


def lenient(grammar: Any) -> GbnfAutomaton:
    return GbnfAutomaton(grammar.gbnf, grammar.root)


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_strict_form_accepts_render_call_where_the_lenient_grammar_does(spec_id: str) -> None:
    grammar = grammars(spec_id)
    if grammar is None or not grammar.lazy:
        pytest.skip("no lazy grammar")
    assert grammar.strict_gbnf and grammar.strict_root
    rendered = get_builtin(spec_id).render_call("save_note", ARGS)
    if lenient(grammar).feed(rendered):
        # the strict form starts where a trigger's capture does: at the marker's own text
        assert strict(grammar).feed(rendered.lstrip()), rendered


def test_every_lazy_builtin_has_a_strict_form_that_reads_its_call() -> None:
    """Not vacuous: most builtins' rendered calls are read by both forms."""
    both = 0
    for spec_id in SPECS:
        grammar = grammars(spec_id)
        if grammar is None or not grammar.lazy:
            continue
        rendered = get_builtin(spec_id).render_call("save_note", ARGS)
        both += lenient(grammar).feed(rendered) and strict(grammar).feed(rendered.lstrip())
    assert both >= len(SPECS) // 2, both


ENVELOPE_ARGS = json.dumps(ARGS, ensure_ascii=False)


def hermes_call(opening: str, comma: str, closing: str) -> str:
    return (
        f'<tool_call>\n{opening}"name": "save_note"{comma}"arguments": {ENVELOPE_ARGS}'
        f"{closing}\n</tool_call>"
    )


@pytest.mark.parametrize("indent", [2, 4])
def test_an_indented_json_envelope_is_a_strict_layout(indent: int) -> None:
    pad = "\n" + " " * indent
    text = hermes_call("{" + pad, "," + pad, "\n}")
    grammar = grammars("hermes")
    assert lenient(grammar).feed(text)
    assert strict(grammar).feed(text)


@pytest.mark.parametrize(
    "parts",
    [("{\n\t", ",\n\t", "\n}"), ("{ ", ", ", " }"), ("{\n  ", ", ", "\n}"), ("{", ",", "}")],
    ids=["tabs", "padded", "mixed", "no-spaces"],
)
def test_envelope_whitespace_no_layout_writes_is_left_to_the_lenient_grammar(
    parts: tuple[str, str, str],
) -> None:
    text = hermes_call(*parts)
    grammar = grammars("hermes")
    assert lenient(grammar).feed(text)
    assert not strict(grammar).feed(text)


def test_after_the_capture_the_strict_form_forces_the_envelope() -> None:
    grammar = grammars("hermes")
    a, b = strict(grammar), lenient(grammar)
    for automaton in (a, b):
        assert automaton.feed('<tool_call>\n{"name": "save')
    assert a.forced().text == '_note", "arguments": {"title": "'
    assert b.forced().text == '_note"'  # then free whitespace
    c = strict(grammar)
    assert c.feed('<tool_call>\n{\n  "name": "send_mail",\n  "arguments": {"')
    assert c.forced().text == 'to": '  # "to" is optional: its value may be null (not given)


def test_the_free_layout_has_no_strict_form() -> None:
    grammar = grammars("hermes", layout="free")
    assert grammar is not None and grammar.lazy and grammar.strict_gbnf == ""


def test_only_json_envelopes_get_indented_layouts() -> None:
    for spec_id in SPECS:
        spec = get_builtin(spec_id)
        grammar = grammars(spec_id)
        if grammar is None or not grammar.lazy:
            continue
        indented = any(
            isinstance(f.body, JsonBody) and f.effective_triggers() for f in spec.formats
        )
        assert ("-i2" in grammar.strict_gbnf) == indented, spec_id


def test_a_body_kind_registers_the_layouts_its_strict_envelope_offers() -> None:
    """The strict form asks the body-kind registry, not the body's class, which envelope
    layouts to offer: a kind registered with an indent is built with it too, one registered
    without in the exact layout only."""
    spec_id = next(
        s
        for s in SPECS
        if any(
            isinstance(f.body, TaggedBody) and f.effective_triggers()
            for f in get_builtin(s).formats
        )
    )
    asked: list[int | None] = []

    def recording(req: BodyRequest, body: TaggedBody) -> str:
        asked.append(req.indent)
        return tagged_body_rule(req, body)

    register_body_grammar(TaggedBody, recording)
    try:
        assert grammars(spec_id).strict_gbnf
        assert set(asked) == {None}
        asked.clear()
        register_body_grammar(TaggedBody, recording, strict_indents=(None, 3))
        assert grammars(spec_id).strict_gbnf
    finally:
        register_body_grammar(TaggedBody, tagged_body_rule)
    assert set(asked) == {None, 3}
