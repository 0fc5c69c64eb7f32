"""Family variants held as spec data: parse-only layouts, optional markers, alternative
separators and argument keys, reasoning opened by a phrase, and an unclosed reasoning block ended
by a call. The golden tables live in tests/fixtures/outputs/<family>/; these tests pin the
generic mechanisms on invented specs, so they hold for families nobody wrote a builtin for."""

from __future__ import annotations

import re

import pytest

from tooldialect import DialectSpec, build_grammar, parse_output
from tooldialect.dialect.spec import (
    CallFormat,
    JsonBody,
    PythonBody,
    ReasoningMarkers,
    TaggedBody,
)
from tooldialect.frontend.render import prompt_opens_reasoning, prompt_prefill
from tooldialect.grammar.build import trigger_pattern
from tooldialect.parse import StreamParser

from .helpers import Case, check_consistent, comparable, run_stream

TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def _spec(*formats: CallFormat, reasoning: ReasoningMarkers | None = None) -> DialectSpec:
    return DialectSpec(id="invented", formats=list(formats), reasoning=reasoning)


def _calls(text: str, spec: DialectSpec, **kw: object) -> tuple[object, ...]:
    """Batch result, checked against a one-character-per-chunk stream of the same text."""
    batch = parse_output(text, spec, tools=[TOOL], **kw)  # type: ignore[arg-type]
    case = Case(
        id="x",
        spec=spec,
        text=text,
        expected={},
        tools=[TOOL],
        reasoning_open=bool(kw.get("reasoning_open", False)),
    )
    streamed, assembled = run_stream(case, list(text))
    check_consistent(streamed, assembled)
    assert comparable(streamed, ids=False) == comparable(batch, ids=False)
    return (
        batch.content,
        batch.reasoning_content,
        [(c.name, c.arguments) for c in batch.tool_calls],
    )


LIST = CallFormat(
    section_open="<<go>>[",
    section_close="]<<stop>>",
    separator=", ",
    body=PythonBody(),
    optional_markers=["<<stop>>"],
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('<<go>>[lookup(q="a")]<<stop>>', (None, None, [("lookup", {"q": "a"})])),
        ('<<go>>[lookup(q="a")]', (None, None, [("lookup", {"q": "a"})])),
        ('<<go>>[lookup(q="a")]\nafter', ("after", None, [("lookup", {"q": "a"})])),
        ('<<go>>[lookup(q="a"), ]<<stop>>', (None, None, [("lookup", {"q": "a"})])),
    ],
    ids=[
        "closed",
        "optional-marker-missing-at-end",
        "optional-marker-missing-then-text",
        "trailing-separator",
    ],
)
def test_optional_close_marker(text: str, expected: tuple[object, ...]) -> None:
    assert _calls(text, _spec(LIST)) == expected


def test_optional_marker_in_a_head_literal() -> None:
    fmt = CallFormat(
        call_open="<c>",
        call_close="</c>",
        body=TaggedBody(head="fn::{name}=>"),
        optional_markers=["fn::"],
    )
    spec = _spec(fmt)
    both = '<c>fn::lookup=>{"q": "a"}</c><c>lookup=>{"q": "b"}</c>'
    assert _calls(both, spec)[2] == [("lookup", {"q": "a"}), ("lookup", {"q": "b"})]
    assert spec.render_call("lookup", {"q": "a"}) == '<c>fn::lookup=>{"q": "a"}</c>'


def test_alt_separators_and_arguments_aliases() -> None:
    fmt = CallFormat(
        section_open="@@",
        separator=" | ",
        alt_separators=[";", ""],
        body=JsonBody(arguments_key="params", arguments_aliases=["args"]),
    )
    text = (
        '@@{"name": "lookup", "params": {"q": "a"}}; {"name": "lookup", "args": {"q": "b"}}'
        '\n{"name": "lookup", "params": {"q": "c"}}'
    )
    assert _calls(text, _spec(fmt))[2] == [
        ("lookup", {"q": "a"}),
        ("lookup", {"q": "b"}),
        ("lookup", {"q": "c"}),
    ]
    assert (
        _spec(fmt).render_calls([("lookup", {"q": "a"}, None), ("lookup", {"q": "b"}, None)])
        == '@@{"name": "lookup", "params": {"q": "a"}} | {"name": "lookup", "params": {"q": "b"}}'
    )


def test_parse_only_formats_are_read_but_never_triggered() -> None:
    canonical = CallFormat(call_open="<c>", call_close="</c>", body=TaggedBody(head="{name}:"))
    variant = CallFormat(call_open="<<v>>", body=TaggedBody(head="{name}:"), parse_only=True)
    spec = _spec(canonical, variant)
    assert variant.effective_triggers() == []
    assert _calls('<<v>>lookup:{"q": "a"}', spec)[2] == [("lookup", {"q": "a"})]
    grammar = build_grammar(spec, [TOOL], tool_choice="auto")
    assert grammar is not None
    assert grammar.trigger_words == ["<c>"]
    assert "<<v>>" not in grammar.gbnf


THINK = ReasoningMarkers(open="<t>", close="</t>")
CALL = CallFormat(section_open="<<calls>>", body=JsonBody())
ONE = '<<calls>>{"name": "lookup", "arguments": {"q": "a"}}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<t>plan " + ONE, (None, "plan", [("lookup", {"q": "a"})])),
        ("<t>plan " + ONE + " more</t>done", ("done", "plan " + ONE + " more", [])),
        ("<t>the marker <<calls>> is special", (None, "the marker <<calls>> is special", [])),
        (
            '<t>cut <<calls>>{"name": "lookup", "arguments": {"q": "a',
            (None, 'cut <<calls>>{"name": "lookup", "arguments": {"q": "a', []),
        ),
    ],
    ids=[
        "never-closed-call-ends-it",
        "closed-later-stays-reasoning",
        "not-a-call",
        "truncated-call-stays-reasoning",
    ],
)
def test_unclosed_reasoning_ended_by_a_call(text: str, expected: tuple[object, ...]) -> None:
    assert _calls(text, _spec(CALL, reasoning=THINK)) == expected


def test_unclosed_reasoning_rule_can_be_turned_off() -> None:
    spec = _spec(CALL, reasoning=THINK.model_copy(update={"calls_end_unclosed": False}))
    assert _calls("<t>plan " + ONE, spec) == (None, "plan " + ONE, [])


PHRASE = ReasoningMarkers(
    open="<t>", close="</t>", alt_open=["Steps first:"], alt_close=["== ANSWER =="]
)


def test_reasoning_opened_by_a_phrase() -> None:
    spec = _spec(CALL, reasoning=PHRASE)
    assert _calls("Steps first:\nadd\n== ANSWER ==\n4", spec) == ("4", "add", [])
    prompt = "<user>2+2</user>\n<assistant>Steps first:\n"
    assert prompt_prefill(prompt, spec) == "Steps first:"
    assert prompt_opens_reasoning(prompt, spec)
    assert _calls("add\n== ANSWER ==\n4", spec, reasoning_open=True) == ("4", "add", [])


def test_triggers_wait_for_any_reasoning_close() -> None:
    trigger = CALL.effective_triggers()[0]
    pattern = re.compile(trigger_pattern(trigger, PHRASE, reasoning_open=True))
    assert pattern.fullmatch("add == ANSWER == " + ONE)
    assert pattern.fullmatch("add </t>" + ONE)
    assert not pattern.fullmatch("add " + ONE)
    opened = re.compile(trigger_pattern(trigger, PHRASE))
    assert opened.fullmatch(ONE)
    assert not opened.fullmatch("Steps first: " + ONE)
    assert opened.fullmatch("Steps first: x == ANSWER == " + ONE)


def test_offered_names_only_layouts_need_an_offered_tool() -> None:
    weak = CallFormat(
        call_open="<r>",
        call_close="</r>",
        body=JsonBody(),
        parse_only=True,
        offered_names_only=True,
    )
    spec = _spec(CallFormat(call_open="<c>", body=JsonBody()), weak)
    unknown = '<r>{"name": "Bob", "arguments": {}}</r>'
    assert _calls(unknown, spec) == (unknown, None, [])
    known = '<r>{"name": "lookup", "arguments": {"q": "a"}}</r>'
    assert _calls(known, spec) == (None, None, [("lookup", {"q": "a"})])
    # without tools the parser cannot tell: the layout reads any name
    assert [c.name for c in parse_output(unknown, spec).tool_calls] == ["Bob"]


def test_parse_only_openers_do_not_hold_reasoning_back() -> None:
    fenced = CallFormat(
        section_open="```\n", section_close="\n```", body=JsonBody(), parse_only=True
    )
    spec = _spec(CALL, fenced, reasoning=THINK)
    parser = StreamParser(spec, tools=[TOOL])
    deltas = parser.feed("<t>code:\n```\nprint(1)\n```\nand more thinking ")
    streamed = "".join(d.get("reasoning_content", "") for d in deltas)
    assert streamed == "code:\n```\nprint(1)\n```\nand more thinking"
    held = parser.feed("then " + ONE[:9])  # a written layout's opener: held until decided
    assert "".join(d.get("reasoning_content", "") for d in held) == " then"
