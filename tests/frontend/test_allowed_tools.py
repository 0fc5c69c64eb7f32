"""``allowed_tools``: the prompt lists every tool, the grammar lets a call name only the allowed
ones (forced under ``required``, lazily under ``auto``, and beside a ``response_format`` answer).
Model-free: request preparation on Qwen2.5's own template, grammars checked with the automaton."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeEngine
from tooldialect.errors import ToolSpecError
from tooldialect.frontend.pipeline import FrontEnd
from tooldialect.frontend.request import ModelSetup, Request
from tooldialect.gguf import ModelInfo
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import detect_dialect

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
            "strict": True,
        },
    }
    for name in ("get_weather", "search", "get_time")
]
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def setup() -> ModelSetup:
    source = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    info = ModelInfo(chat_template=source, eos_token="<|im_end|>")
    return ModelSetup(
        info=info,
        template=ChatTemplate(source, eos_token="<|im_end|>"),
        template_origin="user",
        spec=detect_dialect(source, eos_token="<|im_end|>"),
        engine=FakeEngine(),
    )


def prepare(setup: ModelSetup, **request: Any) -> Request:
    """The request prepared as the handler prepares it (``FrontEnd.prepare_from``)."""
    return FrontEnd(adapter="test").prepare_from(setup, USER, request, where="test")


def allowed(mode: str, *names: str) -> dict[str, Any]:
    return {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": mode,
            "tools": [{"type": "function", "function": {"name": n}} for n in names],
        },
    }


def call(setup: ModelSetup, name: str) -> str:
    return setup.spec.render_call(name, {"q": "x"})


def accepts(grammar: Any, text: str) -> bool:
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    return automaton.feed(text)


def test_prompt_is_the_same_whatever_the_subset(setup: ModelSetup) -> None:
    prompts = {
        prepare(setup, tools=TOOLS, tool_choice=choice).prompt
        for choice in ("auto", allowed("auto", "search"), allowed("required", "get_time", "search"))
    }
    assert len(prompts) == 1
    assert all(name in next(iter(prompts)) for name in ("get_weather", "search", "get_time"))


def test_required_subset_forces_a_call_to_an_allowed_tool(setup: ModelSetup) -> None:
    req = prepare(setup, tools=TOOLS, tool_choice=allowed("required", "search", "get_time"))
    assert req.grammar is not None and not req.grammar.lazy
    assert accepts(req.grammar, call(setup, "search"))
    assert accepts(req.grammar, call(setup, "get_time"))
    assert not accepts(req.grammar, call(setup, "get_weather"))
    plain = prepare(setup, tools=TOOLS, tool_choice="required")
    assert accepts(plain.grammar, call(setup, "get_weather"))  # the subset is what narrowed it


def test_auto_subset_narrows_the_lazy_grammar(setup: ModelSetup) -> None:
    req = prepare(setup, tools=TOOLS, tool_choice=allowed("auto", "get_weather"))
    assert req.grammar is not None and req.grammar.lazy
    assert accepts(req.grammar, call(setup, "get_weather"))
    assert not accepts(req.grammar, call(setup, "search"))
    full = prepare(setup, tools=TOOLS, tool_choice="auto")
    assert full.grammar is not req.grammar  # distinct cache entries


def test_subset_applies_beside_a_response_format(setup: ModelSetup) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    req = prepare(
        setup,
        tools=TOOLS,
        tool_choice=allowed("auto", "get_time"),
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "A", "schema": schema, "strict": True},
        },
    )
    assert req.grammar is not None
    assert accepts(req.grammar, call(setup, "get_time"))
    assert not accepts(req.grammar, call(setup, "search"))
    assert accepts(req.grammar, '{"a": 1}')


def test_unknown_subset_names_are_refused_by_name(setup: ModelSetup) -> None:
    with pytest.raises(ToolSpecError, match=r"\['lookup'\]"):
        prepare(setup, tools=TOOLS, tool_choice=allowed("auto", "search", "lookup"))


STRICT = {
    "type": "object",
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
LOOSE = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("schema", "args", "ok"),
    [
        (STRICT, {"a": None, "b": 1}, True),  # strict's nullable form
        (STRICT, {"a": "x", "b": 2}, True),
        (STRICT, {"b": 3}, False),  # every property required
        (STRICT, {"a": "x", "b": 2, "c": 0}, False),
        (LOOSE, {"b": 3}, True),  # not listed in required: optional, strict or not
        (LOOSE, {"a": "x", "c": 0}, False),  # additionalProperties absent: closed
    ],
)
def test_strict_schemas_are_enforced_as_written(
    setup: ModelSetup, schema: dict[str, Any], args: dict[str, Any], ok: bool
) -> None:
    """docs/structured-output.md's table: ``strict`` is kept, the schema is what is enforced."""
    tool = {"type": "function", "function": {"name": "f", "parameters": schema, "strict": True}}
    req = prepare(setup, tools=[tool], tool_choice="required")
    assert req.tools[0].strict
    assert accepts(req.grammar, setup.spec.render_call("f", args)) is ok
