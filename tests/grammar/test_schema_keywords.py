"""JSON Schema keywords beyond the basics, the defects JSONSchemaBench found, and what the grammar
leaves loose (recorded, refused under ``strict``, and caught by ``grammar.validate``).

Values are checked on llama.cpp's own sampler, in the canonical layout the engines use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import model_path
from grammar_check import grammar_accepts, validate_grammar, vocab_of
from tooldialect.errors import UnsupportedSchemaError
from tooldialect.grammar import GbnfBuilder, SchemaConverter, schema_grammar
from tooldialect.grammar.validate import _Fallback, check_call, validate_value
from tooldialect.tool_defs import ToolDef


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)


OBJ_AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}

NEVER = {"allOf": [{"type": "string"}, {"type": "integer"}]}  # no value is both
REF_TO_NOTHING = {
    "type": "object",
    "properties": {
        "a": {"anyOf": [{"$ref": "#/$defs/never"}, {"type": "string"}]},
        "b": {"anyOf": [{"$ref": "#/$defs/never"}, {"type": "integer"}]},
    },
    "$defs": {"never": NEVER},
}

# (id, schema, accepted, rejected): every text in canonical layout (json.dumps)
CASES: list[tuple[str, Any, list[str], list[str]]] = [
    (
        "recursive-ref-with-sibling",
        {
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {"c": {"$ref": "#/$defs/n", "type": "object"}},
                }
            },
            "$ref": "#/$defs/n",
        },
        ["{}", '{"c": {}}', '{"c": {"c": {}}}'],
        ['{"c": 1}', '{"d": {}}'],
    ),
    (
        "recursive-ref-inside-allOf",
        {
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {
                        "k": {"allOf": [{"$ref": "#/$defs/n"}, {"required": ["v"]}]},
                        "v": {"type": "string"},
                    },
                }
            },
            "$ref": "#/$defs/n",
        },
        ['{"k": {"v": "x"}}', '{"v": "y"}'],
        ['{"k": {}}', '{"k": {"v": 1}}'],
    ),
    (
        "extra-keys-exclude-declared",
        {"properties": {"id": {"type": "integer"}}, "additionalProperties": True},
        ['{"id": 1}', '{"id": 1, "x": "y"}', '{"i": 1}', '{"idx": [1]}', '{"x": 1}'],
        ['{"id": "x"}', '{"id": 1, "id": 2}', '{"x": 1, "id": "s"}'],
    ),
    (
        "extra-keys-schema-exclude-declared",
        {
            "type": "object",
            "properties": {"a/b": {"type": "integer"}, "ab": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
        ['{"a/b": 1, "ab": 2, "a": "s"}', '{"abc": "s"}', '{"a\\\\b": "s"}'],
        ['{"ab": "s"}', '{"a/b": "s"}', '{"a\\/b": "s"}', '{"a\\u002fb": "s"}'],
    ),
    (
        "number-bounds",
        {"type": "number", "minimum": 0, "maximum": 10},
        ["0", "10", "9.99", "10.0", "5", "0.5"],
        ["-1", "10.5", "11", "-0.5", "10.01"],
    ),
    (
        "number-exclusive",
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        ["0.5", "0.001"],
        ["0", "1", "0.0", "1.5", "-0.5"],
    ),
    (
        "number-negative-range",
        {"type": "number", "minimum": -5, "maximum": -1},
        ["-5", "-1", "-3.5", "-1.0"],
        ["0", "-0.5", "-5.5", "1"],
    ),
    (
        "number-draft4-exclusive-flag",
        {"type": "number", "minimum": 1, "exclusiveMinimum": True},
        ["1.5", "2", "100"],
        ["1", "0.9", "1.0"],
    ),
    (
        "integer-multipleOf",
        {"type": "integer", "multipleOf": 3},
        ["0", "3", "-9", "123"],
        ["1", "-4", "10"],
    ),
    (
        "integer-multipleOf-bounded",
        {"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 20},
        ["0", "5", "20"],
        ["1", "25", "-5"],
    ),
    (
        "number-multipleOf-cents",
        {"type": "number", "multipleOf": 0.01},
        ["1.25", "3", "-0.5"],
        ["1.255"],
    ),
    (
        "format-date-time-offset-mandatory",
        {"type": "string", "format": "date-time"},
        ['"2024-01-02T03:04:05Z"', '"2024-01-02T03:04:05.5+01:00"', '"2016-12-31T23:59:60Z"'],
        ['"2024-01-02T03:04:05"', '"2024-01-02"'],
    ),
    (
        "format-date-calendar",
        {"type": "string", "format": "date"},
        ['"2024-02-29"', '"2000-02-29"', '"2023-12-31"', '"2023-04-30"'],
        ['"2023-02-29"', '"1900-02-29"', '"2022-02-31"', '"2023-04-31"', '"2023-13-01"'],
    ),
    (
        "empty-property-forbids-its-key",
        {"type": "object", "properties": {"a": {"type": "integer"}, "x": {"not": {}}}},
        ['{"a": 1}', "{}"],
        ['{"x": 1}', '{"a": 1, "x": null}'],
    ),
    (
        "empty-branch-dropped",
        {"type": "string", "anyOf": [{"enum": ["a", "b"]}, {"enum": [1]}]},
        ['"a"', '"b"'],
        ['"c"', "1"],
    ),
    (
        "enum-filtered-by-type",
        {"enum": [1, "a", None], "type": ["integer", "null"]},
        ["1", "null"],
        ['"a"'],
    ),
    (
        "format-email",
        {"type": "string", "format": "email"},
        ['"a.b+c@example.com"', '"x@localhost"', '"u@[10.0.0.1]"'],
        ['"not an email"', '"a@"', '"@b.c"', '"a..b@c"'],
    ),
    (
        "format-ipv4",
        {"type": "string", "format": "ipv4"},
        ['"192.168.0.1"'],
        ['"256.1.1.1"', '"1.2.3"'],
    ),
    (
        "patternProperties",
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}},
        ['{"x-a": 1}', "{}", '{"x-a": 1, "x-b": 2}'],
        ['{"y": 1}', '{"x-a": "s"}'],
    ),
    (
        "patternProperties-with-properties",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "patternProperties": {"^[0-9]+$": {"type": "boolean"}},
        },
        ['{"name": "n", "12": true}', '{"7": false}'],
        ['{"12": 1}', '{"ab": true}'],
    ),
    (
        "minProperties",
        {**OBJ_AB, "minProperties": 1},
        ['{"a": 1}', '{"b": 1}', '{"a": 1, "b": 2}'],
        ["{}"],
    ),
    (
        "maxProperties-with-extras",
        {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2},
        ["{}", '{"p": 1}', '{"p": 1, "q": 2}'],
        ['{"p": 1, "q": 2, "r": 3}'],
    ),
    (
        "dependentRequired",
        {**OBJ_AB, "dependentRequired": {"a": ["b"]}},
        ['{"a": 1, "b": 2}', '{"b": 1}', "{}"],
        ['{"a": 1}'],
    ),
    (
        "dependencies-schema",
        {
            **OBJ_AB,
            "dependencies": {"a": {"properties": {"b": {"minimum": 10}}, "required": ["b"]}},
        },
        ['{"a": 1, "b": 12}', '{"b": 1}'],
        ['{"a": 1}', '{"a": 1, "b": 2}'],
    ),
    (
        "not-required",
        {**OBJ_AB, "not": {"required": ["b"]}},
        ['{"a": 1}', "{}"],
        ['{"a": 1, "b": 2}'],
    ),
    (
        "not-anyOf-required",
        {**OBJ_AB, "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}},
        ["{}"],
        ['{"a": 1}', '{"b": 2}'],
    ),
    ("not-type", {"not": {"type": "string"}}, ["1", "{}", "null", "[]"], ['"s"']),
    (
        "uniqueItems-enum",
        {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
        ["[]", '["a", "c"]', '["c", "b", "a"]'],
        ['["a", "a"]', '["a", "b", "a"]'],
    ),
    (
        "uniqueItems-boolean-minItems",
        {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True, "minItems": 2},
        ["[true, false]", "[false, true]"],
        ["[true]", "[true, true]"],
    ),
    (
        "required-not-in-properties",
        {"type": "object", "required": ["q"]},
        ['{"q": 1}', '{"q": 1, "r": 2}'],
        ["{}"],
    ),
    (
        "required-not-in-properties-closed",
        {"type": "object", "properties": {"a": {}}, "required": ["q"]},
        ['{"q": 1}', '{"a": 1, "q": [1]}'],
        ["{}", '{"a": 1}'],
    ),
    (
        "allOf-annotations-differ",
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string", "description": "x"}}},
                {
                    "properties": {"a": {"type": "string", "description": "y", "x-order": 1}},
                    "x-foo": 1,
                },
            ]
        },
        ['{"a": "s"}'],
        ['{"a": 1}'],
    ),
    (
        "allOf-same-key-both-apply",
        {
            "allOf": [
                {"properties": {"n": {"type": "integer"}}},
                {"properties": {"n": {"minimum": 5}}},
            ]
        },
        ['{"n": 5}', '{"n": 50}'],
        ['{"n": 4}', '{"n": "x"}'],
    ),
    (
        "pattern-anchors-per-branch",
        {"type": "string", "pattern": "^a$|^b+$"},
        ['"a"', '"bbb"'],
        ['"ab"', '"c"'],
    ),
    (
        "pattern-anchored-group",
        {"type": "string", "pattern": "(^\\d+$)|(^x)"},
        ['"12"', '"xyz"'],
        ['"a1"', '"yx"'],
    ),
    (
        "percent-encoded-ref",
        {"definitions": {"a b": {"type": "integer"}}, "$ref": "#/definitions/a%20b"},
        ["1"],
        ['"x"'],
    ),
    (
        "oneOf-disjoint-types",
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        ['"s"', "1"],
        ["null"],
    ),
    (
        # JSONSchemaBench Github_hard o366: a branch whose $ref target admits nothing, referenced
        # twice; the dropped target once left an empty rule that llama.cpp refused to load
        "ref-to-an-empty-target-twice",
        REF_TO_NOTHING,
        ["{}", '{"a": "x"}', '{"a": "x", "b": 1}'],
        ['{"a": 1}', '{"b": "x"}', '{"b": null}'],
    ),
]


@pytest.mark.model
@pytest.mark.parametrize(
    ("schema", "good", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_keyword_values(vocab_llama: Any, schema: Any, good: list[str], bad: list[str]) -> None:
    gbnf = schema_grammar(schema, layout="canonical")
    validate_grammar(gbnf, vocab=vocab_of(vocab_llama))
    assert [t for t in good if not grammar_accepts(gbnf, t, llama=vocab_llama)] == []
    assert [t for t in bad if grammar_accepts(gbnf, t, llama=vocab_llama)] == []
    # the validator agrees with the grammar (objects closed by default, as the grammar closes
    # them; a text with a duplicate key has no dict to validate)
    assert [t for t in good if validate_value(_closed(schema), json.loads(t))] == []
    if "format" not in schema:  # jsonschema checks formats more loosely than the grammar
        assert [
            t for t in bad if not _dup(t) and not validate_value(_closed(schema), json.loads(t))
        ] == []


def _closed(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: v if k in ("dependencies", "dependentSchemas") else _closed(v) for k, v in schema.items()
    }
    declared = {**out.get("properties", {}), **{k: {} for k in out.get("required", [])}}
    if ("properties" in out or "patternProperties" in out) and "additionalProperties" not in out:
        out["additionalProperties"] = False
        out["properties"] = declared
    return out


def _dup(text: str) -> bool:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("duplicate")
        return dict(pairs)

    try:
        json.loads(text, object_pairs_hook=hook)
    except ValueError:
        return True
    return False


@pytest.mark.parametrize(
    ("schema", "good", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_cases_are_exact(schema: Any, good: list[str], bad: list[str]) -> None:
    """Each case above is enforced by the grammar, not merely validated after."""
    conv = SchemaConverter(GbnfBuilder(), schema, strict=True)
    conv.visit(schema, "")
    assert conv.loose == []


@pytest.mark.model
@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        # BFCL live_relevance_8-8-0's Events_3_BuyEventTickets, as a user wrote it: the enum
        # spells the integers it means as strings
        ({"type": "integer", "enum": ["1", "2", "9"]}, ["1", "2", "9"], ['"1"', "3"]),
        ({"type": "number", "enum": ["2.5", "10"]}, ["2.5", "10"], ['"2.5"', "3"]),
        ({"type": "boolean", "enum": ["true"]}, ["true"], ['"true"', "false"]),
    ],
    ids=["integers-as-strings", "numbers-as-strings", "boolean-as-string"],
)
def test_an_enum_that_contradicts_its_type_is_read_not_refused(
    vocab_llama: Any, schema: Any, good: list[str], bad: list[str]
) -> None:
    gbnf = schema_grammar(schema, layout="canonical")
    validate_grammar(gbnf, vocab=vocab_of(vocab_llama))
    assert [t for t in good if not grammar_accepts(gbnf, t, llama=vocab_llama)] == []
    assert [t for t in bad if grammar_accepts(gbnf, t, llama=vocab_llama)] == []


def test_an_enum_none_of_whose_values_reads_as_its_type_is_empty() -> None:
    with pytest.raises(UnsupportedSchemaError, match="no 'enum' value"):
        schema_grammar({"type": "integer", "enum": ["one", "2"]})


def test_a_dropped_ref_target_leaves_no_rule_behind() -> None:
    """A ``$ref`` whose target admits nothing is dropped with its branch, every time it is
    referenced; no empty (unloadable, or empty-text-matching) rule is left for it."""
    b = GbnfBuilder()
    root = b.name("root")
    b.define(root, SchemaConverter(b, REF_TO_NOTHING).visit(REF_TO_NOTHING, "", hint="value"))
    assert [name for name, body in b.rules.items() if not body.strip()] == []
    assert not any(name.startswith("never") for name in b.rules)


# (schema, pointer of the loose keyword)
LOOSE = [
    ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, "/if"),
    ({"type": "array", "items": {"type": "object"}, "uniqueItems": True}, "/uniqueItems"),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "/oneOf"),
    ({"type": "string", "format": "uri-reference"}, "/format"),
    ({"type": "number", "minimum": 0.5}, "/minimum"),
    ({"type": "object", "properties": {"x": {"not": {"pattern": "^a"}}}}, "/properties/x/not"),
    ({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]}, "/allOf/1/pattern"),
    ({"type": "array", "contains": {"type": "integer"}}, "/contains"),
    (
        {
            "type": "object",
            "properties": {"id": {}},
            "patternProperties": {"^i": {"type": "string"}},
        },
        "/patternProperties/^i",
    ),
]


@pytest.mark.parametrize(("schema", "pointer"), LOOSE, ids=[p for _, p in LOOSE])
def test_loose_keywords_are_recorded_or_refused(schema: Any, pointer: str) -> None:
    conv = SchemaConverter(GbnfBuilder(), schema)
    conv.visit(schema, "")
    assert pointer in [p for p, _ in conv.loose]
    with pytest.raises(UnsupportedSchemaError) as err:
        SchemaConverter(GbnfBuilder(), schema, strict=True).visit(schema, "")
    assert err.value.pointer == pointer


def test_schema_grammar_strict_flag() -> None:
    with pytest.raises(UnsupportedSchemaError):
        schema_grammar({"type": "string", "format": "uri-reference"}, strict=True)
    assert "root ::=" in schema_grammar({"type": "string", "format": "uri-reference"})


VALIDATION = [
    (
        {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}},
        {"a": 1},
        {"a": 1, "b": 2},
    ),
    ({"type": "array", "items": {"type": "object"}, "uniqueItems": True}, [{}, {}], [{}, {"k": 1}]),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 3, 2.5),
    ({"type": "number", "minimum": 0.5}, 0.25, 0.75),
    ({"type": "object", "properties": {"x": {"not": {"pattern": "^a"}}}}, {"x": "ab"}, {"x": "ba"}),
]


@pytest.mark.parametrize("fallback", [False, True], ids=["jsonschema", "fallback"])
@pytest.mark.parametrize(("schema", "bad", "good"), VALIDATION)
def test_validation_catches_what_the_grammar_leaves_loose(
    schema: Any, bad: Any, good: Any, fallback: bool
) -> None:
    def check(s: Any, v: Any) -> list[Any]:
        if fallback:
            return list(_Fallback(s).check(s, v, ""))
        return list(validate_value(s, v))

    assert check(schema, bad) != []
    assert check(schema, good) == []


def test_check_call_names_the_path() -> None:
    tool = ToolDef(
        name="book",
        parameters={"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}},
    )
    assert check_call([tool], "book", {"n": 4}) == []
    problems = check_call([tool], "book", {"n": 3})
    assert [p.path for p in problems] == ["/n"]
    assert check_call([tool], "other", {})[0].message.startswith("no tool named")


@pytest.mark.model
@settings(max_examples=40, deadline=None)
@given(
    lo=st.integers(-30, 30),
    span=st.integers(0, 40),
    value=st.one_of(
        st.integers(-80, 80), st.floats(-80, 80, allow_nan=False).map(lambda f: round(f, 3))
    ),
    exclusive=st.tuples(st.booleans(), st.booleans()),
)
def test_number_bounds_property(
    vocab_llama: Any, lo: int, span: int, value: float, exclusive: tuple[bool, bool]
) -> None:
    hi = lo + span
    # a choice, not a defect: bounded numbers never write a negative zero ("-0.0"); its value, 0,
    # is written as "0" / "0.0", so the property is checked on that spelling
    value = abs(value) if value == 0 else value
    schema: dict[str, Any] = {"type": "number"}
    schema["exclusiveMinimum" if exclusive[0] else "minimum"] = lo
    schema["exclusiveMaximum" if exclusive[1] else "maximum"] = hi
    if lo == hi and any(exclusive):
        return
    inside = (value > lo if exclusive[0] else value >= lo) and (
        value < hi if exclusive[1] else value <= hi
    )
    gbnf = schema_grammar(schema, layout="canonical")
    assert grammar_accepts(gbnf, json.dumps(value), llama=vocab_llama) == inside
