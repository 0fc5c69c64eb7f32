"""An object schema written again within one grammar (a pagination or filter shape many MCP tools
share) compiles once (issue 20, cold overhead); what differs, reads its own document or loosens
a constraint is compiled where it stands."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tooldialect.grammar import GbnfBuilder, SchemaConverter
from tooldialect.grammar.schema import converter as js

PAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order": {"type": "string", "enum": ["asc", "desc"]},
        "size": {"type": "integer", "minimum": 1},
    },
    "required": ["order"],
}


def _tool(page: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"q": {"type": "string"}, "page": page}}


@pytest.fixture
def object_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = js.object_expr  # type: ignore[attr-defined]  # the name the converter calls

    def counting(
        conv: SchemaConverter, schema: Any, pointer: str, hint: str, **options: Any
    ) -> str:
        seen.append(pointer)
        return real(conv, schema, pointer, hint, **options)

    monkeypatch.setattr(js, "object_expr", counting)
    return seen


def _compile(b: GbnfBuilder, schema: dict[str, Any]) -> tuple[str, SchemaConverter]:
    conv = SchemaConverter(b, schema)
    return conv.visit(schema, "", hint="args"), conv


def test_a_shared_object_compiles_once_per_grammar(object_calls: list[Any]) -> None:
    b = GbnfBuilder()
    _compile(b, _tool(PAGE))
    _compile(b, _tool(copy.deepcopy(PAGE)))  # equal text, another object: shared too
    assert object_calls.count("/properties/page") == 1
    assert object_calls.count("") == 1  # the second tool is equal as a whole: found whole
    fresh = GbnfBuilder()
    _compile(fresh, _tool(PAGE))
    assert object_calls.count("/properties/page") == 2  # a new grammar compiles again


def test_an_edited_copy_is_compiled_again(object_calls: list[Any]) -> None:
    b = GbnfBuilder()
    edited = copy.deepcopy(PAGE)
    edited["properties"]["order"]["enum"] = ["asc", "newest"]
    _compile(b, _tool(PAGE))
    _compile(b, _tool(edited))
    assert object_calls.count("/properties/page") == 2
    text = b.render(next(iter(b.rules)))
    assert "newest" in text and "desc" in text


def test_property_order_is_part_of_the_key(object_calls: list[Any]) -> None:
    b = GbnfBuilder()
    swapped = {**PAGE, "properties": dict(reversed(list(PAGE["properties"].items())))}
    _compile(b, _tool(PAGE))
    _compile(b, _tool(swapped))
    assert object_calls.count("/properties/page") == 2


def test_refs_are_resolved_in_their_own_document() -> None:
    # the same text `{"$ref": "#/$defs/kind"}` names different targets in two documents (it
    # read the first tool's target for both before: the ref memo had no document in its key)
    def doc(values: list[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"f": {"type": "object", "properties": {"k": {"$ref": "#/$defs/kind"}}}},
            "$defs": {"kind": {"type": "string", "enum": values}},
        }

    b = GbnfBuilder()
    _compile(b, doc(["red"]))
    root, _ = _compile(b, doc(["blue"]))
    text = b.render(root)
    assert "red" in text and "blue" in text


def test_loosened_constraints_are_recorded_at_each_copy() -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string"}}, "propertyNames": {}}
    schema = {"type": "object", "properties": {"x": loose, "y": copy.deepcopy(loose)}}
    _, conv = _compile(GbnfBuilder(), schema)
    pointers = [p for p, _ in conv.loose]
    assert "/properties/x/propertyNames" in pointers
    assert "/properties/y/propertyNames" in pointers


def test_two_tools_with_one_ref_name_keep_their_own_targets() -> None:
    from tooldialect.dialect.builtins import get_builtin
    from tooldialect.grammar import build_grammar

    def tool(name: str, values: list[str]) -> dict[str, Any]:
        params = {
            "type": "object",
            "properties": {
                "k": {"$ref": "#/$defs/kind"},
                "all": {"allOf": [{"$ref": "#/$defs/kind"}]},
            },
            "required": ["k"],
            "$defs": {"kind": {"type": "string", "enum": values}},
        }
        return {"type": "function", "function": {"name": name, "parameters": params}}

    grammar = build_grammar(get_builtin("hermes"), [tool("a", ["red"]), tool("b", ["blue"])])
    assert grammar is not None
    assert "red" in grammar.gbnf and "blue" in grammar.gbnf
