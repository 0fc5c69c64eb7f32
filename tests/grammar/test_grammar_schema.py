"""JSON Schema -> GBNF: accepted/rejected values on llama.cpp's sampler; unsupported keywords."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import model_path
from grammar_check import grammar_accepts, validate_grammar, vocab_of
from tooldialect.errors import UnsupportedSchemaError
from tooldialect.grammar import json_schema_to_gbnf, schema_grammar


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)


OBJ = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}},
    "required": ["a", "c"],
}
TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["v"],
        }
    },
    "$ref": "#/$defs/node",
}

# (id, schema, accepted texts, rejected texts)
CASES: list[tuple[str, Any, list[str], list[str]]] = [
    ("empty-is-any", {}, ["1", '"x"', "[1, {}]", '{"k": null}', "true"], ["tru", "'x'"]),
    (
        "annotation-only-is-any",
        {"title": "Any", "description": "d"},
        ["[]", "-2.5e3", "null"],
        ["nul"],
    ),
    (
        "object-order",
        OBJ,
        ['{"a": "x", "c": true}', '{"a":"x","b":3,"c":false}', '{\n  "a": "x",\n  "c": true\n}'],
        [
            '{"c": true, "a": "x"}',
            '{"a": "x"}',
            '{"a": "x", "c": true, "d": 1}',
            '{"a": "x",, "c": true}',
        ],
    ),
    ("closed-empty-args", {"type": "object", "properties": {}}, ["{}", "{ }"], ['{"x": 1}']),
    ("open-object", {"type": "object"}, ['{"x": [1, 2]}', "{}"], ["[]"]),
    (
        "additional-schema",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
        ['{"a": 1, "z": "s"}', '{"z": "s"}', "{}"],
        ['{"z": 1}'],
    ),
    (
        "enum-const-escapes",
        {"enum": ['a"b', "c\\d", 3, None]},
        ['"a\\"b"', '"c\\\\d"', "3", "null"],
        ['"a"', "4"],
    ),
    ("const", {"const": {"k": [1]}}, ['{"k": [1]}'], ['{"k": [2]}']),
    ("type-list", {"type": ["integer", "null"]}, ["12", "null", "-3"], ["1.5", '"1"']),
    ("nullable", {"type": "string", "nullable": True}, ['"x"', "null"], ["1"]),
    (
        "anyOf",
        {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]},
        ["5", '["a", "b"]', "[]"],
        ["[1]", '"x"'],
    ),
    ("oneOf", {"oneOf": [{"const": "x"}, {"const": "y"}]}, ['"x"', '"y"'], ['"z"']),
    (
        "allOf-merge",
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
            ]
        },
        ['{"a": 1, "b": 2}'],
        ['{"a": 1}', '{"b": 2}'],
    ),
    (
        "ref-recursive",
        TREE,
        ['{"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]}'],
        ['{"kids": []}', '{"v": 1, "kids": [{}]}'],
    ),
    (
        "definitions",
        {
            "definitions": {"x": {"type": "boolean"}},
            "type": "object",
            "properties": {"f": {"$ref": "#/definitions/x"}},
            "required": ["f"],
        },
        ['{"f": false}'],
        ['{"f": 0}'],
    ),
    (
        "array-bounds",
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
        ["[1]", "[1, 2]"],
        ["[]", "[1, 2, 3]"],
    ),
    (
        "prefix-items",
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
        ['["a", 1]'],
        ['["a"]', '[1, "a"]', '["a", 1, 2]'],
    ),
    (
        "string-length",
        {"type": "string", "minLength": 2, "maxLength": 3},
        ['"ab"', '"a\\nc"', '"abc"'],
        ['"a"', '"abcd"'],
    ),
    (
        "no-raw-control-chars",
        {"type": "string"},
        ['"a\\tb"', '"é ✓"'],
        ['"a\tb"', '"a\nb"', '"a\\qb"'],
    ),
    (
        "pattern",
        {"type": "string", "pattern": "^[A-Z]{2}-\\d{2,3}$"},
        ['"AB-12"', '"XY-999"'],
        ['"ab-12"', '"AB-1"'],
    ),
    ("pattern-unanchored", {"type": "string", "pattern": "ab|cd"}, ['"xxabyy"', '"cd"'], ['"ax"']),
    (
        "format-date",
        {"type": "string", "format": "date"},
        ['"2024-02-29"'],
        ['"2024-13-01"', '"24-01-01"'],
    ),
    (
        "format-date-time",
        {"type": "string", "format": "date-time"},
        ['"2024-01-02T03:04:05Z"', '"2024-01-02 03:04:05.5+01:00"'],
        ['"2024-01-02"'],
    ),
    (
        "format-uuid",
        {"type": "string", "format": "uuid"},
        ['"123e4567-e89b-12d3-a456-426614174000"'],
        ['"123e4567"'],
    ),
    # a format no string within the bounds has: the bounds hold, the format is loose
    (
        "format-uuid-beyond-max-length",
        {"type": "string", "format": "uuid", "maxLength": 10},
        ['"NULL"', '""', '"0123456789"'],
        ['"123e4567-e89b-12d3-a456-426614174000"', '"01234567890"'],
    ),
    (
        "format-date-within-bounds",
        {"type": "string", "format": "date", "minLength": 4, "maxLength": 12},
        ['"2024-01-02"'],
        ['"abcd"', '"2024-02-30"'],
    ),
    (
        "format-ipv4-below-min-length",
        {"type": "string", "format": "ipv4", "minLength": 16},
        ['"' + "x" * 16 + '"'],
        ['"10.0.0.1"'],
    ),
    ("format-unknown-loose", {"type": "string", "format": "x-custom"}, ['"anything"'], ["1"]),
    (
        "int-range-small",
        {"type": "integer", "minimum": 1, "maximum": 12},
        ["1", "9", "10", "12"],
        ["0", "13", "-1", "01"],
    ),
    (
        "int-range-wide",
        {"type": "integer", "minimum": 95, "maximum": 1203},
        ["95", "99", "100", "999", "1203"],
        ["94", "1204", "2000", "9"],
    ),
    (
        "int-exclusive",
        {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
        ["1", "2"],
        ["0", "3"],
    ),
    ("int-sign-min", {"type": "integer", "minimum": 0}, ["0", "7", "123456"], ["-1", "00"]),
    (
        "int-min-large",
        {"type": "integer", "minimum": 50},
        ["50", "99", "100", "123456"],
        ["49", "5", "-50"],
    ),
    (
        "int-negative",
        {"type": "integer", "minimum": -5, "maximum": 5},
        ["-5", "0", "5"],
        ["-6", "6", "-0"],
    ),
    ("int-max-negative", {"type": "integer", "maximum": -10}, ["-10", "-99999"], ["-9", "0"]),
    ("int-max-only", {"type": "integer", "maximum": 20}, ["20", "-100", "0"], ["21", "100"]),
    ("number-sign", {"type": "number", "minimum": 0}, ["0", "1.5", "2e3"], ["-1", "-0.5"]),
    ("number", {"type": "number"}, ["-1.25", "3", "1E-7"], ["1.", ".5", "+1"]),
    ("boolean", {"type": "boolean"}, ["true", "false"], ["True", "1"]),
]


@pytest.mark.model
@pytest.mark.parametrize(
    ("schema", "good", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_schema_values(vocab_llama: Any, schema: Any, good: list[str], bad: list[str]) -> None:
    gbnf = schema_grammar(schema)
    validate_grammar(gbnf, vocab=vocab_of(vocab_llama))
    assert [t for t in good if not grammar_accepts(gbnf, t, llama=vocab_llama)] == []
    assert [t for t in bad if grammar_accepts(gbnf, t, llama=vocab_llama)] == []


CODEC_CASES = [
    (
        "python",
        {
            "type": "object",
            "properties": {"s": {"type": "string"}, "n": {"type": ["null", "boolean"]}},
        },
        ['{"s": "x", "n": None}', '{"s": \'y\', "n": True}'],
        ['{"s": "x", "n": null}', '{"n": true}'],
    ),
    (
        "gemma4",
        {
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "l": {"type": "array", "items": {"type": "integer"}},
            },
        },
        ['{s:<|"|>a "quoted" <b><|"|>,l:[1,2]}'],
        ['{s:"a",l:[1]}', '{"s":<|"|>a<|"|>}'],
    ),
    (
        "json-in-string",
        {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
        [json.dumps(json.dumps({"s": 'a "b" \\ c\n'}))[1:-1]],
        [json.dumps({"s": "x"})],
    ),
    (
        "json-in-string",  # a pattern's literal text inside the doubly quoted string
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^ab-[0-9]$"}}},
        [json.dumps(json.dumps({"s": "ab-3"}))[1:-1]],
        [json.dumps(json.dumps({"s": "ax-3"}))[1:-1], json.dumps({"s": "ab-3"})],
    ),
]


@pytest.mark.model
@pytest.mark.parametrize(
    ("codec", "schema", "good", "bad"), CODEC_CASES, ids=[c[0] for c in CODEC_CASES]
)
def test_codecs(vocab_llama: Any, codec: Any, schema: Any, good: list[str], bad: list[str]) -> None:
    gbnf = schema_grammar(schema, codec=codec)
    assert [t for t in good if not grammar_accepts(gbnf, t, llama=vocab_llama)] == []
    assert [t for t in bad if grammar_accepts(gbnf, t, llama=vocab_llama)] == []


UNSUPPORTED = [
    ({"type": "object", "properties": {"x": {"not": {}}}, "required": ["x"]}, "/properties/x/not"),
    ({"$dynamicRef": "#meta"}, "/$dynamicRef"),
    (
        {"type": "object", "properties": {}, "required": ["q"], "additionalProperties": False},
        "/required",
    ),
    ({"anyOf": [{"type": "string"}, {"type": "string", "pattern": "(?=a)"}]}, "/anyOf/1/pattern"),
    ({"type": "string", "pattern": "(a)\\1"}, "/pattern"),
    ({"$ref": "https://example.com/x.json"}, "/$ref"),
    ({"$ref": "#/$defs/missing"}, "/$ref"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "/allOf/1"),
]


@pytest.mark.parametrize(("schema", "pointer"), UNSUPPORTED, ids=[p for _, p in UNSUPPORTED])
def test_unsupported_keywords_name_their_pointer(schema: Any, pointer: str) -> None:
    with pytest.raises(UnsupportedSchemaError) as err:
        json_schema_to_gbnf(schema)
    assert err.value.pointer == pointer
    assert repr(pointer) in str(err.value)


def test_shared_builder_dedups_primitives() -> None:
    from tooldialect.grammar import GbnfBuilder

    b = GbnfBuilder()
    for i in range(3):
        json_schema_to_gbnf(
            {"type": "object", "properties": {f"k{i}": {"type": "string"}}}, builder=b
        )
    assert sum(body == b.rules["json-string"] for body in b.rules.values()) == 1
    assert all(
        set(n) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
        for n in b.rules
    )


def test_prefix_applies_to_rule_names() -> None:
    root, rules = json_schema_to_gbnf({"type": "integer"}, prefix="t1_")
    assert root.startswith("t1-") and all(n.startswith("t1-") for n in rules)
