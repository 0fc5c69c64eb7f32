"""The grammar of a tagged body: head, JSON arguments, tail."""

from __future__ import annotations

from ...dialect.spec import TaggedBody, format_template
from ..codec import codec_for
from ..marker_rules import body_literal, template_rule
from ..schema import SchemaConverter
from .base import BodyRequest

__all__ = ["tagged_body_rule"]


def tagged_body_rule(req: BodyRequest, body: TaggedBody) -> str:
    b, schema, exact = req.b, req.tool.parameters, req.exact
    args = SchemaConverter(b, schema, codec=codec_for("json", req.layout)).arguments(
        schema, hint=f"{req.hint}-args"
    )
    parts = [
        template_rule(body.head, req.head_fields(), exact=exact),
        body_literal(body.args_open, exact),
        args,
        body_literal(body.args_close, exact),
        body_literal(format_template(body.tail, name=req.tool.name), exact),
    ]
    return b.add(req.hint, " ".join(p for p in parts if p))
