"""``render_prompt``: exactly the prompt the handler sends, from a template, a dialect and messages.

With a polyfill dialect the conversation is rewritten first (``dialect.polyfill.apply_polyfill``)
and the template never sees ``tools``; otherwise tools and tool messages go to the model's own
template, normalised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dialect.polyfill import apply_polyfill
from ..dialect.spec import DialectSpec
from ..prompt.compat import render_adapted, template_variables
from ..prompt.template import ChatTemplate
from ..tools import ToolDef, ToolLike, normalize_tools

__all__ = ["prompt_opens_reasoning", "prompt_prefill", "render_prompt"]


def render_prompt(
    template: ChatTemplate | str,
    spec: DialectSpec,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[ToolLike] | None = None,
    add_generation_prompt: bool = True,
    **template_kwargs: Any,
) -> str:
    """The rendered prompt. ``tools`` may be OpenAI tool dicts or ``ToolDef`` s.

    Conventions and quirks of real templates are met as ``template_compat`` describes: the
    ``functions``/``datetime`` variables, call ids a dialect accepts (mapped back with
    ``template_compat.client_call_ids``), schema fields and role alternation on a template error.

    Raises ``TemplateError`` when the template raises, ``ToolSpecError`` for malformed tools.
    """
    tmpl = template if isinstance(template, ChatTemplate) else ChatTemplate(template)
    defs = normalize_tools(tools)
    # OpenAI lets an assistant message that calls tools leave out `content`; templates read it
    # unconditionally, so it goes in as null (shallow copies: the caller's dicts stay untouched).
    messages = [
        {**m, "content": None} if isinstance(m, Mapping) and "content" not in m else m
        for m in messages
    ]
    openai_tools = [_openai_tool(t) for t in defs] if defs else None
    # variables the template reads by convention (FireFunction's ``functions``), and fallbacks
    # for what templates refuse (absent schema fields, client call ids, repeated roles)
    kwargs = {**template_variables(tmpl, openai_tools, template_kwargs), **template_kwargs}
    alnum9 = spec.id_format == "alnum9"
    if spec.polyfill is not None:
        rewritten = apply_polyfill(messages, spec, defs, system_role=tmpl.capabilities.system_role)
        return render_adapted(
            lambda msgs, _: tmpl.render(
                msgs, add_generation_prompt=add_generation_prompt, **kwargs
            ),
            rewritten,
            None,
            alnum9=alnum9,
        )
    return render_adapted(
        lambda msgs, tls: tmpl.render(
            msgs, tools=tls, add_generation_prompt=add_generation_prompt, **kwargs
        ),
        messages,
        openai_tools,
        alnum9=alnum9,
    )


def prompt_prefill(prompt: str, spec: DialectSpec) -> str:
    """The marker the prompt already wrote for the model's reply, or ``""``.

    Generation prompts sometimes end inside the model's output syntax: an open reasoning block
    (``<think>\n``, DeepSeek R1, Qwen3 thinking), or a call opener (Functionary v3.2 ends with
    ``>>>``). The parser reads this text as if the model had written it, and a forced grammar
    starts after it. Read from the spec's markers, never from a per-family list.
    """
    tail = prompt.rstrip()
    if spec.reasoning is not None:
        for marker in spec.reasoning.opens():  # a tag, or a phrase (Apriel)
            if marker.strip() and tail.endswith(marker.strip()):
                return marker
    for fmt in spec.formats:
        opener = fmt.section_open or fmt.call_open
        if opener.strip() and prompt.endswith(opener.rstrip()):
            return opener
    return ""


def prompt_opens_reasoning(prompt: str, spec: DialectSpec) -> bool:
    """Whether the prompt leaves the model inside a reasoning block (ends with the open marker)."""
    return spec.reasoning is not None and prompt_prefill(prompt, spec) in spec.reasoning.opens()


def _openai_tool(tool: ToolDef) -> dict[str, Any]:
    # OpenAI's own key order (name, description, parameters): templates print tools with tojson,
    # so the order is visible to the model
    fn: dict[str, Any] = {"name": tool.name}
    if tool.description:
        fn["description"] = tool.description
    fn["parameters"] = tool.parameters
    return {"type": "function", "function": fn}
