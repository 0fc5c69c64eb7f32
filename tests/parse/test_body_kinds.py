"""A body kind is one place: a body class registered from outside the library (here, in the
test) with its grammar (``grammar.bodies``) and its parser (``parse.body_kinds``) is written by
``render_call``, constrained by the grammar and read back, batch and streaming, without editing
any library module."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import pytest

from tooldialect.dialect.spec import CallFormat, DialectSpec, JsonBody, PythonBody, format_template
from tooldialect.dialect.templates import SpecModel
from tooldialect.grammar.bodies import BodyRequest, register_body_grammar
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.codec import codec_for
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.grammar.gbnf import literal
from tooldialect.grammar.schema import SchemaConverter
from tooldialect.parse import parse_output
from tooldialect.parse.body_kinds import BodyKind, register_body_kind
from tooldialect.parse.markers import Source, compile_template, match_template
from tooldialect.parse.plan import BodyPlan, Context, FormatPlan
from tooldialect.parse.reader_events import FAIL, OK, Reader, certain
from tooldialect.parse.stream import StreamParser
from tooldialect.parse.variants import listed_formats, rebodied_formats

TOOL = {
    "type": "function",
    "function": {
        "name": "book",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
ARGS: dict[str, Any] = {"city": "Seoul <north>", "n": 3}


class ArrowBody(SpecModel):
    """A toy shape: ``name<<{json arguments}>>``."""

    kind: Literal["arrow"] = "arrow"
    head: str = "{name}<<"
    tail: str = ">>"

    def head_template(self) -> str:
        return self.head

    def render(self, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
        return format_template(self.head, name=name) + json.dumps(dict(args)) + self.tail


def arrow_rule(req: BodyRequest, body: ArrowBody) -> str:
    schema = req.tool.parameters
    args = SchemaConverter(req.b, schema, codec=codec_for("json", req.layout)).visit(
        schema, "", hint=f"{req.hint}-args"
    )
    head = literal(format_template(body.head, name=req.tool.name))
    return req.b.add(req.hint, f"{head} {args} {literal(body.tail)}")


def plan_arrow(fmt: CallFormat, body: ArrowBody) -> BodyPlan:
    return BodyPlan(head=compile_template(body.head), tail=body.tail)


def read_arrow(src: Source, p: int, plan: FormatPlan, body: ArrowBody, ctx: Context) -> Reader:
    p, fields = yield from match_template(src, p, plan.head, names=ctx.names)
    if p < 0:
        return p, FAIL
    while (end := src.buf.find(plan.tail, p)) < 0:
        if src.final:
            return p, FAIL
        yield None
    try:
        args = json.loads(src.buf[p:end])
    except ValueError:
        return p, FAIL
    yield from certain(fields["name"], None, None, json.dumps(args))
    return end + len(plan.tail), OK


# A library body shape joins the ``Body`` union in dialect/bodies.py (one line) so that specs
# serialise it; this test's class stays outside, which pydantic warns about when it serialises.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_a_body_kind_registered_outside_the_library_works_end_to_end() -> None:
    register_body_grammar(ArrowBody, arrow_rule)
    register_body_kind(ArrowBody, BodyKind(plan_arrow, read_arrow))
    fmt = CallFormat.model_construct(**{**CallFormat().__dict__, "body": ArrowBody()})
    spec = DialectSpec(id="arrow", formats=[fmt])
    text = spec.render_call("book", ARGS)
    assert text == 'book<<{"city": "Seoul <north>", "n": 3}>>'
    grammar = build_grammar(spec, [TOOL], tool_choice="required", argument_layout="canonical")
    assert grammar is not None
    assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(text)
    assert not GbnfAutomaton(grammar.gbnf, grammar.root).feed(text.replace("3", '"3"'))
    batch = parse_output(text, spec, tools=[TOOL])
    assert [(c.name, json.loads(c.arguments_json)) for c in batch.tool_calls] == [("book", ARGS)]
    parser = StreamParser(spec, tools=[TOOL])
    for ch in text:
        parser.feed(ch)
    parser.close()
    assert [(c.name, json.loads(c.arguments_json)) for c in parser.result.tool_calls] == [
        ("book", ARGS)
    ]


def test_the_layouts_read_besides_a_format_are_its_body_kinds_data() -> None:
    """What else is read inside a body's markers (``rebodied_formats``) and whether its calls are
    read as a JSON list (``listed_formats``) come from the body's registered kind, not from a
    branch on its class."""
    fmt = CallFormat.model_construct(
        **{**CallFormat().__dict__, "body": ArrowBody(), "call_open": "<c>", "call_close": "</c>"}
    )
    register_body_kind(ArrowBody, BodyKind(plan_arrow, read_arrow))
    # the default: a JSON call object (also several joined by ";") and a Python call
    assert [type(f.body) for f in rebodied_formats(fmt)] == [JsonBody, JsonBody, PythonBody]
    assert rebodied_formats(fmt)[0].separator == "; "
    assert listed_formats(fmt) == []
    register_body_kind(
        ArrowBody,
        BodyKind(plan_arrow, read_arrow, other_syntaxes=lambda body: (), json_objects=True),
    )
    try:
        assert rebodied_formats(fmt) == []
        assert [(f.section_open, f.section_close) for f in listed_formats(fmt)] == [
            ("<c>[", "]</c>")
        ]
    finally:
        register_body_kind(ArrowBody, BodyKind(plan_arrow, read_arrow))
