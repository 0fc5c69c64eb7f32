"""Request preparation, shared by every engine: tools and ``tool_choice`` normalised, the prompt
rendered with the model's template, the grammar built (and cached) from the dialect spec.

Nothing here decodes: a ``Request`` is what an engine needs to generate and what the response
shaping (``response``) needs to parse. ``ToolChatHandler`` drives it for llama-cpp-python; another
engine (an HTTP client for llama-server) can drive the same functions with its own ``ModelSetup``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dialect.spec import DialectSpec
from ..errors import TemplateError
from ..grammar.build import ensure_forcible
from ..grammar.codec import DEFAULT_ARGUMENT_LAYOUT, layout_for
from ..prompt.compat import client_call_ids
from ..prompt.history import ReplyMemory
from ..prompt.request_messages import canonical_messages
from ..prompt.turns import end_of_turn_markers
from ..tool_defs import (
    ToolChoice,
    ToolDef,
    normalize_response_format,
    normalize_tool_choice,
    normalize_tools,
    tools_key,
)
from .grammar_cache import GrammarCache
from .options import PREPARE_KEYS, check_known_keys
from .prefix import PrefixCache, tool_prefix
from .render import prompt_closes_reasoning, prompt_prefill, render_prompt

if TYPE_CHECKING:
    from ..dialect.vocabulary import Vocabulary
    from ..engine.base import Engine, GrammarLike
    from ..gguf import ModelInfo
    from ..grammar.codec import ArgumentLayout
    from ..prompt.template import ChatTemplate

__all__ = ["ModelSetup", "Request", "prepare_request"]


@dataclass
class ModelSetup:
    """What a handler resolved for one loaded model (cached per ``Llama``)."""

    info: ModelInfo
    template: ChatTemplate
    template_origin: str
    """``user``, ``gguf`` or ``fallback:<file>``."""
    spec: DialectSpec
    engine: Engine
    """What generates (``engine.base.Engine``): a ``LlamaCppEngine`` on the ``Llama``, a
    ``LlamaServerEngine``, or an engine of the caller's."""
    grammars: GrammarCache = field(default_factory=GrammarCache)
    """Grammars by request shape (``grammar_for``), least recently used dropped first."""
    replies: ReplyMemory = field(default_factory=ReplyMemory)
    """Raw text of this model's recent replies, re-rendered verbatim (see ``history``)."""
    prefixes: PrefixCache = field(default_factory=PrefixCache)
    """Tool prefixes by tools and system turns (``prefix``), least recently used dropped first."""
    vocabulary: Vocabulary | None = None
    """The model's vocabulary, when known (detection evidence; its special tokens inside
    markers are preserved in the output)."""
    markers: tuple[str, ...] | None = None
    """The spec's markers the output must show (``pipeline.spec_markers``), found once per
    model: with a vocabulary of thousands of special tokens that is not a per-request cost.
    ``None``: found per request."""


@dataclass(frozen=True)
class ForeignGrammar:
    """A caller's ``LlamaGrammar`` passed through (non-lazy)."""

    gbnf: str
    root: str = "root"
    lazy: bool = False
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = ()


@dataclass
class Request:
    """One prepared request (exposed for tests and benchmarks)."""

    setup: ModelSetup
    prompt: str
    tools: list[ToolDef]
    choice: ToolChoice
    grammar: GrammarLike | None
    reasoning_open: bool
    """The prompt ended inside an open reasoning block."""
    prefill: str = ""
    """A call opener the prompt already wrote (see ``prompt_prefill``)."""
    answer_schema: dict[str, Any] | None = None
    """The JSON Schema ``response_format`` asked a reply that is not a call to follow."""
    call_ids: dict[str, str] = field(default_factory=dict)
    """Dialect id -> client id for the ids the prompt had to map (``template_compat``); a call
    id in the reply that is one of them goes back to the client's."""
    stop: tuple[str, ...] = ()
    """Stop strings every engine adds: the template's end-of-turn markers (``prompt.turns``)."""
    prefix: str = ""
    """The head of ``prompt`` the system turns and tools make (``prefix.tool_prefix``): where
    the in-process engine keeps a state checkpoint."""
    parallel: bool = True
    """Several calls may be written (the request's ``parallel_tool_calls``, the handler's
    default, a named choice allowing one)."""
    answer_alone: GrammarLike | None = None
    """Where ``grammar`` allows a call or the ``response_format`` answer from the first token
    (tools under ``auto``): the answer's grammar alone, for a reply the model does not start
    as a call (``call_or_answer``)."""


def prepare_request(
    setup: ModelSetup,
    *,
    messages: Sequence[Mapping[str, Any]],
    functions: Sequence[Mapping[str, Any]] | None = None,
    function_call: Any = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: Any = None,
    grammar: Any = None,
    response_format: Any = None,
    default_parallel: bool = True,
    default_template_kwargs: Mapping[str, Any] | None = None,
    verbatim_history: bool = True,
    argument_layout: ArgumentLayout | None = DEFAULT_ARGUMENT_LAYOUT,
    parallel_tool_calls: bool | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    **template_variables: Any,
) -> Request:
    """Everything but generation: tools, prompt, grammar. Raises the library's errors.

    ``default_parallel`` and ``default_template_kwargs`` are the handler's; the request's own
    ``parallel_tool_calls``, ``chat_template_kwargs`` and ``template_variables`` (the
    ``TEMPLATE_KWARG_NAMES``; any other key is a ``ToolSpecError`` naming the nearest field) win.
    Messages are validated first (``prompt.request_messages.canonical_messages``), whatever the
    engine.
    """
    check_known_keys(template_variables, where="prepare_request", known=PREPARE_KEYS)
    messages = canonical_messages(messages)
    if functions is not None and tools is None:
        tools = [{"type": "function", "function": f} for f in functions]
    if function_call is not None and tool_choice is None:
        tool_choice = (
            {"type": "function", "function": {"name": function_call["name"]}}
            if isinstance(function_call, Mapping)
            else function_call
        )
    defs = normalize_tools(tools)
    choice = normalize_tool_choice(tool_choice, defs)
    answer = normalize_response_format(response_format)
    spec = setup.spec
    ensure_forcible(spec, choice)
    # a named tool_choice means one call of that function (vLLM's named tool choice does the same)
    asked = default_parallel if parallel_tool_calls is None else parallel_tool_calls
    parallel = bool(asked) and choice.mode != "named"
    render_kwargs = dict(default_template_kwargs or {})
    render_kwargs.update(chat_template_kwargs or {})
    render_kwargs.update(template_variables)
    shown = defs if choice.mode != "none" else []
    prompt = render_request(setup, messages, shown, render_kwargs, verbatim=verbatim_history)
    prefix = tool_prefix(
        setup.prefixes,
        lambda probe: render_prompt(setup.template, spec, probe, tools=shown, **render_kwargs),
        messages=messages,
        tools=shown,
        template_kwargs=render_kwargs,
        prompt=prompt,
    )
    prefill = prompt_prefill(prompt, spec)
    reasoning_open = spec.reasoning is not None and prefill in spec.reasoning.opens()
    call_prefill = "" if reasoning_open else prefill
    closed = not reasoning_open and prompt_closes_reasoning(prompt, spec)
    gram = grammar_for(
        setup,
        defs,
        choice,
        parallel,
        reasoning_open,
        call_prefill,
        answer_schema=answer,
        layout=argument_layout,
        reasoning_closed=closed,
    )
    answer_alone = None
    if answer is not None and choice.mode == "auto" and defs and spec.forcible and not call_prefill:
        # the same answer grammar without the calls (``grammar_for`` with no tools)
        answer_alone = grammar_for(
            setup,
            [],
            choice,
            parallel,
            reasoning_open,
            "",
            answer_schema=answer,
            reasoning_closed=closed,
        )
    if gram is None and grammar is not None and choice.mode in ("none", "auto"):
        gram = ForeignGrammar(gbnf=grammar._grammar, root=getattr(grammar, "_root", "root"))
    return Request(
        setup=setup,
        prompt=prompt,
        tools=defs,
        choice=choice,
        grammar=gram,
        reasoning_open=reasoning_open,
        prefill=call_prefill,
        answer_schema=answer,
        call_ids=client_call_ids(messages),
        stop=end_of_turn_markers(setup.template),
        prefix=prefix,
        parallel=parallel,
        answer_alone=answer_alone,
    )


def render_request(
    setup: ModelSetup,
    messages: Sequence[Mapping[str, Any]],
    tools: list[ToolDef],
    template_kwargs: Mapping[str, Any],
    *,
    verbatim: bool = True,
) -> str:
    """The prompt, with this model's earlier replies in its own words where remembered
    (``history.ReplyMemory``); a template that refuses that form gets the messages as sent."""
    restored = setup.replies.restore(messages) if verbatim else None
    if restored is not None:
        try:
            return render_prompt(
                setup.template, setup.spec, restored, tools=tools, **template_kwargs
            )
        except TemplateError:
            pass
    return render_prompt(setup.template, setup.spec, messages, tools=tools, **template_kwargs)


def grammar_for(
    setup: ModelSetup,
    tools: list[ToolDef],
    choice: ToolChoice,
    parallel: bool,
    reasoning_open: bool,
    prefill: str,
    *,
    answer_schema: dict[str, Any] | None = None,
    layout: ArgumentLayout | None = DEFAULT_ARGUMENT_LAYOUT,
    reasoning_closed: bool = False,
) -> GrammarLike | None:
    """The request's grammar, built once per distinct request shape and cached on ``setup``;
    ``None`` when nothing constrains the reply.

    Without ``answer_schema`` it is the tool-call grammar (lazy under ``auto``). With it
    (``response_format``, see ``grammar.answer``) the reply is constrained from the first token
    to the schema's JSON, or to a call, unless a call is forced. ``reasoning_closed``: the prompt
    wrote an empty reasoning block (thinking off), so the answer may not open another one.
    """
    calls = choice.mode != "none" and bool(tools)
    answering = answer_schema is not None and (
        not calls or (choice.mode == "auto" and setup.spec.forcible and not prefill)
    )
    if not calls and not answering:
        return None
    layout = layout_for(layout, forced=choice.forced)
    spec = setup.spec
    # Guarding triggers against reasoning turns them into regexes that llama.cpp re-matches
    # over the whole output at every token; skip it when the template never reasons (Qwen2.5
    # under the hermes spec, which also serves Qwen3) and the prompt did not open a block.
    guard = reasoning_open or setup.template.capabilities.reasoning
    if answering and reasoning_closed:
        guard = False  # thinking is off: the answer starts at the first token
    if spec.reasoning is not None and not guard:
        spec = spec.model_copy(update={"reasoning": None})
    # the cache lives on the setup, whose spec is fixed: the key need not name the spec
    key = (
        tools_key(tools),
        choice.mode,
        choice.name,
        choice.allowed,
        parallel,
        reasoning_open,
        prefill,
        guard,
        json.dumps(answer_schema, sort_keys=True) if answering else None,
        layout,
    )
    if key in setup.grammars:
        return setup.grammars[key]
    if answering:
        from ..grammar.answer import build_answer_grammar

        setup.grammars[key] = build_answer_grammar(
            spec,
            answer_schema,
            tools=choice.callable_tools(tools) if calls else None,
            parallel_tool_calls=parallel,
            reasoning_open=reasoning_open,
            argument_layout=layout,
        )
    else:
        from ..grammar import build_grammar

        setup.grammars[key] = build_grammar(
            spec,
            tools,
            tool_choice=choice,
            parallel_tool_calls=parallel,
            reasoning_open=reasoning_open,
            prefill=prefill,
            argument_layout=layout,
        )
    return setup.grammars[key]
