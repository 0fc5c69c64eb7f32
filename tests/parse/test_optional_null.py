"""``null`` for an optional argument is "not given" (issue 38 §4): the parser drops the member
from the call's arguments where the key is optional and its schema rejects ``null``, so the call
validates against the tool's full schema. Streaming holds such a member back until its value is
known, so the argument deltas add up to the batch arguments exactly, under any chunking.

The grammar that lets the model write it: tests/grammar/test_optional_null.py."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunking import feed_in_random_chunks
from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.dialect.spec import DialectSpec, ElementBody
from tooldialect.grammar.validate import check_call
from tooldialect.parse import ParsedOutput, StreamParser, parse_output
from tooldialect.tool_defs import normalize_tools

from .helpers import assemble, comparable

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1},
        "note": {"type": ["string", "null"]},
        "detail": {
            "type": "object",
            "properties": {"level": {"type": "integer"}, "lang": {"type": "string"}},
        },
    },
    "required": ["city"],
}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
TOOLS = [WEATHER]
HERMES = get_builtin("hermes")
SPECS = list(builtin_dialects())

# arguments text -> the arguments once the nulls that mean "not given" are dropped
CASES: dict[str, tuple[str, str]] = {
    "last": ('{"city": "Paris", "unit": null}', '{"city": "Paris"}'),
    "first": ('{"unit": null, "city": "Paris"}', '{"city": "Paris"}'),
    "middle": ('{"city": "Paris", "days": null, "unit": "c"}', '{"city": "Paris", "unit": "c"}'),
    "several": (
        '{"days": null, "unit": null, "city": "Paris", "detail": null}',
        '{"city": "Paris"}',
    ),
    "only": ('{"unit": null}', "{}"),
    "pretty": (
        '{\n  "days": null,\n  "city": "Paris",\n  "unit": null,\n  "note": "x",\n'
        '  "detail": null\n}',
        '{\n  "city": "Paris",\n  "note": "x"\n}',
    ),
    "pretty-only": ('{\n  "unit": null\n}', "{}"),
    "spaced": ('{ "unit" : null , "city" : "P" }', '{ "city" : "P" }'),
    "compact": ('{"city":"P","days":null,"unit":"f"}', '{"city":"P","unit":"f"}'),
    "null-is-a-value": ('{"city": "P", "note": null}', '{"city": "P", "note": null}'),
    "required-null": ('{"city": null, "unit": null}', '{"city": null}'),
    "nested-null": (
        '{"city": "P", "detail": {"level": null, "lang": "en"}}',
        '{"city": "P", "detail": {"level": null, "lang": "en"}}',
    ),
    "strings-that-look-like-it": (
        '{"city": "\\"unit\\": null, ", "unit": "c"}',
        '{"city": "\\"unit\\": null, ", "unit": "c"}',
    ),
    "escaped-key": ('{"city": "P", "\\u0075nit": null}', '{"city": "P"}'),
    "nothing": ("{}", "{}"),
    "spaced-nothing": ("{ }", "{ }"),
}


def same(a: ParsedOutput, b: ParsedOutput) -> bool:
    """Two parses alike, but for the generated call ids."""
    return comparable(a, ids=False) == comparable(b, ids=False)


def hermes_call(arguments: str) -> str:
    return f'Sure.\n<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call>'


def stream(
    spec: DialectSpec, chunks: list[str], *, stream_arguments: bool, tools: Any = TOOLS
) -> tuple[ParsedOutput, list[dict[str, Any]]]:
    parser = StreamParser(spec, tools=tools, stream_arguments=stream_arguments)
    deltas = [d for chunk in chunks for d in parser.feed(chunk)]
    deltas += parser.close()
    return parser.result, deltas


@pytest.mark.parametrize("name", list(CASES))
def test_batch_drops_the_members(name: str) -> None:
    written, expected = CASES[name]
    result = parse_output(hermes_call(written), HERMES, tools=TOOLS)
    (call,) = result.tool_calls
    assert call.arguments_json == expected
    assert call.arguments == json.loads(expected)
    assert result.content == "Sure."


@pytest.mark.parametrize("name", ["last", "first", "several", "pretty", "escaped-key"])
def test_the_call_then_validates(name: str) -> None:
    written, _ = CASES[name]
    assert check_call(normalize_tools(TOOLS), "get_weather", json.loads(written))
    (call,) = parse_output(hermes_call(written), HERMES, tools=TOOLS).tool_calls
    assert check_call(normalize_tools(TOOLS), "get_weather", call.arguments) == []


def test_without_the_tools_nothing_is_known_and_nothing_dropped() -> None:
    written, _ = CASES["last"]
    (call,) = parse_output(hermes_call(written), HERMES).tool_calls
    assert call.arguments_json == written


@pytest.mark.parametrize("stream_arguments", [False, True])
@pytest.mark.parametrize("name", list(CASES))
def test_streaming_equals_batch_under_every_chunking(name: str, stream_arguments: bool) -> None:
    """Whole, per character, at every cut into two and three pieces, and at random; the
    argument deltas add up to the batch arguments."""
    text = hermes_call(CASES[name][0])
    batch = parse_output(text, HERMES, tools=TOOLS, stream_arguments=stream_arguments)
    assert batch.tool_calls[0].arguments_json == CASES[name][1]
    n = len(text)
    chunkings = [[text], list(text)]
    chunkings += [[text[:i], text[i:]] for i in range(1, n)]
    chunkings += [[text[:i], text[i:j], text[j:]] for i in range(1, n, 3) for j in range(i, n, 5)]
    for chunks in chunkings:
        result, deltas = stream(HERMES, chunks, stream_arguments=stream_arguments)
        assert same(result, batch), chunks
        (call,) = assemble(deltas).calls
        assert call["arguments"] == batch.tool_calls[0].arguments_json, chunks
    rng = random.Random(name)
    for _ in range(20):
        parser = StreamParser(HERMES, tools=TOOLS, stream_arguments=stream_arguments)
        assert same(feed_in_random_chunks(parser, text, rng), batch)


def test_a_member_is_held_until_its_value_is_known() -> None:
    """Streamed arguments: ``, "unit": `` waits for the value's first character; a ``null``
    one never goes out, another goes out as written."""
    head = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
    dropped = StreamParser(HERMES, tools=TOOLS, stream_arguments=True)
    sent = [d for piece in (head, '"unit": ', "null", ', "note": "x') for d in dropped.feed(piece)]
    args = "".join(d["tool_calls"][0]["function"]["arguments"] for d in sent[1:])
    assert args == '{"city": "Paris", "note": "x'
    kept = StreamParser(HERMES, tools=TOOLS, stream_arguments=True)
    kept.feed(head)
    assert kept.feed('"unit": ') == []
    expected = [{"tool_calls": [{"index": 0, "function": {"arguments": ', "unit": "c'}}]}]
    assert kept.feed('"c') == expected


def test_a_truncated_call_keeps_its_partial_text() -> None:
    """Cut by the token limit inside a member: the text as written (not JSON), batch alike."""
    text = hermes_call('{"city": "Paris", "days": null, "unit": nu').removesuffix("}\n</tool_call>")
    batch = parse_output(text, HERMES, tools=TOOLS, truncated=True, stream_arguments=True)
    (call,) = batch.tool_calls
    assert call.truncated and call.arguments_json == '{"city": "Paris", "unit": nu'
    for i in range(1, len(text)):
        parser = StreamParser(HERMES, tools=TOOLS, stream_arguments=True)
        parser.feed(text[:i])
        parser.feed(text[i:])
        parser.close(truncated=True)
        assert same(parser.result, batch)


def call_of(spec_id: str, arguments: dict[str, Any]) -> Any:
    spec = get_builtin(spec_id)
    result = parse_output(spec.render_call("get_weather", arguments), spec, tools=TOOLS)
    (call,) = result.tool_calls
    return call


def carries_null(spec_id: str, key: str) -> bool:
    """An element body writes a string as raw text: ``null`` there is the string ``"null"``,
    unless an attribute says the value is no string (DeepSeek V3.2's ``string="false"``)."""
    body = get_builtin(spec_id).primary.body
    if not isinstance(body, ElementBody) or key != "unit":
        return True
    return "{is_string}" in body.param or "{type}" in body.param


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_every_body_kind_drops_the_null_it_writes(spec_id: str) -> None:
    """JSON, tagged, element (a schema without strings) and Python bodies (``None``)."""
    for key in ("days", "detail", "unit"):
        call = call_of(spec_id, {"city": "Paris", key: None})
        if carries_null(spec_id, key):
            assert call.arguments == {"city": "Paris"}, key
        else:
            assert call.arguments == {"city": "Paris", "unit": "null"}
    kept = call_of(spec_id, {"city": "Paris", "note": None})
    assert kept.arguments == {"city": "Paris", "note": None}
    nested = call_of(spec_id, {"city": "Paris", "detail": {"level": None}})
    assert nested.arguments == {"city": "Paris", "detail": {"level": None}}


@pytest.mark.parametrize("spec_id", ["qwen3-coder", "pythonic", "gemma4", "gpt-oss", "kimi-k2"])
def test_other_body_kinds_stream_like_batch(spec_id: str) -> None:
    spec = get_builtin(spec_id)
    text = spec.render_call("get_weather", {"days": None, "city": "Paris", "detail": None})
    batch = parse_output(text, spec, tools=TOOLS)
    assert [c.arguments for c in batch.tool_calls] == [{"city": "Paris"}]
    for i in range(1, len(text)):
        result, deltas = stream(spec, [text[:i], text[i:]], stream_arguments=False)
        assert same(result, batch)
        assert assemble(deltas).calls[0]["arguments"] == batch.tool_calls[0].arguments_json


# -- the filter itself --------------------------------------------------------------------------

KEYS = frozenset({"a", "b", "c"})
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d", 'e,"', "}"]), values, max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    objects,
    st.sampled_from([None, 2, 4]),
    st.sampled_from([(", ", ": "), (",", ":")]),
    st.data(),
)
def test_the_filter_drops_exactly_the_null_members(
    value: dict[str, Any], indent: int | None, seps: tuple[str, str], data: Any
) -> None:
    from tooldialect.parse.null_members import NullMembers, drop_null_members

    text = json.dumps(value, indent=indent, separators=seps if indent is None else None)
    expected = {k: v for k, v in value.items() if not (k in KEYS and v is None)}
    whole = drop_null_members(text, KEYS)
    assert json.loads(whole) == expected
    if expected == value:
        assert whole == text  # nothing dropped: the text as written
    if indent is not None and expected:
        assert whole == json.dumps(expected, indent=indent)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=6)))
    f = NullMembers(KEYS)
    pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(f.feed(p) for p in pieces) + f.flush() == whole


def test_the_keys_come_from_the_schema() -> None:
    from tooldialect.grammar.optional_null import optional_null_keys

    assert optional_null_keys(PARAMETERS) == {"unit", "days", "detail"}
