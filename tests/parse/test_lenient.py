"""The generic machinery behind lenient parsing (docs/parsing.md); the behaviour itself is tabled in
tests/fixtures/outputs/lenient/."""

from __future__ import annotations

import pytest

from tooldialect.dialect.spec import (
    CallFormat,
    DialectSpec,
    ElementBody,
    JsonBody,
    PythonBody,
    TaggedBody,
)
from tooldialect.errors import ToolSpecError
from tooldialect.parse import StreamParser, parse_output
from tooldialect.parse.markers import split_literal
from tooldialect.parse.variants import rebodied_formats, unwrapped_formats
from tooldialect.tool_defs import normalize_tools


@pytest.mark.parametrize(
    ("literal", "pieces"),
    [
        ("[TOOL_CALLS][", ("[TOOL_CALLS]", "[")),
        ("]</TOOLCALL>", ("]", "</TOOLCALL>")),
        ("<|START_ACTION|>[\n    ", ("<|START_ACTION|>", "[")),
        ("Action:\n```json\n[", ("Action:", "```json", "[")),
        ('<invoke name="', ("<invoke", 'name="')),
        ("<parameter=", ("<parameter=",)),
        ("</function>\n</tool_call>", ("</function>", "</tool_call>")),
        ("functions.", ("functions.",)),
    ],
    ids=[
        "list-after-tag",
        "tag-after-bracket",
        "indent-dropped",
        "words",
        "attribute",
        "tag-start-kept",
        "two-tags",
        "plain-word",
    ],
)
def test_split_literal(literal: str, pieces: tuple[str, ...]) -> None:
    assert split_literal(literal) == pieces


def test_unwrapped_formats_need_a_distinctive_head() -> None:
    element = CallFormat(call_open="<tool_call>", call_close="</tool_call>", body=ElementBody())
    (bare,) = unwrapped_formats(element)
    assert (bare.section_open, bare.call_open, bare.call_close) == ("", "", "</tool_call>")
    # a JSON body has no head of its own: without its marker it would be any "{" in prose
    assert unwrapped_formats(CallFormat(call_open="<tool_call>", body=JsonBody())) == []


def test_rebodied_formats_keep_the_envelope() -> None:
    fmt = CallFormat(call_open="<tool_call>", call_close="</tool_call>", body=ElementBody())
    bodies = [type(f.body) for f in rebodied_formats(fmt)]
    # JSON calls joined by ";" in one marker, one JSON call, a Python call, the element head
    # around JSON arguments
    assert bodies == [JsonBody, JsonBody, PythonBody, TaggedBody]
    joined = rebodied_formats(fmt)[0]
    assert (joined.section_open, joined.section_close, joined.separator) == (
        "<tool_call>",
        "</tool_call>",
        "; ",
    )
    assert all(f.call_open == "<tool_call>" for f in rebodied_formats(fmt)[1:])
    assert rebodied_formats(CallFormat(body=JsonBody(), at_start_only=True)) == []


@pytest.mark.parametrize(
    "name", ["获取天气", "get weather", "météo.v2"], ids=["cjk", "inner-space", "accents"]
)
def test_tool_names_of_any_script_are_accepted(name: str) -> None:
    (tool,) = normalize_tools([{"type": "function", "function": {"name": name}}])
    assert tool.name == name


@pytest.mark.parametrize(
    "name", [" x", 'a"b', "f(x)", ""], ids=["lead-space", "quote", "parens", "empty"]
)
def test_tool_names_that_would_break_markers_are_refused(name: str) -> None:
    with pytest.raises(ToolSpecError, match=r"function\.name"):
        normalize_tools([{"type": "function", "function": {"name": name}}])


def test_prose_call_head_is_decided_on_a_fixed_window() -> None:
    # far from its "{", the name key is not looked for: batch and streaming agree it is content
    spec = DialectSpec.builtin("llama-3")
    tools = [{"type": "function", "function": {"name": "f"}}]
    text = "See {" + " " * 60 + '"name": "f", "parameters": {}}'
    batch = parse_output(text, spec, tools=tools)
    parser = StreamParser(spec, tools=tools)
    for ch in text:
        parser.feed(ch)
    parser.close()
    assert batch.tool_calls == [] and batch.content == text
    assert parser.result.content == text and parser.result.tool_calls == []
