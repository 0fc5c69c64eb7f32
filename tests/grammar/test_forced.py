"""The forced-text automaton: GBNF read as llama.cpp reads it, forced where one path is legal."""

from __future__ import annotations

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.forced import GbnfAutomaton, GbnfSyntaxError

NOTE = {
    "type": "function",
    "function": {
        "name": "save_note",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "pinned": {"type": "boolean"}},
            "required": ["title", "pinned"],
        },
    },
}
NOTES = {
    "type": "function",
    "function": {"name": "save_notes", "parameters": {"type": "object", "properties": {}}},
}


@pytest.mark.parametrize(
    ("gbnf", "fed", "forced", "complete"),
    [
        ('root ::= "abc"', "", "abc", True),
        ('root ::= "abc"', "a", "bc", True),
        ('root ::= "ab" | "ac"', "", "a", False),
        ('root ::= "ab" | "ac"', "a", "", False),
        ('root ::= "x" [0-9]+ "y"', "x", "", False),
        ('root ::= "x" [0-9]+ "y"', "x1", "", False),
        ('root ::= "a" " "? "b"', "a", "", False),
        ('root ::= "a" "b"{3} "c"?', "a", "bbb", False),
        ('root ::= item "!"\nitem ::= "he" ("llo")', "", "hello!", True),
        ('root ::= [\\x41] "\\n" [^a]', "", "A\n", False),
        ('root ::= "k" | # comment\n  "k"', "", "k", True),
        ('root ::= ("ab" | "ab")', "", "ab", True),
    ],
    ids=[
        "literal",
        "literal-after-prefix",
        "common-prefix-of-alternatives",
        "branch-point",
        "free-digit",
        "digit-or-end",
        "optional-space",
        "bounded-repeat-then-optional",
        "rule-reference-and-group",
        "hex-escape-and-negated-class",
        "comment",
        "duplicate-alternatives",
    ],
)
def test_forced_continuation(gbnf: str, fed: str, forced: str, complete: bool) -> None:
    automaton = GbnfAutomaton(gbnf)
    assert automaton.feed(fed)
    got = automaton.forced()
    assert (got.text, got.complete) == (forced, complete)


def test_forced_does_not_advance_and_rejection_fails() -> None:
    automaton = GbnfAutomaton('root ::= "ab" [0-9]')
    assert automaton.forced().text == "ab"
    assert automaton.forced().text == "ab"
    assert not automaton.feed("ax")
    assert automaton.failed
    assert automaton.forced().text == ""


@pytest.mark.parametrize(
    "gbnf",
    ['root ::= "a" missing', 'root ::= "a" (', 'x ::= "y"', 'root ::= "\\q"', "root ::= *"],
    ids=["undefined-rule", "open-group", "no-root", "bad-escape", "bare-repeat"],
)
def test_unreadable_grammar_is_a_syntax_error(gbnf: str) -> None:
    with pytest.raises(GbnfSyntaxError):
        GbnfAutomaton(gbnf)


def test_builder_grammar_forces_names_keys_and_closers() -> None:
    spec = get_builtin("hermes")
    grammar = build_grammar(spec, [NOTE, NOTES], tool_choice="required")
    assert grammar is not None
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    steps = [
        ('<tool_call>\n{"name": "save_', "note"),  # "save_note" vs "save_notes": branch point
        ("note", ""),
        ('"', ""),  # optional whitespace before ","
        (', "arguments": {"title": "T"', ""),
        (', "p', 'inned"'),
        ('inned": t', "rue"),
    ]
    for fed, forced in steps:
        assert automaton.feed(fed), fed
        assert automaton.forced().text == forced, fed


def test_long_repetitions_do_not_grow_the_stack() -> None:
    automaton = GbnfAutomaton('root ::= "\\"" [a-z]* "\\"" ("," [0-9])*')
    assert automaton.feed('"' + "x" * 5000 + '"' + ",1" * 2000)
    assert max(len(s) for s in automaton._stacks) < 8
    assert automaton.forced().text == ""


def test_the_few_characters_after_the_forced_text_are_listed() -> None:
    """``next_chars``: what may follow the forced text where it is a short list (the seam check
    of fast-forward reads it); many (a free string) or a negated class: ``None``."""
    a = GbnfAutomaton('root ::= "{" ("a" | "bc") "}" [^"]* "\\""')
    first = a.forced()
    assert first.text == "{" and first.next_chars == frozenset("ab")
    after = a.forced_after("{b")
    assert after is not None and after.text == "c}" and after.next_chars is None
    assert a.forced_after("{x") is None
    assert a.forced().text == "{"  # forced_after does not advance
    digits = GbnfAutomaton('root ::= "n: " [0-9] [0-9]*')
    assert digits.forced().next_chars == frozenset("0123456789")
