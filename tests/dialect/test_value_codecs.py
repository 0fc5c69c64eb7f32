"""Value codecs are objects chosen by the spec through a registry: a saved spec's old codec name
still loads, and a codec registered from outside the library (here, in the test: one class
declaring its syntax) is written by ``render_call``, constrained by the grammar and read back by
the parser, streaming or not, without editing any library module; the test leaves both
registries as it found them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from tooldialect.dialect.spec import CallFormat, DialectSpec, PythonBody
from tooldialect.dialect.value_codecs import (
    Syntax,
    ValueCodec,
    register_value_codec,
    unregister_value_codec,
    value_codec,
    value_codec_names,
)
from tooldialect.errors import DialectError
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.codec import codec_names, forget_codec
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.parse import parse_output
from tooldialect.parse.stream import StreamParser

TOOL = {
    "type": "function",
    "function": {
        "name": "book",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city", "n"],
        },
    },
}
ARGS: dict[str, Any] = {"city": "Seoul (north)", "n": 3, "tags": ["a", "b"]}


def test_a_spec_saved_with_the_old_codec_name_loads() -> None:
    saved = {"kind": "python", "value_codec": "gemma4", "string_quote": "<escape>"}
    body = PythonBody.model_validate(saved)
    assert body.value_codec == "bare-key"
    assert value_codec(body.value_codec) is value_codec("gemma4")


def test_an_unknown_codec_is_refused() -> None:
    with pytest.raises(DialectError, match="unknown value codec"):
        PythonBody(value_codec="no-such-codec")
    with pytest.raises(DialectError, match="unknown value codec"):
        DialectSpec.model_validate_json(
            '{"id": "x", "formats": [{"body": {"kind": "python", "value_codec": "nope"}}]}'
        )


class _SemicolonJson(ValueCodec):
    """A toy: JSON values whose array items are apart by `` ; ``, keyword arguments, read once
    the call's closer is found. One class: its syntax is what it writes, what the grammar admits
    and what the parser reads."""

    name: ClassVar[str] = "toy-semicolon-json"
    keyword_arguments: ClassVar[bool] = True

    def syntax(self, quote: str) -> Syntax:
        return Syntax(item_sep=" ; ")


@pytest.fixture
def toy_codec() -> Iterator[None]:
    """The toy registered for one test, then forgotten by both registries."""
    register_value_codec(_SemicolonJson())
    try:
        yield
    finally:
        unregister_value_codec(_SemicolonJson.name)
        forget_codec(_SemicolonJson.name)
    assert _SemicolonJson.name not in value_codec_names()
    assert _SemicolonJson.name not in codec_names()


def _toy_spec() -> DialectSpec:
    body = PythonBody(
        call_open="<call>{name}(",
        call_close=")</call>",
        assign="=",
        arg_separator=";",
        value_codec="toy-semicolon-json",
        string_quote='"',
    )
    return DialectSpec(id="toy", formats=[CallFormat(body=body)])


@pytest.mark.usefixtures("toy_codec")
def test_a_codec_registered_outside_the_library_works_end_to_end() -> None:
    spec = _toy_spec()
    text = spec.render_call("book", ARGS)
    assert text == '<call>book(city="Seoul (north)";n=3;tags=["a" ; "b"])</call>'
    grammar = build_grammar(spec, [TOOL], tool_choice="required", argument_layout="canonical")
    assert grammar is not None
    assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(text)
    assert not GbnfAutomaton(grammar.gbnf, grammar.root).feed(text.replace("=3", "='3'"))
    assert not GbnfAutomaton(grammar.gbnf, grammar.root).feed(text.replace(" ; ", ", "))
    batch = parse_output("Sure. " + text, spec, tools=[TOOL])
    assert [(c.name, json.loads(c.arguments_json)) for c in batch.tool_calls] == [("book", ARGS)]
    assert batch.content == "Sure."
    parser = StreamParser(spec, tools=[TOOL])
    for ch in "Sure. " + text:
        parser.feed(ch)
    parser.close()
    streamed = parser.result
    assert [(c.name, c.arguments_json) for c in streamed.tool_calls] == [
        (c.name, c.arguments_json) for c in batch.tool_calls
    ]
