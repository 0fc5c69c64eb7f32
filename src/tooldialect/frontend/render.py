"""``render_prompt``: exactly the prompt the handler sends, from a template, a dialect and messages.

With a polyfill dialect the conversation is rewritten first (``dialect.polyfill.apply_polyfill``)
and the template never sees ``tools``; otherwise tools and tool messages go to the model's own
template, normalised.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..dialect.polyfill import apply_polyfill, assistant_as_text
from ..dialect.spec import DialectSpec
from ..errors import TemplateError, ToolSpecError
from ..prompt.compat import (
    SYSTEM_ROLES,
    fold_system_turns,
    name_tool_results,
    render_adapted,
    template_variables,
    tool_results_as_user_turns,
)
from ..prompt.coverage import lost_messages
from ..prompt.request_messages import canonical_messages
from ..prompt.shared import tool_forms
from ..prompt.template import ChatTemplate
from ..tool_defs import ToolLike, normalize_tools

__all__ = [
    "calls_in_content",
    "prompt_closes_reasoning",
    "prompt_opens_reasoning",
    "prompt_prefill",
    "render_prompt",
]


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

    No message is lost: a template without a place for system turns gets their text at the head
    of the first user turn (``compat.fold_system_turns``); a tool result the template leaves out,
    or refuses (it renders no tool turn and checks that roles alternate), goes as a user turn
    naming the tool and the call (``compat.tool_results_as_user_turns``); a message that still
    does not reach the prompt (a role the template has no branch for) raises ``ToolSpecError``
    naming it (``coverage``).

    Raises ``TemplateError`` when the template raises, ``ToolSpecError`` for malformed tools or
    a message the template does not render.
    """
    tmpl = template if isinstance(template, ChatTemplate) else ChatTemplate(template)
    defs = normalize_tools(tools)
    # OpenAI lets an assistant message that calls tools leave out `content`; templates read it
    # unconditionally, so it goes in as null (shallow copies: the caller's dicts stay untouched).
    messages = [
        {**m, "content": None} if isinstance(m, Mapping) and "content" not in m else m
        # legacy function calling as tool calls; binding is checked where requests are prepared
        for m in canonical_messages(messages, strict=False)
    ]
    if spec.polyfill is None and not tmpl.capabilities.tool_calls:
        # tool results named first: their calls leave ``tool_calls`` for the content
        messages = calls_in_content(name_tool_results(messages), spec)
    # shared forms: built once per tool, passed to the template uncopied (see ``shared``)
    openai_tools = tool_forms(defs) if defs else None
    # variables the template reads by convention (FireFunction's ``functions``), and fallbacks
    # for what templates refuse (absent schema fields, client call ids, repeated roles)
    kwargs = {**template_variables(tmpl, openai_tools, template_kwargs), **template_kwargs}
    alnum9 = spec.id_format == "alnum9"

    def pipeline(msgs: Sequence[Mapping[str, Any]], *, fold: bool) -> str:
        if spec.polyfill is not None:
            rewritten = apply_polyfill(msgs, spec, defs, system_role=not fold)
            return render_adapted(
                lambda m, _: tmpl.render(m, add_generation_prompt=add_generation_prompt, **kwargs),
                rewritten,
                None,
                alnum9=alnum9,
            )
        return render_adapted(
            lambda m, t: tmpl.render(
                m, tools=t, add_generation_prompt=add_generation_prompt, **kwargs
            ),
            fold_system_turns(msgs) if fold else msgs,
            openai_tools,
            alnum9=alnum9,
        )

    try:
        prompt, lost = _serve(tmpl, spec, messages, pipeline)
    except TemplateError as exc:
        # a template with no place for tool results may refuse them outright (it checks that
        # user and assistant turns alternate); they go as user turns then, or the error stands
        results = _tool_turns(messages, range(len(messages)))
        if spec.polyfill is not None or not results:
            raise
        try:
            prompt, lost = _serve(
                tmpl, spec, tool_results_as_user_turns(messages, results), pipeline
            )
        except TemplateError:
            raise exc from exc.__cause__  # keeps a refusal a refusal (raise_exception)
        return _checked(prompt, messages, lost)
    if _tool_turns(messages, lost):
        # a tool result the template leaves out goes as a user turn naming the tool and call
        carried = tool_results_as_user_turns(messages, _tool_turns(messages, lost))
        prompt, lost = _serve(tmpl, spec, carried, pipeline)
    return _checked(prompt, messages, lost)


def calls_in_content(
    messages: Sequence[Mapping[str, Any]], spec: DialectSpec
) -> list[Mapping[str, Any]]:
    """``messages`` with every assistant turn's ``tool_calls`` written into its content as the
    model writes them (the polyfill's ``assistant_as_text``), for a template that renders no
    past call (Granite 3, LFM2, vLLM's GLM-4): else the calls would vanish from the prompt, and
    the model would see its tool results answer nothing."""
    names: dict[str, str] = {}
    return [
        assistant_as_text(spec, dict(m), names)
        if m.get("role") == "assistant" and m.get("tool_calls")
        else m
        for m in messages
    ]


def _serve(
    tmpl: ChatTemplate,
    spec: DialectSpec,
    messages: Sequence[Mapping[str, Any]],
    pipeline: Callable[..., str],
) -> tuple[str, list[int]]:
    """The prompt and the messages it loses, system turns placed where the template shows them."""
    # a template without a place for system turns gets their text in the first user turn
    fold = not tmpl.capabilities.system_role
    renamed = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in messages]
    # a system turn the template leaves out (a developer turn it has no branch for, a system
    # prompt it drops when tools are given) is tried as a system turn, then folded
    attempts = (
        [(messages, fold)] if fold else [(messages, False), (renamed, False), (messages, True)]
    )
    lost: list[int] = []
    prompt = ""
    for msgs, folds in attempts:
        if msgs is renamed and not any(messages[i].get("role") == "developer" for i in lost):
            continue
        prompt = pipeline(msgs, fold=folds)
        lost = lost_messages(
            tmpl, f"{spec.id}|{folds}", msgs, prompt, functools.partial(pipeline, fold=folds)
        )
        if not any(messages[i].get("role") in SYSTEM_ROLES for i in lost):
            break
    return prompt, lost


def _tool_turns(messages: Sequence[Mapping[str, Any]], indices: Iterable[int]) -> list[int]:
    return [i for i in indices if messages[i].get("role") == "tool"]


def _checked(prompt: str, messages: Sequence[Mapping[str, Any]], lost: list[int]) -> str:
    if lost:
        raise ToolSpecError(_lost_error(messages, lost))
    return prompt


def _lost_error(messages: Sequence[Mapping[str, Any]], lost: list[int]) -> str:
    i = lost[0]
    role = messages[i].get("role")
    more = f" (and messages {lost[1:]})" if len(lost) > 1 else ""
    return (
        f"messages[{i}] (role {role!r}) does not reach the prompt{more}: the model's chat template "
        "renders no such message, so the model would never see it; send it in a role the "
        "template renders (system, user, assistant, tool)"
    )


_TAIL = 4096
"""Characters at the end of a prompt that ``prompt_prefill`` reads (half of it at least, after
trailing whitespace, which is more than any marker)."""


def prompt_prefill(prompt: str, spec: DialectSpec) -> str:
    """The marker the prompt already wrote for the model's reply, or ``""``.

    Generation prompts sometimes end inside the model's output syntax: an open reasoning block
    (``<think>\n``, DeepSeek R1, Qwen3 thinking), or a call opener (Functionary v3.2 ends with
    ``>>>``). The parser reads this text as if the model had written it, and a forced grammar
    starts after it. Read from the spec's markers, never from a per-family list.
    """
    # the end of the prompt is enough (a 250-tool prompt is hundreds of KB), unless that end is
    # mostly whitespace: then what rstrip() leaves of the whole prompt
    tail = prompt[-_TAIL:].rstrip()
    if len(tail) < _TAIL // 2 < len(prompt) // 2:
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


def prompt_closes_reasoning(prompt: str, spec: DialectSpec) -> bool:
    """Whether the prompt already wrote a closed, empty reasoning block for the reply (Qwen3's
    ``enable_thinking=False`` ends with ``<think>\n\n</think>\n\n``): thinking is off, so the
    reply starts with the answer."""
    if spec.reasoning is None:
        return False
    tail = prompt[-_TAIL:].rstrip()
    return any(c.strip() and tail.endswith(c.strip()) for c in spec.reasoning.closes())
