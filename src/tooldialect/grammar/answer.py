"""Structured-output grammars: the reply is a JSON value of a schema (``response_format``).

The schema is compiled by the same ``SchemaConverter`` as tool arguments, so ``$defs``,
``anyOf``, enums and bounds mean the same thing in both places, and an inexpressible schema raises
``UnsupportedSchemaError`` (with its JSON pointer) while the grammar is built, before decoding.

The grammar is not lazy: it constrains from the first token. Around the answer:

* with ``spec.reasoning``, a reasoning block may come first and stays free text (it must start
  the reply, or be open already when the prompt opened it); the answer follows its close;
* with tools under ``tool_choice="auto"`` (OpenAI's semantics for tools plus
  ``response_format``), the reply is either call(s), in any layout the lazy tool grammar accepts,
  or the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dialect.spec import DialectSpec
from ..tool_defs import ToolDef
from .build import GAP, ToolGrammar
from .codec import ArgumentLayout
from .formats import format_rule
from .gbnf import GbnfBuilder, optional_edges, until
from .schema import SchemaConverter

__all__ = ["ANY_OBJECT", "build_answer_grammar"]

ANY_OBJECT: Mapping[str, Any] = {"type": "object"}
"""The schema of ``{"type": "json_object"}`` without one: any JSON object."""


def build_answer_grammar(
    spec: DialectSpec,
    schema: Any,
    *,
    tools: list[ToolDef] | None = None,
    parallel_tool_calls: bool = True,
    reasoning_open: bool = False,
    argument_layout: ArgumentLayout = "free",
) -> ToolGrammar:
    """A grammar whose replies are JSON values of ``schema`` (after optional free reasoning), or,
    when ``tools`` are given, calls to them in the dialect's canonical layout.

    ``tools`` must only be given for ``tool_choice="auto"`` on a ``forcible`` spec: the call
    alternative starts at the first token, which is what ``forcible`` promises.
    ``argument_layout`` is the calls' (see ``build_grammar``); the answer's own JSON stays free.
    """
    b = GbnfBuilder()
    root = b.name("root")
    body = SchemaConverter(b, schema).visit(schema, "", hint="answer")
    if tools:
        # every layout the lazy grammar would accept, not only the canonical one: the model picks
        # its call layout at the first token (Qwen2.5 writes bare JSON calls), and without its
        # layout here it would be steered into the answer instead of calling
        layouts = [spec.primary] + [f for f in spec.formats[1:] if f.effective_triggers()]
        calls = [
            format_rule(
                b,
                spec,
                fmt,
                tools,
                parallel=parallel_tool_calls and spec.parallel_calls,
                hint=f"call{i}",
                layout=argument_layout,
            )
            for i, fmt in enumerate(layouts)
        ]
        body = b.add("reply", " | ".join([*calls, body]))
    reasoning = spec.reasoning
    if reasoning is not None:
        think = until(b, reasoning.close, hint="think")
        after = f"{GAP} {optional_edges(reasoning.answer_open)}" if reasoning.answer_open else GAP
        if reasoning_open:
            body = f"{think} {after} {body}"
        else:
            body = f"({optional_edges(reasoning.open)} {think} {after})? {body}"
    b.define(root, body)
    return ToolGrammar(gbnf=b.render(root), root=root, lazy=False, forced=False)
