"""Values as real templates write them, read back exactly, batch and streamed alike: untyped and
nullable values (``None``, ``null``, literals) in element and key:value bodies, and Python-style
calls the way templates print them (Python repr, no separator, unquoted text, every value quoted,
unescaped inner quotes, a keyword as an argument name)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunking import feed_in_random_chunks
from tooldialect import DialectSpec, parse_output
from tooldialect.parse import StreamParser
from tooldialect.parse.values import coerce_value, untyped_value
from tooldialect.verify import RICH_ARGUMENTS, tool_for

from .helpers import Case, check_consistent, comparable, run_stream

RICH_TOOL = tool_for(RICH_ARGUMENTS)
FLIGHT = {
    "type": "function",
    "function": {
        "name": "book_flight",
        "parameters": {
            "type": "object",
            "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        },
    },
}


def _read(text: str, spec: DialectSpec, **kw: Any) -> tuple[str | None, list[tuple[str, Any]]]:
    """The batch reading, checked equal to a one-character stream and to random chunkings."""
    tools = kw.pop("tools", [RICH_TOOL, FLIGHT])
    batch = parse_output(text, spec, tools=tools, **kw)
    streamed, assembled = run_stream(
        Case(id="x", spec=spec, text=text, expected={}, tools=tools, **kw), list(text)
    )
    check_consistent(streamed, assembled)
    assert comparable(streamed, ids=False) == comparable(batch, ids=False)
    for seed in range(8):
        parser = StreamParser(spec, tools=tools)
        got = feed_in_random_chunks(parser, text, random.Random(seed), most=9)
        assert comparable(got, ids=False) == comparable(batch, ids=False), seed
    return batch.content, [(c.name, c.arguments) for c in batch.tool_calls]


RICH_TEXT = 'a "lamp" <b> & co\nsecond line'


# --- untyped and nullable values -------------------------------------------------------------

UNTYPED = [
    ("none", "None", None),
    ("null", "null", None),
    ("null-in-layout", "\nnull\n", None),
    ("python-true", "True", True),
    ("json-false", "false", False),
    ("integer", "3", 3),
    ("float", "0.25", 0.25),
    ("json-array", '["x", 2, false]', ["x", 2, False]),
    ("python-dict", "{'room': 'hall'}", {"room": "hall"}),
    ("text", "hall", "hall"),
    ("quoted-string-stays-text", '"3"', '"3"'),
    ("nan-is-no-json", "NaN", "NaN"),
    ("not-only-null", "None of them", "None of them"),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in UNTYPED], ids=[c[0] for c in UNTYPED])
def test_an_untyped_value_is_what_it_spells(raw: str, want: Any) -> None:
    assert untyped_value(raw) == want
    assert coerce_value(raw, {"description": "anything"}) == want


def test_an_undeclared_value_stays_text() -> None:
    assert coerce_value("None", None) == "None"
    assert coerce_value("3", None) == "3"


def test_a_nullable_value_reads_null() -> None:
    assert coerce_value("None", {"type": ["string", "null"]}) is None
    assert coerce_value("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) is None
    assert coerce_value("None", {"type": "string"}) == "None"


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (
            "qwen3-coder",
            "<tool_call>\n<function=lookup_item>\n<parameter=query>\nq\n</parameter>\n"
            "<parameter=after>\nNone\n</parameter>\n</function>\n</tool_call>",
        ),
        (
            "glm-4.5",
            "<tool_call>lookup_item\n<arg_key>query</arg_key>\n<arg_value>q</arg_value>\n"
            "<arg_key>after</arg_key>\n<arg_value>null</arg_value>\n</tool_call>",
        ),
        (
            "minimax-m2",
            '<minimax:tool_call>\n<invoke name="lookup_item">\n<parameter name="query">q'
            '</parameter>\n<parameter name="after">null</parameter>\n</invoke>\n'
            "</minimax:tool_call>",
        ),
        ("gemma4", '<|tool_call>call:lookup_item{after:None,query:<|"|>q<|"|>}<tool_call|>'),
    ],
)
def test_an_untyped_null_reads_null_in_every_body(spec: str, text: str) -> None:
    content, calls = _read(text, DialectSpec.builtin(spec))
    assert calls == [("lookup_item", {"query": "q", "after": None})]
    assert not content


def test_untyped_literals_decode_in_an_element_body() -> None:
    text = (
        "<tool_call>\n<function=lookup_item>\n<parameter=query>\nq\n</parameter>\n"
        "<parameter=after>\n[1, 'two', True]\n</parameter>\n</function>\n</tool_call>"
    )
    assert _read(text, DialectSpec.builtin("qwen3-coder"))[1] == [
        ("lookup_item", {"query": "q", "after": [1, "two", True]})
    ]


# --- Python-style calls ----------------------------------------------------------------------

PYTHONIC = [
    (
        "python-repr",  # LFM2.5: a raw newline inside a single-quoted string
        "[lookup_item(query='a \"lamp\" <b> & co\nsecond line', limit=3, ratio=0.25, "
        "exact=True, after=None, tags=['x', 2, False], where={'room': 'hall', 'box': {'n': 1}})]",
    ),
    (
        "no-separator",  # vLLM's gemma3 pythonic template
        '[lookup_item(query="a \\"lamp\\" <b> & co\\nsecond line"limit=3ratio=0.25exact=true'
        'after=nulltags=["x", 2, false]where={"room": "hall", "box": {"n": 1}})]',
    ),
    (
        "unquoted-values",  # vLLM's llama3.2 / ToolACE pythonic templates
        '[lookup_item(query=a "lamp" <b> & co\nsecond line, limit=3, ratio=0.25, exact=True, '
        "after=None, tags=['x', 2, False], where={'room': 'hall', 'box': {'n': 1}})]",
    ),
    (
        "every-value-quoted",  # vLLM's llama4 pythonic template, inner quotes unescaped
        '[lookup_item(query="a "lamp" <b> & co\nsecond line", limit="3", ratio="0.25", '
        'exact="True", after="None", tags="[\'x\', 2, False]", '
        "where=\"{'room': 'hall', 'box': {'n': 1}}\")]",
    ),
    (
        "unescaped-inner-quotes",  # LFM2.5-VL
        '[lookup_item(query="a "lamp" <b> & co\nsecond line", limit=3, ratio=0.25, exact=True, '
        "after=None, tags=['x', 2, False], where={'room': 'hall', 'box': {'n': 1}})]",
    ),
]


@pytest.mark.parametrize("text", [c[1] for c in PYTHONIC], ids=[c[0] for c in PYTHONIC])
def test_a_pythonic_call_reads_as_templates_write_it(text: str) -> None:
    content, calls = _read(text, DialectSpec.builtin("pythonic"))
    assert calls == [("lookup_item", RICH_ARGUMENTS)]
    assert content is None


def test_lfm2_reads_python_repr_in_its_markers() -> None:
    text = (
        "<|tool_call_start|>[lookup_item(query='a \"lamp\" <b> & co\nsecond line', limit=3, "
        "ratio=0.25, exact=True, after=None, tags=['x', 2, False], "
        "where={'room': 'hall', 'box': {'n': 1}})]<|tool_call_end|>"
    )
    assert _read(text, DialectSpec.builtin("lfm2"))[1] == [("lookup_item", RICH_ARGUMENTS)]


def test_a_python_keyword_names_an_argument() -> None:
    text = '[book_flight(from="SFO", to="NYC"), book_flight(from=\'LAX\', to=BOS)]'
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("book_flight", {"from": "SFO", "to": "NYC"}),
        ("book_flight", {"from": "LAX", "to": "BOS"}),
    ]


def test_an_unquoted_value_ends_only_where_the_call_can() -> None:
    # a ")" inside unquoted text does not end it: what follows is no end of a call
    text = "[lookup_item(query=call f(x) now, limit=3)]"
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("lookup_item", {"query": "call f(x) now", "limit": 3})
    ]


def test_a_quoted_string_is_kept_where_the_schema_allows_strings() -> None:
    text = '[lookup_item(query="3", limit="3")]'
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("lookup_item", {"query": "3", "limit": 3})
    ]


@pytest.mark.parametrize(
    "text",
    [
        '[lookup_item("q")]',  # positional
        '[lookup_item(query="a)]',  # the string never closes
        "[lookup_item(query=[1, 2)]",  # a container that does not close
        "[lookup_item(query=)]",  # no value
    ],
)
def test_what_is_no_keyword_call_stays_content(text: str) -> None:
    assert _read(text, DialectSpec.builtin("pythonic")) == (text, [])


def test_a_cut_unquoted_value_is_no_call() -> None:
    spec = DialectSpec.builtin("pythonic")
    text = "[lookup_item(query=f(x)"
    assert parse_output(text, spec, tools=[RICH_TOOL], truncated=True).tool_calls == []
    assert parse_output(text, spec, tools=[RICH_TOOL]).tool_calls[0].arguments == {"query": "f(x"}


def test_a_key_value_codec_quoting_every_value_is_typed_by_the_schema() -> None:
    # FunctionGemma's template writes every value between its string tokens
    q = '<|"|>'
    text = (
        f"<|tool_call>call:lookup_item{{query:{q}3{q},limit:{q}3{q},exact:{q}True{q},"
        f"after:{q}None{q},tags:{q}['x', 2, False]{q}}}<tool_call|>"
    )
    assert _read(text, DialectSpec.builtin("gemma4"))[1] == [
        (
            "lookup_item",
            {"query": "3", "limit": 3, "exact": True, "after": None, "tags": ["x", 2, False]},
        )
    ]


CODE = "def f(x):\n    return g(x), h['k']\n" * 40


@pytest.mark.parametrize(
    "text",
    [
        f"[lookup_item(query={CODE}, limit=3)]",  # unquoted: ")" then ", key=" goes on
        f"[lookup_item(query={json.dumps(CODE)}, limit=3)]",
        f"[lookup_item(query='{CODE}', limit=3)]",  # raw newlines in a Python string
    ],
    ids=["unquoted", "json-quoted", "python-quoted"],
)
def test_long_values_with_closers_inside_read_whole(text: str) -> None:
    want = CODE.rstrip() if "query=def" in text else CODE
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("lookup_item", {"query": want, "limit": 3})
    ]


def test_a_long_container_streams_as_batch() -> None:
    tags = [{"n": i, "s": f"x) ]{i}"} for i in range(60)]
    for written in (json.dumps(tags), repr(tags)):
        text = f"[lookup_item(query='q', where={{'t': {written}}})]"
        assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
            ("lookup_item", {"query": "q", "where": {"t": tags}})
        ]


def test_a_triple_quoted_string_reads_whole() -> None:
    code = "def f():\n    return \"x\", 'y'\n"
    text = f'[lookup_item(query="""{code}""", limit=3)]'
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("lookup_item", {"query": code, "limit": 3})
    ]


def test_a_container_with_escaped_quotes_and_brackets_in_strings() -> None:
    text = "[lookup_item(query='q', tags=['it\\'s (', \"x]\\\"y\", 2])]"
    assert _read(text, DialectSpec.builtin("pythonic"))[1] == [
        ("lookup_item", {"query": "q", "tags": ["it's (", 'x]"y', 2]})
    ]


_PIECES = st.sampled_from(
    ["a", "b", " ", "\n", '"', "'", "(", ")", "[", "]", "{", "}", ",", "=", "\\", "x=", ", n=3"]
)


@settings(max_examples=150, deadline=None)
@given(
    value=st.lists(_PIECES, max_size=14).map("".join),
    quote=st.sampled_from(['"', "'", ""]),
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=30),
)
def test_any_python_call_streams_as_batch(value: str, quote: str, sizes: list[int]) -> None:
    """Whatever a value holds (quotes, brackets, separators, escapes), a streamed read in any
    chunking decides as the batch read: the resumable scan never decides on a partial text."""
    spec = DialectSpec.builtin("pythonic")
    text = f"[lookup_item(query={quote}{value}{quote}, limit=3), lookup_item(query='z')] tail"
    batch = parse_output(text, spec, tools=[RICH_TOOL])
    parser = StreamParser(spec, tools=[RICH_TOOL])
    i = k = 0
    while i < len(text):
        parser.feed(text[i : i + sizes[k % len(sizes)]])
        i += sizes[k % len(sizes)]
        k += 1
    parser.close()
    assert comparable(parser.result, ids=False) == comparable(batch, ids=False)
