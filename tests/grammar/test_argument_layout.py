"""``argument_layout``: a canonical-layout grammar accepts exactly the whitespace ``render_call``
writes inside arguments (and forces it); the free layout keeps accepting indented arguments.

The automaton checks run without a model; the llama.cpp checks (the grammar the engine really
uses) and the end-to-end requests need the test models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import read_template
from tooldialect import ToolChatHandler
from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.errors import GrammarError
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.codec import LAYOUTS
from tooldialect.grammar.forced import GbnfAutomaton

NOTE = {
    "type": "function",
    "function": {
        "name": "save_note",
        "description": "Save a note.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "meta": {
                    "type": "object",
                    "properties": {"pinned": {"type": "boolean"}, "rank": {"type": "integer"}},
                    "required": ["pinned"],
                },
                "extra": {},
            },
            "required": ["title", "tags", "meta"],
        },
    },
}
ARGS = {
    "title": "Lunch",
    "tags": ["a", "b"],
    "meta": {"pinned": True, "rank": 2},
    "extra": {"k": [1]},
}
CANONICAL = (
    '{"title": "Lunch", "tags": ["a", "b"], "meta": {"pinned": true, "rank": 2}, '
    '"extra": {"k": [1]}}'
)
# the same arguments with whitespace the canonical form never writes
VARIANTS = {
    "pretty-printed": '{\n  "title": "Lunch",\n  "tags": ["a"],\n  "meta": {"pinned": true}\n}',
    "space-after-brace": '{ "title": "Lunch", "tags": [], "meta": {"pinned": true}}',
    "space-before-colon": '{"title" : "Lunch", "tags": [], "meta": {"pinned": true}}',
    "no-space-after-comma": '{"title": "Lunch","tags": [], "meta": {"pinned": true}}',
    "no-space-after-colon": '{"title":"Lunch", "tags": [], "meta": {"pinned": true}}',
    "space-in-array": '{"title": "Lunch", "tags": [ "a"], "meta": {"pinned": true}}',
    "two-spaces-after-comma": '{"title": "Lunch",  "tags": [], "meta": {"pinned": true}}',
    "nested-object-padding": '{"title": "Lunch", "tags": [], "meta": { "pinned": true }}',
    "free-value-padding": '{"title": "Lunch", "tags": [], "meta": {"pinned": true}, "extra": { }}',
}
SPECS = list(builtin_dialects())


def call(spec_id: str, arguments: str) -> str:
    """``render_call``'s call with its arguments replaced by the text ``arguments``."""
    rendered = get_builtin(spec_id).render_call("save_note", {"__": "@@"})
    return rendered.replace('{"__": "@@"}', arguments)


def automaton_accepts(layout: Any, text: str, spec_id: str = "hermes") -> bool:
    grammar = build_grammar(
        get_builtin(spec_id),
        [NOTE],
        tool_choice="required",
        parallel_tool_calls=False,
        argument_layout=layout,
    )
    assert grammar is not None
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    # a rejected character fails the feed; full-text acceptance is llama.cpp's check below
    return automaton.feed(text)


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_render_call_is_accepted_in_both_layouts(spec_id: str) -> None:
    """Every builtin body kind (JSON, tagged, element, Python, Gemma 4 values)."""
    spec = get_builtin(spec_id)
    rendered = spec.render_call("save_note", ARGS)
    for layout in LAYOUTS:
        grammar = build_grammar(spec, [NOTE], tool_choice="required", argument_layout=layout)
        assert grammar is not None
        automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
        assert automaton.feed(rendered), (layout, rendered)


@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_canonical_rejects_other_whitespace_inside_arguments(variant: str) -> None:
    assert CANONICAL in get_builtin("hermes").render_call("save_note", ARGS)
    text = call("hermes", VARIANTS[variant])
    assert automaton_accepts("free", text), text
    assert not automaton_accepts("canonical", text), text


# what pretty-printers write: Qwen2.5-Coder (0.5B and 1.5B) writes its arguments so unconstrained,
# objects broken over lines at two spaces a level, short arrays on one line
PRETTY = {
    "qwen-style": '{\n    "title": "Lunch",\n    "tags": ["a", "b"],\n    "meta": {\n      '
    '"pinned": true,\n      "rank": 2\n    }\n  }',
    "json.dumps-indent": json.dumps(ARGS, indent=2),
}


@pytest.mark.parametrize("text", [*PRETTY.values(), CANONICAL], ids=[*PRETTY, "canonical"])
def test_natural_accepts_compact_and_pretty_printed_arguments(text: str) -> None:
    assert automaton_accepts("natural", call("hermes", text)), text
    assert automaton_accepts("free", call("hermes", text)), text


@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_natural_rejects_whitespace_no_printer_writes(variant: str) -> None:
    """Spaces inside a line stay canonical (``": "``, ``", "``, nothing inside brackets);
    only line breaks and indents are free."""
    text = call("hermes", VARIANTS[variant])
    assert automaton_accepts("natural", text) == (variant == "pretty-printed"), text


def test_natural_forces_every_line_after_the_first_break() -> None:
    """The model's first line break picks the indent; from there each member's line break,
    indent and opening quote are forced text, and its key and colon once its first letter
    tells which key it is (keys come in the model's order, ``test_key_order``), as the
    canonical layout forces ``, "``. The last key left is forced whole."""
    automaton = lazy_automaton("natural")
    assert automaton.feed('<tool_call>\n{"name": "save_note", "arguments": {')
    assert automaton.forced().text == ""  # compact or over lines: the model's choice
    assert automaton.feed('\n    "')
    assert automaton.forced().text == ""  # which key: the model's choice
    assert automaton.feed("ti")
    assert automaton.forced().text == 'tle": "'
    assert automaton.feed('tle": "Lunch",')
    assert automaton.forced().text == '\n    "'
    assert automaton.feed('\n    "extra": 1,')
    assert automaton.forced().text == '\n    "'
    assert automaton.feed('\n    "tags": ["a"],')
    assert automaton.forced().text == '\n    "meta": {'  # one key left, required
    compact = lazy_automaton("natural")
    assert compact.feed('<tool_call>\n{"name": "save_note", "arguments": {"title": "Lunch",')
    assert compact.forced().text == ' "'


def test_natural_strict_form_takes_a_pretty_envelope_and_arguments() -> None:
    """The strict switch keeps the model's layout: a fenced, indented envelope around
    pretty-printed arguments (Qwen2.5 under auto) is one of the strict form's calls."""
    grammar = build_grammar(
        get_builtin("hermes"), [NOTE], tool_choice="auto", argument_layout="natural"
    )
    assert grammar is not None and grammar.strict_gbnf
    envelope = '<tool_call>\n{"name": "save_note", "arguments": ' + PRETTY["qwen-style"] + "}"
    strict = GbnfAutomaton(grammar.strict_gbnf, grammar.strict_root)
    assert strict.feed(envelope), envelope


FREE_ENVELOPE = (
    '<tool_call>\n{ "name" : "save_note",\n "arguments": ' + CANONICAL + "}\n</tool_call>"
)


def lazy_automaton(layout: Any, spec_id: str = "hermes") -> GbnfAutomaton:
    grammar = build_grammar(
        get_builtin(spec_id), [NOTE], tool_choice="auto", argument_layout=layout
    )
    assert grammar is not None and grammar.lazy
    return GbnfAutomaton(grammar.gbnf, grammar.root)


def test_lazy_canonical_keeps_the_envelope_whitespace_free() -> None:
    """Lazy triggers replay the envelope as the model wrote it: its whitespace stays free."""
    assert lazy_automaton("canonical").feed(FREE_ENVELOPE)
    assert not lazy_automaton("canonical").feed(call("hermes", VARIANTS["pretty-printed"]))


def test_forced_canonical_writes_the_envelope_exactly() -> None:
    """No trigger replays into a forced grammar: the whole call is render_call's text."""
    assert automaton_accepts("free", FREE_ENVELOPE)
    assert not automaton_accepts("canonical", FREE_ENVELOPE)
    assert automaton_accepts("canonical", call("hermes", CANONICAL))
    for extra in ("<tool_call> \n", "<tool_call>{", '<tool_call>\n{"name":"'):
        assert not automaton_accepts("canonical", extra), extra


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_forced_canonical_forces_the_opener_from_the_start(spec_id: str) -> None:
    """A named call's text up to the first free value is forced, envelope included."""
    spec = get_builtin(spec_id)
    grammar = build_grammar(
        spec,
        [NOTE],
        tool_choice={"type": "function", "function": {"name": "save_note"}},
        parallel_tool_calls=False,
        argument_layout="canonical",
    )
    assert grammar is not None
    forced = GbnfAutomaton(grammar.gbnf, grammar.root).forced().text
    rendered = spec.render_call("save_note", ARGS, call_id="")
    # what is forced is render_call's own text, and the free layout forces no more of it
    assert rendered.startswith(forced), (forced, rendered)
    free = build_grammar(
        spec,
        [NOTE],
        tool_choice={"type": "function", "function": {"name": "save_note"}},
        parallel_tool_calls=False,
    )
    assert free is not None
    assert len(GbnfAutomaton(free.gbnf, free.root).forced().text) <= len(forced)


def test_canonical_forces_separators_and_keys() -> None:
    grammar = build_grammar(
        get_builtin("hermes"), [NOTE], tool_choice="required", argument_layout="canonical"
    )
    assert grammar is not None
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    steps = [
        ('<tool_call>\n{"name": "save_note", "arguments": {', '"title": "'),
        ('"title": "Lunch"', ', "tags": ['),  # free layout: nothing (optional whitespace)
        (', "tags": [', ""),  # an empty array or a first string
        ('"a"', ""),  # "]" or ", "
        ('], "meta": {', '"pinned": '),
        ('"pinned": t', "rue"),
    ]
    for fed, forced in steps:
        assert automaton.feed(fed), fed
        assert automaton.forced().text == forced, fed
    free = build_grammar(get_builtin("hermes"), [NOTE], tool_choice="required")
    assert free is not None
    loose = GbnfAutomaton(free.gbnf, free.root)
    assert loose.feed('<tool_call>\n{"name": "save_note", "arguments": {"title": "Lunch"')
    assert loose.forced().text == ""


def test_unknown_layout_is_refused() -> None:
    with pytest.raises(GrammarError, match="argument_layout='pretty'"):
        ToolChatHandler(argument_layout="pretty")  # type: ignore[arg-type]


@pytest.mark.model
@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_llama_cpp_agrees(smollm2_vocab: Any, variant: str) -> None:
    """llama.cpp's own grammar engine (the one decoding uses) reads the layout the same way."""
    from grammar_check import grammar_accepts

    spec = get_builtin("hermes")
    canonical = build_grammar(spec, [NOTE], tool_choice="required", argument_layout="canonical")
    natural = build_grammar(spec, [NOTE], tool_choice="required", argument_layout="natural")
    free = build_grammar(spec, [NOTE], tool_choice="required", argument_layout="free")
    assert canonical is not None and free is not None and natural is not None
    good = spec.render_call("save_note", ARGS)
    assert grammar_accepts(canonical.gbnf, good, llama=smollm2_vocab)
    assert grammar_accepts(natural.gbnf, good, llama=smollm2_vocab)
    text = call("hermes", VARIANTS[variant])
    assert grammar_accepts(free.gbnf, text, llama=smollm2_vocab)
    assert not grammar_accepts(canonical.gbnf, text, llama=smollm2_vocab)
    pretty = variant == "pretty-printed"
    assert grammar_accepts(natural.gbnf, text, llama=smollm2_vocab) == pretty
    for text in PRETTY.values():
        assert grammar_accepts(natural.gbnf, call("hermes", text), llama=smollm2_vocab), text


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city", "days"],
        },
    },
}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def _canonical_call(llm: Any, tool_choice: Any, fast_forward: bool) -> None:
    handler = ToolChatHandler(argument_layout="canonical", fast_forward=fast_forward)
    out = handler(
        llama=llm,
        messages=[{"role": "user", "content": "What is the weather in Paris for 3 days?"}],
        tools=[WEATHER, NOTE],
        tool_choice=tool_choice,
        temperature=0,
        max_tokens=96,
    )
    calls = out["choices"][0]["message"].get("tool_calls") or []  # type: ignore[index]
    assert calls, out
    assert handler.last_result is not None
    text = handler.last_result.text
    for c in calls:
        arguments = json.loads(c["function"]["arguments"])
        assert isinstance(arguments, dict)
        # the model wrote the arguments exactly as render_call would
        assert json.dumps(arguments, ensure_ascii=False) in text, text
    if tool_choice == NAMED:
        assert [c["function"]["name"] for c in calls] == ["get_weather"]


@pytest.fixture(scope="module")
def smollm2(smollm2_path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), n_threads=2, n_ctx=2048, verbose=False)


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(str(qwen_path), n_threads=2, n_ctx=2048, verbose=False)


@pytest.mark.model
@pytest.mark.parametrize("fast_forward", [False, True], ids=["plain", "fast-forward"])
@pytest.mark.parametrize("tool_choice", ["required", NAMED], ids=["required", "named"])
def test_canonical_calls_on_smollm2(smollm2: Any, tool_choice: Any, fast_forward: bool) -> None:
    _canonical_call(smollm2, tool_choice, fast_forward)


@pytest.mark.model
@pytest.mark.parametrize(
    "tool_choice", ["auto", "required", NAMED], ids=["auto", "required", "named"]
)
def test_canonical_calls_on_qwen(qwen: Any, tool_choice: Any) -> None:
    """Qwen2.5 indents required-call arguments when the layout is free (issue 11, section 6)."""
    _canonical_call(qwen, tool_choice, True)


FIND = {
    "type": "function",
    "function": {
        "name": "find_places",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "cuisines": {"type": "array", "items": {"type": "string"}},
                "options": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}, "kind": {"type": "string"}},
                },
            },
            "required": ["city", "cuisines", "options"],
        },
    },
}


@pytest.mark.model
@pytest.mark.parametrize(
    "ask",
    [
        "Find Italian and Thai places in Paris for 4 people, for dinner.",
        "What is the weather in Paris for 3 days?",
    ],
    ids=["nested", "flat"],
)
def test_the_default_auto_call_is_the_one_the_model_writes_unconstrained(
    qwen: Any, ask: str
) -> None:
    """Under ``auto`` the default layout is natural: Qwen2.5 writes its arguments over lines,
    as it does with no grammar at all, so the lazy grammar changes nothing in a valid call
    (the canonical layout made it write them compact, and BFCL answers changed with that).
    Steering is off on both sides: it rewrites a call begun in a variant format (Qwen's fenced
    JSON) in the template's own, which ``tests/frontend/test_steering.py`` covers."""
    from tooldialect.engine.in_process import LlamaCppEngine

    request: dict[str, Any] = {
        "messages": [{"role": "user", "content": ask}],
        "tools": [WEATHER, FIND],
        "temperature": 0,
        "max_tokens": 120,
    }
    free = ToolChatHandler(prefix_checkpoints=False, steer_calls=False)
    free.setup(qwen, engine=LlamaCppEngine(qwen, constrain="off"))
    free(llama=qwen, **request)
    default = ToolChatHandler(prefix_checkpoints=False, steer_calls=False)
    out = default(llama=qwen, **request)
    assert out["choices"][0]["message"].get("tool_calls")  # type: ignore[index]
    assert free.last_result is not None and default.last_result is not None
    assert "\n    " in default.last_result.text, "the model's own line breaks"
    assert default.last_result.text == free.last_result.text


def test_the_default_layout_follows_who_chose_the_call() -> None:
    from fake_engine import fake_handler
    from tooldialect.grammar.codec import layout_for

    assert layout_for(None, forced=False) == "natural"  # auto: the model chose to call
    assert layout_for(None, forced=True) == "canonical"  # required, named: the library's call
    assert layout_for("free", forced=True) == "free"  # the caller's choice wins
    handler, llama, _ = fake_handler(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"))
    pretty = call("hermes", PRETTY["qwen-style"])
    for choice, accepts in (("auto", True), ("required", False)):
        request = handler.prepare(
            llama=llama,
            messages=[{"role": "user", "content": "x"}],
            tools=[NOTE],
            tool_choice=choice,
        )
        grammar = request.grammar
        assert grammar is not None
        assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(pretty) is accepts, choice
