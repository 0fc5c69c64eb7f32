"""Schema-typed coercion, Python-literal and Gemma 4 argument parsing."""

from __future__ import annotations

from typing import Any

import pytest

from tooldialect.dialect.value_codecs.bare_key import decode_bare_key_arguments
from tooldialect.parse.values import coerce_value, parse_python_kwargs

ROOT = {"$defs": {"N": {"type": "integer"}, "S": {"type": "string"}}}

COERCE = [
    ("string-stays-raw", "007", {"type": "string"}, None, "007"),
    ("integer", "130", {"type": "integer"}, None, 130),
    ("number", "1.5", {"type": "number"}, None, 1.5),
    ("integer-for-number", "2", {"type": "number"}, None, 2),
    ("boolean", "true", {"type": "boolean"}, None, True),
    ("boolean-python-case", "False", {"type": "boolean"}, None, False),
    ("object", '{"a": 1}', {"type": "object"}, None, {"a": 1}),
    ("array", "[1, 2]", {"type": "array"}, None, [1, 2]),
    ("failed-integer-keeps-raw", "two", {"type": "integer"}, None, "two"),
    ("wrong-type-keeps-raw", '"x"', {"type": "integer"}, None, '"x"'),
    ("ref", "5", {"$ref": "#/$defs/N"}, None, 5),
    ("ref-string", "5", {"$ref": "#/$defs/S"}, None, "5"),
    ("anyof-null", "null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, None),
    ("type-list", "3", {"type": ["string", "integer"]}, None, 3),
    ("type-list-string-fallback", "abc", {"type": ["string", "integer"]}, None, "abc"),
    ("enum-ints", "2", {"enum": [1, 2]}, None, 2),
    ("no-schema-stays-string", "5", None, None, "5"),
    ("is-string-true", "5", {"type": "integer"}, "true", "5"),
    ("is-string-false", "5", {"type": "string"}, "false", 5),
    ("is-string-false-bad-json", "x y", None, "false", "x y"),
]


@pytest.mark.parametrize(
    ("raw", "schema", "is_string", "want"), [c[1:] for c in COERCE], ids=[c[0] for c in COERCE]
)
def test_coerce_value(raw: str, schema: Any, is_string: str | None, want: Any) -> None:
    got = coerce_value(raw, schema, root=ROOT, is_string=is_string)
    assert got == want and type(got) is type(want)


PYTHON = [
    ("strings", "a='x', b=\"y\"", {"a": "x", "b": "y"}),
    ("numbers", "n=-3, f=2.5, e=1e3", {"n": -3, "f": 2.5, "e": 1000.0}),
    ("constants", "t=True, f=false, n=None", {"t": True, "f": False, "n": None}),
    ("nested", "d={'k': [1, (2, 3)]}", {"d": {"k": [1, [2, 3]]}}),
    ("empty", "", {}),
    ("positional", "'x'", None),
    ("call-value", "a=open('f')", None),
    ("name-value", "a=os", None),
    ("star-kwargs", "**x", None),
    ("syntax-error", "a=", None),
    ("attribute", "a=x.y", None),
]


@pytest.mark.parametrize(("inner", "want"), [c[1:] for c in PYTHON], ids=[c[0] for c in PYTHON])
def test_parse_python_kwargs(inner: str, want: dict[str, Any] | None) -> None:
    assert parse_python_kwargs(inner) == want


GEMMA = [
    ("string", 'city:<|"|>Paris, FR<|"|>', {"city": "Paris, FR"}),
    ("scalars", "n:3,x:1.5,b:true,z:null", {"n": 3, "x": 1.5, "b": True, "z": None}),
    ("nested", 'o:{a:[1,<|"|>x<|"|>],b:{c:false}}', {"o": {"a": [1, "x"], "b": {"c": False}}}),
    ("empty", "", {}),
    ("unterminated", 'a:<|"|>x', None),
    ("no-assign", "a", None),
]


@pytest.mark.parametrize(("inner", "want"), [c[1:] for c in GEMMA], ids=[c[0] for c in GEMMA])
def test_decode_bare_key_arguments(inner: str, want: dict[str, Any] | None) -> None:
    assert decode_bare_key_arguments(inner, assign=":", separator=",") == want
