"""BFCL AST scorer and tool conversion (bench/bfcl_score.py, bench/bfcl_data.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import bfcl_data, bfcl_score

AREA: dict[str, Any] = {
    "name": "geometry.area",
    "description": "Area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "Base."},
            "height": {"type": "float", "description": "Height."},
            "unit": {"type": "string", "description": "Unit."},
            "sides": {"type": "array", "items": {"type": "string"}, "description": "Sides."},
        },
        "required": ["base", "height"],
    },
}
WEATHER: dict[str, Any] = {
    "name": "weather",
    "description": "Weather in a city.",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string", "description": "City."}},
        "required": ["city"],
    },
}
AREA_ANSWER: dict[str, Any] = {
    "geometry.area": {"base": [10], "height": [5.0], "unit": ["cm", ""], "sides": [["a", "b"], ""]}
}
NAMES = {"geometry_area": "geometry.area", "weather": "weather"}


def call(name: str, **args: Any) -> tuple[str, str]:
    return name, json.dumps(args)


SIMPLE_CASES = [
    ("correct", [call("geometry_area", base=10, height=5.0)], True, ""),
    ("int_for_float", [call("geometry_area", base=10, height=5)], True, ""),
    ("string_normalised", [call("geometry_area", base=10, height=5, unit="C M")], True, ""),
    ("list_normalised", [call("geometry_area", base=10, height=5, sides=["A", "b"])], True, ""),
    (
        "wrong_name",
        [call("weather", city="Paris")],
        False,
        "simple_function_checker:wrong_func_name",
    ),
    (
        "missing_required",
        [call("geometry_area", base=10)],
        False,
        "simple_function_checker:missing_required",
    ),
    ("wrong_value", [call("geometry_area", base=11, height=5)], False, "value_error:others"),
    ("wrong_type", [call("geometry_area", base="10", height=5)], False, "type_error:simple"),
    ("float_for_int", [call("geometry_area", base=10.0, height=5)], False, "type_error:simple"),
    (
        "wrong_string",
        [call("geometry_area", base=10, height=5, unit="mm")],
        False,
        "value_error:string",
    ),
    (
        "wrong_list",
        [call("geometry_area", base=10, height=5, sides=["b", "a"])],
        False,
        "value_error:list/tuple",
    ),
    (
        "unexpected_param",
        [call("geometry_area", base=10, height=5, color="red")],
        False,
        "simple_function_checker:unexpected_param",
    ),
    (
        "two_calls",
        [call("geometry_area", base=10, height=5)] * 2,
        False,
        "simple_function_checker:wrong_count",
    ),
    ("no_call", [], False, "simple_function_checker:wrong_count"),
    ("unparseable", [("geometry_area", '{"base": 10,')], False, "ast_decoder:decoder_failed"),
    ("not_an_object", [("geometry_area", "[10]")], False, "ast_decoder:decoder_failed"),
]


@pytest.mark.parametrize(
    ("calls", "valid", "error_type"),
    [c[1:] for c in SIMPLE_CASES],
    ids=[c[0] for c in SIMPLE_CASES],
)
def test_simple(calls: list[tuple[str, str]], valid: bool, error_type: str) -> None:
    verdict = bfcl_score.score("simple_python", [AREA], [AREA_ANSWER], calls, NAMES)
    assert (verdict.valid, verdict.error_type) == (valid, error_type)


def test_optional_without_empty_marker_is_required() -> None:
    answer = {"geometry.area": {"base": [10], "height": [5.0], "unit": ["cm"]}}
    verdict = bfcl_score.score(
        "simple_python", [AREA], [answer], [call("geometry_area", base=10, height=5)], NAMES
    )
    assert verdict.error_type == "simple_function_checker:missing_optional"


def test_multiple_picks_the_expected_function() -> None:
    answer = [{"weather": {"city": ["Paris", "Paris, France"]}}]
    good = bfcl_score.score(
        "multiple", [AREA, WEATHER], answer, [call("weather", city="paris")], NAMES
    )
    bad = bfcl_score.score(
        "multiple", [AREA, WEATHER], answer, [call("geometry_area", base=1, height=1)], NAMES
    )
    assert good.valid
    assert bad.error_type == "simple_function_checker:wrong_func_name"


PARALLEL_ANSWER = [{"weather": {"city": ["Paris"]}}, {"weather": {"city": ["Tokyo"]}}]
PARALLEL_CASES = [
    ("in_order", [call("weather", city="Paris"), call("weather", city="Tokyo")], True),
    ("out_of_order", [call("weather", city="Tokyo"), call("weather", city="Paris")], True),
    ("duplicate", [call("weather", city="Paris"), call("weather", city="Paris")], False),
    ("one_missing", [call("weather", city="Paris")], False),
    ("one_extra", [call("weather", city=c) for c in ("Paris", "Tokyo", "Rome")], False),
]


@pytest.mark.parametrize(
    ("calls", "valid"), [c[1:] for c in PARALLEL_CASES], ids=[c[0] for c in PARALLEL_CASES]
)
def test_parallel_any_order(calls: list[tuple[str, str]], valid: bool) -> None:
    verdict = bfcl_score.score("parallel", [WEATHER], PARALLEL_ANSWER, calls, NAMES)
    assert verdict.valid is valid


def test_parallel_multiple_mixed_functions() -> None:
    answer: list[dict[str, Any]] = [{"weather": {"city": ["Paris"]}}, AREA_ANSWER]
    calls = [call("geometry_area", base=10, height=5), call("weather", city="Paris")]
    assert bfcl_score.score("parallel_multiple", [AREA, WEATHER], answer, calls, NAMES).valid
    wrong = [call("geometry_area", base=10, height=6), call("weather", city="Paris")]
    assert not bfcl_score.score("parallel_multiple", [AREA, WEATHER], answer, wrong, NAMES).valid


IRRELEVANCE_CASES = [
    ("no_call", [], True),
    ("a_call", [call("weather", city="Paris")], False),
    ("empty_arguments_still_a_call", [("weather", "{}")], False),
    ("unparseable_is_no_call", [("weather", "{oops")], True),
]


@pytest.mark.parametrize(
    ("calls", "valid"), [c[1:] for c in IRRELEVANCE_CASES], ids=[c[0] for c in IRRELEVANCE_CASES]
)
def test_irrelevance(calls: list[tuple[str, str]], valid: bool) -> None:
    assert bfcl_score.score("irrelevance", [WEATHER], [], calls, NAMES).valid is valid
    assert bfcl_score.score("live_irrelevance", [WEATHER], [], calls, NAMES).valid is valid


@pytest.mark.parametrize(
    ("calls", "valid"), [c[1:] for c in IRRELEVANCE_CASES], ids=[c[0] for c in IRRELEVANCE_CASES]
)
def test_relevance_is_irrelevance_reversed(calls: list[tuple[str, str]], valid: bool) -> None:
    # BFCL's relevance_file_runner: any decoded, non-empty call counts; its values are unchecked
    assert bfcl_score.score("live_relevance", [WEATHER], [], calls, NAMES).valid is not valid


@pytest.mark.skipif(
    not (bfcl_data.CACHE / "bfcl").is_dir(), reason="the bfcl-eval wheel is not fetched"
)
def test_live_categories_load_with_answers_where_bfcl_has_them() -> None:
    for category in bfcl_data.LIVE_CATEGORIES:
        cases = bfcl_data.load_category(category)
        assert cases and all(c.category == category for c in cases)
        assert all(bool(c.answer) is (category not in bfcl_data.NO_ANSWER) for c in cases)


def test_dict_parameter() -> None:
    fn = {
        "name": "book",
        "parameters": {
            "type": "dict",
            "properties": {"guest": {"type": "dict", "properties": {}, "description": "Guest."}},
            "required": ["guest"],
        },
    }
    answer = [{"book": {"guest": [{"name": ["John Doe"], "age": [30, ""]}]}}]
    names = {"book": "book"}
    assert bfcl_score.score(
        "simple_python", [fn], answer, [call("book", guest={"name": "john doe"})], names
    ).valid
    bad = bfcl_score.score(
        "simple_python", [fn], answer, [call("book", guest={"name": "Jane"})], names
    )
    assert bad.error_type == "value_error:dict_value"


def test_tool_conversion_follows_bfcl() -> None:
    tool = bfcl_data.to_openai_tool(AREA)
    fn = tool["function"]
    assert fn["name"] == "geometry_area"
    assert fn["parameters"]["type"] == "object"
    props = fn["parameters"]["properties"]
    assert (props["height"]["type"], props["height"]["format"]) == ("number", "float")
    assert props["sides"] == {"type": "array", "items": {"type": "string"}, "description": "Sides."}
    assert fn["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert AREA["parameters"]["type"] == "dict"  # the input is not mutated


def test_sample_is_spread_and_stable() -> None:
    cases = [bfcl_data.Case(id=str(i), category="x", messages=[], functions=[]) for i in range(10)]
    assert [c.id for c in bfcl_data.sample(cases, 3)] == ["0", "3", "6"]
    assert len(bfcl_data.sample(cases, None)) == 10
