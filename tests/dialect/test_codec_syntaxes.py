"""Each value codec is one module: what it writes (a table per codec, over every JSON type and the
strings syntaxes escape differently), what its grammar admits (the same texts, compiled from the
value's JSON Schema, checked on ``GbnfAutomaton``), and what it reads back (exactly the value;
leniently what models write instead). Hypothesis checks the three agree on any JSON value, that a
call streamed in any chunks reads as in one piece, and, where a reference parser exists (PyYAML,
``tomllib``), that the text is what that language reads as the value."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import CallFormat, DialectSpec, PythonBody
from tooldialect.dialect.value_codecs import (
    TOKEN_QUOTE,
    NotRead,
    ValueCodec,
    registered_codecs,
    value_codec,
)
from tooldialect.dialect.value_codecs.scan import BAD, WAIT
from tooldialect.grammar.codec import LAYOUTS, codec_for
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.grammar.gbnf import GbnfBuilder
from tooldialect.grammar.schema import SchemaConverter
from tooldialect.parse import StreamParser, parse_output

VALUES: dict[str, Any] = {
    "string": "Lyon",
    "quotes": 'say "hi", it\'s',
    "backslash": "a\\b",
    "markup": '<a href="x">&amp;</a>',
    "newline": "l1\nl2\ttab",
    "unicode": "Zürich ☃ 𝄞",
    "control": "bell\x07",
    "integer": -42,
    "number": 2.5,
    "exponent": 1e20,
    "true": True,
    "false": False,
    "null": None,
    "array": [1, "x", None],
    "object": {"city": "Paris", "n": 1},
    "odd_keys": {"a b": 1, "end": 2, "true": 3},
    "nested": {"a": [{"b": None}, []]},
    "empty_object": {},
    "empty_array": [],
}

# What each codec writes for each value, read against the language's own rules.
WRITTEN: dict[str, dict[str, str]] = {
    "js-object": {
        "string": "'Lyon'",
        "quotes": "'say \"hi\", it\\'s'",
        "backslash": "'a\\\\b'",
        "markup": "'<a href=\"x\">&amp;</a>'",
        "newline": "'l1\\nl2\\ttab'",
        "unicode": "'Zürich ☃ 𝄞'",
        "control": "'bell\\u0007'",
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "null",
        "array": "[1, 'x', null]",
        "object": "{city: 'Paris', n: 1}",
        "odd_keys": "{'a b': 1, end: 2, true: 3}",
        "nested": "{a: [{b: null}, []]}",
        "empty_object": "{}",
        "empty_array": "[]",
    },
    "yaml-flow": {
        "string": "Lyon",
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\u0007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1.0e+20",
        "true": "true",
        "false": "false",
        "null": "null",
        "array": "[1, x, null]",
        "object": "{city: Paris, n: 1}",
        "odd_keys": '{"a b": 1, end: 2, "true": 3}',
        "nested": "{a: [{b: null}, []]}",
        "empty_object": "{}",
        "empty_array": "[]",
    },
    "toml-inline": {
        "string": '"Lyon"',
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\u0007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "null",
        "array": '[1, "x", null]',
        "object": '{ city = "Paris", n = 1 }',
        "odd_keys": '{ "a b" = 1, end = 2, true = 3 }',
        "nested": "{ a = [{}, []] }",
        "empty_object": "{}",
        "empty_array": "[]",
    },
    "lua-table": {
        "string": '"Lyon"',
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "nil",
        "array": '{1, "x", nil}',
        "object": '{city = "Paris", n = 1}',
        "odd_keys": '{["a b"] = 1, ["end"] = 2, ["true"] = 3}',
        "nested": "{a = {{b = nil}, {}}}",
        "empty_object": "{}",
        "empty_array": "{}",
    },
    "ruby-hash": {
        "string": '"Lyon"',
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\u0007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "nil",
        "array": '[1, "x", nil]',
        "object": '{"city" => "Paris", "n" => 1}',
        "odd_keys": '{"a b" => 1, "end" => 2, "true" => 3}',
        "nested": '{"a" => [{"b" => nil}, []]}',
        "empty_object": "{}",
        "empty_array": "[]",
    },
    "ruby-symbols": {
        "string": '"Lyon"',
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\u0007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "nil",
        "array": '[1, "x", nil]',
        "object": '{:city => "Paris", :n => 1}',
        "odd_keys": '{"a b" => 1, :end => 2, :true => 3}',
        "nested": "{:a => [{:b => nil}, []]}",
        "empty_object": "{}",
        "empty_array": "[]",
    },
    "sql": {
        "string": "'Lyon'",
        "quotes": "'say \"hi\", it''s'",
        "backslash": "'a\\b'",
        "markup": "'<a href=\"x\">&amp;</a>'",
        "newline": "'l1\nl2\ttab'",
        "unicode": "'Zürich ☃ 𝄞'",
        "control": "'bell\x07'",
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "TRUE",
        "false": "FALSE",
        "null": "NULL",
        "array": "JSON_ARRAY(1, 'x', NULL)",
        "object": "JSON_OBJECT('city', 'Paris', 'n', 1)",
        "odd_keys": "JSON_OBJECT('a b', 1, 'end', 2, 'true', 3)",
        "nested": "JSON_OBJECT('a', JSON_ARRAY(JSON_OBJECT('b', NULL), JSON_ARRAY()))",
        "empty_object": "JSON_OBJECT()",
        "empty_array": "JSON_ARRAY()",
    },
    "php-array": {
        "string": "'Lyon'",
        "quotes": "'say \"hi\", it\\'s'",
        "backslash": "'a\\\\b'",
        "markup": "'<a href=\"x\">&amp;</a>'",
        "newline": "'l1\nl2\ttab'",
        "unicode": "'Zürich ☃ 𝄞'",
        "control": "'bell\x07'",
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "null",
        "array": "[1, 'x', null]",
        "object": "['city' => 'Paris', 'n' => 1]",
        "odd_keys": "['a b' => 1, 'end' => 2, 'true' => 3]",
        "nested": "['a' => [['b' => null], []]]",
        "empty_object": "[]",
        "empty_array": "[]",
    },
    "edn": {
        "string": '"Lyon"',
        "quotes": '"say \\"hi\\", it\'s"',
        "backslash": '"a\\\\b"',
        "markup": '"<a href=\\"x\\">&amp;</a>"',
        "newline": '"l1\\nl2\\ttab"',
        "unicode": '"Zürich ☃ 𝄞"',
        "control": '"bell\\u0007"',
        "integer": "-42",
        "number": "2.5",
        "exponent": "1e+20",
        "true": "true",
        "false": "false",
        "null": "nil",
        "array": '[1 "x" nil]',
        "object": '{:city "Paris" :n 1}',
        "odd_keys": '{"a b" 1 :end 2 :true 3}',
        "nested": "{:a [{:b nil} []]}",
        "empty_object": "{}",
        "empty_array": "[]",
    },
}
NEW = sorted(WRITTEN)
ALL = [c.name for c in registered_codecs()]


def _shared(codec: ValueCodec, quote: str = TOKEN_QUOTE) -> bool:
    return codec.syntax(quote).shared_brackets


def _plain(value: Any) -> Any:
    """``value`` with every empty object or array as ``[]``: what a codec whose objects and
    arrays share brackets reads is equal up to that (the parser retypes by the schema)."""
    if value in ({}, []):
        return []
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _without_null_members(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_members(v) for v in value]
    return value


def _same(codec: ValueCodec, got: Any, want: Any, quote: str = TOKEN_QUOTE) -> bool:
    """``got`` is ``want`` as the codec can spell it (types kept)."""
    if codec.syntax(quote).omit_null_members:  # TOML: a null member is left out
        want = _without_null_members(want)
    if _shared(codec, quote):
        return bool(_plain(got) == _plain(want))
    return bool(got == want) and json.dumps(got) == json.dumps(want)


def schema_of(value: Any) -> dict[str, Any]:
    """A JSON Schema the value is an instance of, typed all the way down."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        items = [schema_of(v) for v in value]
        same = all(i == items[0] for i in items)
        return {"type": "array", "items": items[0] if items and same else {}}
    props = {k: schema_of(v) for k, v in value.items()}
    # a null member is not required: a codec without null (TOML) leaves it out
    required = [k for k, v in value.items() if v is not None]
    return {"type": "object", "properties": props, "required": required}


def grammar_for(
    name: str, schema: Any, *, layout: Any = "canonical", quote: str = TOKEN_QUOTE
) -> str:
    b = GbnfBuilder()
    root = b.name("root")
    conv = SchemaConverter(b, schema, codec=codec_for(name, layout, string_quote=quote))
    b.define(root, conv.visit(schema, "", hint="value"))
    return b.render(root)


def admits(name: str, value: Any, text: str, **kw: Any) -> bool:
    return GbnfAutomaton(grammar_for(name, schema_of(value), **kw)).feed(text)


CASES = [
    pytest.param(codec, key, WRITTEN[codec][key], id=f"{codec}-{key}")
    for codec in NEW
    for key in VALUES
]


@pytest.mark.parametrize(("name", "key", "text"), CASES)
def test_a_codec_writes_reads_and_admits_each_json_value(name: str, key: str, text: str) -> None:
    codec, value = value_codec(name), VALUES[key]
    assert codec.encode(value, quote=TOKEN_QUOTE) == text
    assert _same(codec, codec.decode(text, quote=TOKEN_QUOTE), value)
    for layout in LAYOUTS:
        assert admits(name, value, text, layout=layout), layout


@pytest.mark.parametrize("name", NEW)
def test_a_grammar_refuses_another_syntax(name: str) -> None:
    """The grammar is the codec's, not JSON's, and the schema's: a JSON object, or a string
    where the schema wants an integer, is refused."""
    value = VALUES["object"]
    mine = WRITTEN[name]["object"]
    assert admits(name, value, mine)
    assert not admits(name, value, json.dumps(value))
    assert not admits(name, value, mine.replace(" 1", ' "1"'))


QUOTES = [
    pytest.param("js-object", '"', '{city: "Paris", q: "it\'s"}', id="js-object-double"),
    pytest.param("lua-table", "'", "{city = 'Paris', q = 'it\\'s'}", id="lua-table-single"),
    pytest.param("ruby-hash", "'", "{'city' => 'Paris', 'q' => 'it\\'s'}", id="ruby-hash-single"),
    pytest.param("php-array", '"', '["city" => "Paris", "q" => "it\'s"]', id="php-array-double"),
]


@pytest.mark.parametrize(("name", "quote", "text"), QUOTES)
def test_a_codec_of_several_quotes_writes_the_one_chosen(name: str, quote: str, text: str) -> None:
    codec, value = value_codec(name), {"city": "Paris", "q": "it's"}
    assert codec.encode(value, quote=quote) == text
    assert codec.decode(text, quote=quote) == value
    assert admits(name, value, text, quote=quote)
    # the default quote's grammar is another one
    assert not admits(name, value, text)


LENIENT = [
    pytest.param(
        "js-object", '{city: "Paris", n: 1,}', {"city": "Paris", "n": 1}, id="js-dq-trailing"
    ),
    pytest.param(
        "js-object",
        "{'city': 'Paris', n: undefined}",
        {"city": "Paris", "n": None},
        id="js-quoted-key",
    ),
    pytest.param(
        "yaml-flow",
        "{city: 'it''s', ok: yes, n: ~}",
        {"city": "it's", "ok": True, "n": None},
        id="yaml-words",
    ),
    pytest.param(
        "yaml-flow",
        "{q: red lamp , t: [a, b c]}",
        {"q": "red lamp", "t": ["a", "b c"]},
        id="yaml-plain",
    ),
    pytest.param(
        "toml-inline", "{a='C:\\path', b = 1}", {"a": "C:\\path", "b": 1}, id="toml-literal"
    ),
    pytest.param(
        "lua-table", "{['a'] = 'x', b = {1,2,}}", {"a": "x", "b": [1, 2]}, id="lua-brackets"
    ),
    pytest.param("lua-table", '{a = "\\65\\066\\x43\\u{44}"}', {"a": "ABCD"}, id="lua-escapes"),
    pytest.param(
        "ruby-hash", '{:city => "Paris", "n"=>1}', {"city": "Paris", "n": 1}, id="ruby-symbol"
    ),
    pytest.param(
        "php-array", "['a' => 'x\\n', 'b' => \"y\\n\"]", {"a": "x\\n", "b": "y\n"}, id="php-quotes"
    ),
    pytest.param(
        "edn", '{:a [1, 2], :b "x" :c true}', {"a": [1, 2], "b": "x", "c": True}, id="edn-commas"
    ),
    pytest.param("json", '{"a": "\\ud834\\udd1e"}', {"a": "𝄞"}, id="json-surrogates"),
    pytest.param("python", "{'a': True, \"b\": None}", {"a": True, "b": None}, id="python-quotes"),
]


@pytest.mark.parametrize(("name", "text", "value"), LENIENT)
def test_a_codec_reads_what_models_write_instead(name: str, text: str, value: Any) -> None:
    assert value_codec(name).decode(text, quote=TOKEN_QUOTE) == value


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("text", ["", "{a: ", "[1, 2", "{a 1}x"], ids=repr)
def test_text_that_is_no_value_does_not_read(name: str, text: str) -> None:
    codec = value_codec(name)
    with pytest.raises(NotRead):
        codec.decode(text, quote=codec.quote_for(TOKEN_QUOTE) or TOKEN_QUOTE)


def test_yaml_flow_is_what_pyyaml_reads() -> None:
    yaml = pytest.importorskip("yaml")
    codec = value_codec("yaml-flow")
    for value in VALUES.values():
        assert yaml.safe_load(codec.encode(value, quote=TOKEN_QUOTE)) == value


def test_toml_inline_is_what_tomllib_reads() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    codec = value_codec("toml-inline")
    for key, value in VALUES.items():
        if key in ("null", "array", "nested"):
            continue  # TOML has no null
        text = codec.encode(value, quote=TOKEN_QUOTE)
        assert tomllib.loads(f"v = {text}")["v"] == value


# -- the scan that finds a call's end in a growing text -------------------------------------------


@pytest.mark.parametrize(
    ("name", "inner"),
    [
        pytest.param("js-object", "{q: 'a) b\\' c)'}", id="js-object"),
        pytest.param("php-array", "['q' => 'a) \\\\', 'r' => ')']", id="php-array"),
        pytest.param("yaml-flow", "{q: 'it'')s', r: \")\"}", id="yaml-flow"),
        pytest.param("lua-table", '{q = "\\")"}', id="lua-table"),
    ],
)
def test_the_scan_finds_the_closer_outside_strings_in_any_chunks(name: str, inner: str) -> None:
    codec = value_codec(name)
    text = inner + ")</call> after"
    want = len(inner)
    for cut in range(1, len(text)):
        scan = codec.call_scan(")", 0, quote=TOKEN_QUOTE)
        got = scan.run(text[:cut], cut, False)
        if got == WAIT:
            got = scan.run(text, len(text), True)
        assert got == want, cut
    assert codec.call_scan(")", 0, quote=TOKEN_QUOTE).run("]", 1, True) == BAD


# -- any JSON value -------------------------------------------------------------------------------

_keys = st.one_of(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), st.text(max_size=6))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)


def _fits(codec: ValueCodec, quote: str, value: Any) -> bool:
    """Whether the codec can spell ``value``: a bare-key codec's keys are identifiers and its
    strings cannot hold the quote token."""
    if not codec.token_quoted:
        return True
    return all(quote not in s for s in _strings_of(value)) and all(
        k.isascii() and k.isidentifier() for k in _keys_of(value)
    )


def _strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_of(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings_of(v)]
    return []


def _keys_of(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in _keys_of(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys_of(v)]
    return []


def _variants() -> list[tuple[str, str]]:
    out = []
    for codec in registered_codecs():
        for quote in codec.quotes or (TOKEN_QUOTE,):
            out.append((codec.name, quote))
    return out


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("name", "quote"), _variants(), ids=lambda x: x if x not in "'\"" else None
)
@PROPERTY
@given(value=_values)
def test_any_value_is_admitted_by_its_grammar_and_reads_back(
    name: str, quote: str, value: Any
) -> None:
    codec = value_codec(name)
    if not _fits(codec, quote, value):
        return
    text = codec.encode(value, quote=quote)
    assert _same(codec, codec.decode(text, quote=quote), value, quote)
    assert admits(name, value, text, quote=quote)


def _call_spec(codec: ValueCodec, quote: str) -> DialectSpec:
    """A call ``<call>NAME(k=v, ...)</call>``, the arguments an object of the codec where they
    are not keywords."""
    syntax = codec.syntax(quote)
    if codec.keyword_arguments:
        opener, closer, assign, sep = "(", ")", "=", ", "
    else:
        opener, closer = "(" + syntax.object_open, syntax.object_close + ")"
        assign, sep = syntax.key_sep, syntax.member_sep
    body = PythonBody(
        call_open="<call>{name}" + opener.replace("{", "{{"),
        call_close=closer + "</call>",
        assign=assign,
        arg_separator=sep,
        value_codec=codec.name,
        string_quote=quote,
    )
    return DialectSpec(id="codec-call", formats=[CallFormat(body=body)])


@pytest.mark.parametrize(
    ("name", "quote"), _variants(), ids=lambda x: x if x not in "'\"" else None
)
@PROPERTY
@given(value=_values, seed=st.integers(0, 2**16))
def test_a_call_streamed_in_any_chunks_reads_as_in_one_piece(
    name: str, quote: str, value: Any, seed: int
) -> None:
    codec = value_codec(name)
    args = {"v": value, "n": 3}
    if not _fits(codec, quote, args):
        return
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": schema_of(args)},
    }
    spec = _call_spec(codec, quote)
    text = "Sure. " + spec.render_call("f", args) + " Done."
    batch = parse_output(text, spec, tools=[tool])
    assert [c.name for c in batch.tool_calls] == ["f"]
    assert _same(codec, batch.tool_calls[0].arguments, args, quote)
    streamed = feed_in_random_chunks(StreamParser(spec, tools=[tool]), text, random.Random(seed))
    assert [(c.name, c.arguments_json) for c in streamed.tool_calls] == [
        (c.name, c.arguments_json) for c in batch.tool_calls
    ]
    assert streamed.content == batch.content
