"""Tools from Python functions: schemas from hints, docs from docstrings, validation, errors."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from tooldialect import DialectSpec, Tool, ToolArgumentsError, ToolSpecError, tool
from tooldialect.apps.docstrings import parse_docstring
from tooldialect.apps.python_tool import check_unique, result_text
from tooldialect.grammar import build_grammar
from tooldialect.grammar.schema import schema_grammar
from tooldialect.tool_defs import normalize_tool_choice, normalize_tools


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Point(BaseModel):
    lat: float
    lon: float = 0.0


class Route(BaseModel):
    stops: list[Point]
    name: str | None = None


def google(
    city: Annotated[str, Field(min_length=1)],
    unit: Unit = Unit.CELSIUS,
    days: Optional[int] = None,  # noqa: UP045 - Optional is part of what is tested
) -> str:
    """Forecast for a city.

    Uses the offline table.

    Args:
        city: The city name,
            in English.
        unit (Unit): Temperature unit.
        days: How many days ahead.

    Returns:
        A sentence.
    """
    return f"{city}|{unit.value}|{days}"


def numpy_style(amount: float, source: Literal["USD", "EUR"], target: str = "EUR") -> float:
    """Convert money.

    Parameters
    ----------
    amount : float
        How much to convert.
    source, target : str
        Currency codes.

    Returns
    -------
    float
    """
    return amount * 2


def sphinx_style(path: str, limit: int = 10, *, hidden: bool = False) -> list[str]:
    """List a folder.

    :param path: The folder,
        relative.
    :param int limit: At most this many entries.
    :param hidden: Include dot files.
    :returns: names
    """
    return [path] * min(limit, 2)


def route(plan: Route, mode: Literal["car", "foot"] = "foot") -> dict[str, Any]:
    """Plan a route through the stops."""
    return {"n": len(plan.stops), "mode": mode}


def props(t: Tool) -> dict[str, Any]:
    properties: dict[str, Any] = t.parameters["properties"]
    return properties


@pytest.mark.parametrize(
    ("fn", "description", "docs"),
    [
        (
            google,
            "Forecast for a city.\n\nUses the offline table.",
            {
                "city": "The city name, in English.",
                "unit": "Temperature unit.",
                "days": "How many days ahead.",
            },
        ),
        (
            numpy_style,
            "Convert money.",
            {
                "amount": "How much to convert.",
                "source": "Currency codes.",
                "target": "Currency codes.",
            },
        ),
        (
            sphinx_style,
            "List a folder.",
            {
                "path": "The folder, relative.",
                "limit": "At most this many entries.",
                "hidden": "Include dot files.",
            },
        ),
        (route, "Plan a route through the stops.", {}),
    ],
    ids=["google", "numpy", "sphinx", "no-param-docs"],
)
def test_docstring_styles_give_description_and_parameter_docs(
    fn: Any, description: str, docs: dict[str, str]
) -> None:
    t = Tool.from_function(fn)
    assert t.name == fn.__name__
    assert t.description == description
    assert {k: v.get("description") for k, v in props(t).items() if k in docs} == docs


def test_schema_from_hints() -> None:
    t = Tool.from_function(google)
    p = t.parameters
    assert p["type"] == "object" and p["required"] == ["city"]
    assert p["additionalProperties"] is False
    assert props(t)["city"]["minLength"] == 1
    unit = props(t)["unit"]
    assert p["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert unit["$ref"] == "#/$defs/Unit" and unit["default"] == "celsius"
    assert {"type": "null"} in props(t)["days"]["anyOf"]
    assert props(Tool.from_function(numpy_style))["source"]["enum"] == ["USD", "EUR"]
    assert "title" not in json.dumps(p).replace('"title":', "")  # generated titles dropped


def test_a_parameter_named_title_is_kept() -> None:
    def note(title: str, body: str = "") -> str:
        return title

    t = Tool.from_function(note)
    assert list(props(t)) == ["title", "body"]


@pytest.mark.parametrize(
    ("fn", "arguments", "expected"),
    [
        (google, '{"city": "Paris"}', "Paris|celsius|None"),
        (google, {"city": "Oslo", "unit": "fahrenheit", "days": "3"}, "Oslo|fahrenheit|3"),
        (numpy_style, '{"amount": 2.5, "source": "USD"}', 5.0),
        (sphinx_style, '{"path": "docs", "hidden": true}', ["docs", "docs"]),
        (
            route,
            '{"plan": {"stops": [{"lat": 1}, {"lat": 2, "lon": 3}]}}',
            {"n": 2, "mode": "foot"},
        ),
        (google, "", None),
    ],
    ids=["defaults", "coerced-enum-and-int", "literal", "keyword-only", "nested-models", "empty"],
)
def test_arguments_are_validated_before_the_call(fn: Any, arguments: Any, expected: Any) -> None:
    t = Tool.from_function(fn)
    if expected is None:
        with pytest.raises(ToolArgumentsError, match="city"):
            t.run(arguments)
        return
    assert t.run(arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ('{"city": ""}', ["city", "at least 1"]),
        ('{"city": "Rome", "unit": "kelvin"}', ["unit", "celsius"]),
        ('{"city": "Rome", "extra": 1}', ["extra", "not permitted"]),
        ('{"city": "Rome"', ["not valid JSON"]),
        ("[1, 2]", ["JSON object"]),
    ],
    ids=["too-short", "bad-enum", "unknown-key", "bad-json", "not-an-object"],
)
def test_bad_arguments_say_what_is_wrong(arguments: str, words: list[str]) -> None:
    calls: list[str] = []

    @tool
    def forecast(city: Annotated[str, Field(min_length=1)], unit: Unit = Unit.CELSIUS) -> str:
        calls.append(city)
        return city

    with pytest.raises(ToolArgumentsError) as err:
        forecast.run(arguments)
    for word in words:
        assert word in str(err.value)
    assert calls == []  # the function never ran


def test_parameters_that_clash_with_pydantic_names_work() -> None:
    @tool
    def dump(json: str, schema: int = 1, model_config: bool = False, copy: str = "x") -> str:
        """Odd names."""
        return f"{json}{schema}{model_config}{copy}"

    assert list(props(dump)) == ["json", "schema", "model_config", "copy"]
    assert dump.run({"json": "a", "schema": 2, "model_config": True}) == "a2Truex"


def test_positional_only_parameters() -> None:
    def scale(x: float, /, factor: float = 2.0) -> float:
        return x * factor

    assert Tool.from_function(scale).run({"x": 3}) == 6.0


def test_async_functions() -> None:
    @tool
    async def slow_add(a: int, b: int) -> int:
        """Add after a pause."""
        await asyncio.sleep(0)
        return a + b

    assert slow_add.is_async
    assert slow_add.run('{"a": 1, "b": 2}') == 3
    assert asyncio.run(slow_add.arun({"a": 2, "b": 2})) == 4

    async def inside_a_loop() -> int:  # what a notebook does: run() while a loop runs
        return int(slow_add.run({"a": 5, "b": 5}))

    assert asyncio.run(inside_a_loop()) == 10


def test_decorator_keeps_the_function_callable_and_takes_options() -> None:
    @tool(name="add_numbers", description="Add two integers.")
    def add(a: int, b: int = 1) -> int:
        return a + b

    assert add(2, 3) == 5
    assert add.name == "add_numbers"
    assert add.to_openai()["function"]["description"] == "Add two integers."
    assert add.__doc__ is None and getattr(add, "__name__", None) == "add"


def test_openai_dict_goes_through_the_handler_normalisation() -> None:
    dicts = [Tool.from_function(f).to_openai() for f in (google, numpy_style, sphinx_style, route)]
    defs = normalize_tools(dicts)
    assert [d.name for d in defs] == ["google", "numpy_style", "sphinx_style", "route"]
    # a Tool object itself is accepted where tools go: the same definitions
    objects = [Tool.from_function(f) for f in (google, numpy_style, sphinx_style, route)]
    assert normalize_tools(objects) == defs


@pytest.mark.parametrize("fn", [google, numpy_style, sphinx_style, route], ids=lambda f: f.__name__)
def test_generated_schemas_compile(fn: Any) -> None:
    t = Tool.from_function(fn)
    assert "root ::=" in schema_grammar(t.parameters)
    defs = normalize_tools([t.to_openai()])
    for dialect in ("hermes", "polyfill-json", "llama-3", "mistral-nemo"):
        spec = DialectSpec.builtin(dialect)
        choice = normalize_tool_choice("required", defs)
        grammar = build_grammar(spec, defs, tool_choice=choice, parallel_tool_calls=True)
        assert grammar is not None and grammar.gbnf


@pytest.mark.model
@pytest.mark.parametrize(
    ("fn", "good", "bad"),
    [
        (
            route,
            {"plan": {"stops": [{"lat": 1.5, "lon": 2}], "name": None}, "mode": "car"},
            {"plan": {"stops": []}, "mode": "bike"},
        ),
        (
            google,
            {"city": "Paris", "unit": "fahrenheit", "days": 2},
            {"city": "Paris", "unit": "K"},
        ),
        (numpy_style, {"amount": 1, "source": "EUR"}, {"amount": 1, "source": "GBP"}),
    ],
    ids=["nested", "enum-optional", "literal"],
)
def test_generated_schemas_admit_what_pydantic_admits(fn: Any, good: Any, bad: Any) -> None:
    """On llama.cpp's own grammar sampler: arguments the tool validates are text the compiled
    grammar accepts, and the grammar refuses what the tool refuses."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from conftest import model_path
    from grammar_check import grammar_accepts

    vocab = llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)
    t = Tool.from_function(fn)
    gbnf = schema_grammar(t.parameters)
    t.validate(good)
    assert grammar_accepts(gbnf, json.dumps(good), llama=vocab)
    with pytest.raises(ToolArgumentsError):
        t.validate(bad)
    assert not grammar_accepts(gbnf, json.dumps(bad), llama=vocab)


class NotJson:
    pass


def star_args(*names: str) -> str:
    return ""


def star_kwargs(city: str, **extra: str) -> str:
    return ""


def unannotated(city):  # type: ignore[no-untyped-def]
    return city


def bad_type(thing: NotJson) -> str:
    return ""


@pytest.mark.parametrize(
    ("fn", "name", "words"),
    [
        (star_args, None, ["*names"]),
        (star_kwargs, None, ["**extra"]),
        (unannotated, None, ["'city'", "no type annotation"]),
        (bad_type, None, ["JSON Schema"]),
        (lambda x: x, None, ["lambda", "name="]),
        (google, 'quote"d', ["name"]),
        (42, None, ["function"]),
    ],
    ids=[
        "star-args",
        "star-kwargs",
        "unannotated",
        "unsupported-type",
        "lambda",
        "bad-name",
        "not-callable",
    ],
)
def test_what_cannot_be_a_tool_fails_at_definition(
    fn: Any, name: str | None, words: list[str]
) -> None:
    with pytest.raises(ToolSpecError) as err:
        Tool.from_function(fn, name=name)
    for word in words:
        assert word in str(err.value)


def test_name_clashes_are_refused() -> None:
    a = Tool.from_function(google)
    b = Tool.from_function(numpy_style, name="google")
    with pytest.raises(ToolSpecError, match="two tools are named 'google'"):
        check_unique([a, b])
    assert list(check_unique([a, Tool.from_function(numpy_style)])) == ["google", "numpy_style"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        ({"a": 1}, '{"a":1}'),
        (Point(lat=1, lon=2), '{"lat":1.0,"lon":2.0}'),
        ([Unit.CELSIUS], '["celsius"]'),
        (NotJson, None),
    ],
    ids=["str", "dict", "model", "enum-list", "fallback-str"],
)
def test_result_text(value: Any, text: str | None) -> None:
    assert result_text(value) == (text if text is not None else json.dumps(str(value)))


def test_parse_docstring_ignores_other_sections() -> None:
    doc = parse_docstring(
        """Summary.

        Raises:
            ValueError: when bad.
        Args:
            x: the x.
        """
    )
    assert doc.description == "Summary."
    assert doc.params == {"x": "the x."}
