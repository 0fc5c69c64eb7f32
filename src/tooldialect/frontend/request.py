"""Request preparation, shared by every engine: the prompt rendered with the model's template,
the grammar built (and cached) from the dialect spec, for one typed ``ChatRequest``.

Nothing here decodes: a ``Request`` is what an engine needs to generate and what the response
shaping (``response``) needs to parse. ``ToolChatHandler`` drives it for llama-cpp-python; another
engine (an HTTP client for llama-server) can drive the same functions with its own ``ModelSetup``.
Nothing here reads a raw request either: the ``ChatRequest`` holds every decided fact (its
``ToolChoice`` answers what a ``tool_choice`` means).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dialect.spec import DialectSpec
from ..errors import TemplateError
from ..grammar.codec import DEFAULT_ARGUMENT_LAYOUT, layout_for
from ..prompt.compat import client_call_ids
from ..prompt.history import ReplyMemory
from ..prompt.turns import end_of_turn_markers
from ..tool_defs import ToolChoice, ToolDef, tools_key
from .chat_request import ChatRequest, ForeignGrammar
from .grammar_cache import GrammarCache
from .prefix import PrefixCache, tool_prefix
from .render import prompt_closes_reasoning, prompt_prefill, render_prompt

if TYPE_CHECKING:
    from ..dialect.vocabulary import Vocabulary
    from ..engine.base import Engine, GrammarLike
    from ..gguf import ModelInfo
    from ..grammar.codec import ArgumentLayout
    from ..prompt.template import ChatTemplate

__all__ = ["ForeignGrammar", "ModelSetup", "Request", "prepare_request"]


@dataclass
class ModelSetup:
    """What a handler resolved for one loaded model (cached per ``Llama``)."""

    info: ModelInfo
    """The model's facts (GGUF header or the server's ``/props``)."""
    template: ChatTemplate
    """The chat template every prompt is rendered with."""
    template_origin: str
    """``user``, ``gguf`` or ``fallback:<file>``."""
    spec: DialectSpec
    """The model's tool-call dialect."""
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


@dataclass
class Request:
    """One prepared request (exposed for tests and benchmarks): the ``ChatRequest`` and what
    preparing it made."""

    setup: ModelSetup
    """The model it was prepared for."""
    chat: ChatRequest
    """The request, every fact decided (tools, ``ToolChoice``, answer schema, parallel calls)."""
    prompt: str
    """The rendered prompt."""
    grammar: GrammarLike | None
    """What constrains the reply (``None``: nothing)."""
    reasoning_open: bool
    """The prompt ended inside an open reasoning block."""
    prefill: str = ""
    """A call opener the prompt already wrote (see ``prompt_prefill``)."""
    call_ids: dict[str, str] = field(default_factory=dict)
    """Dialect id -> client id for the ids the prompt had to map (``template_compat``); a call
    id in the reply that is one of them goes back to the client's."""
    stop: tuple[str, ...] = ()
    """Stop strings every engine adds: the template's end-of-turn markers (``prompt.turns``)."""
    prefix: str = ""
    """The head of ``prompt`` the system turns and tools make (``prefix.tool_prefix``): where
    the in-process engine keeps a state checkpoint."""
    answer_alone: GrammarLike | None = None
    """Where ``grammar`` allows a call or the ``response_format`` answer from the first token
    (tools under ``auto``): the answer's grammar alone, for a reply the model does not start
    as a call (``call_or_answer``)."""

    @property
    def tools(self) -> tuple[ToolDef, ...]:
        """The request's tools (``chat.tools``)."""
        return self.chat.tools

    @property
    def choice(self) -> ToolChoice:
        """The request's ``ToolChoice`` (``chat.choice``)."""
        return self.chat.choice

    @property
    def answer_schema(self) -> dict[str, Any] | None:
        """The schema ``response_format`` asked an answer to follow (``chat.answer_schema``)."""
        return self.chat.answer_schema

    @property
    def parallel(self) -> bool:
        """Whether several calls may be written (``chat.parallel``)."""
        return self.chat.parallel


def prepare_request(
    setup: ModelSetup,
    request: ChatRequest,
    *,
    argument_layout: ArgumentLayout | None = DEFAULT_ARGUMENT_LAYOUT,
    verbatim_history: bool = True,
) -> Request:
    """Everything but generation for ``request``: the prompt, the grammar. Raises the
    library's errors (a template that refuses the messages, a schema no grammar expresses, a
    call the dialect cannot force). ``argument_layout`` and ``verbatim_history`` are the
    handler's options of those names."""
    spec = setup.spec
    messages, shown = request.messages, list(request.shown_tools)
    variables = request.template_variables
    prompt = render_request(setup, messages, shown, variables, verbatim=verbatim_history)
    prefix = tool_prefix(
        setup.prefixes,
        lambda probe: render_prompt(setup.template, spec, probe, tools=shown, **variables),
        messages=messages,
        tools=shown,
        template_kwargs=variables,
        prompt=prompt,
    )
    prefill = prompt_prefill(prompt, spec)
    reasoning_open = spec.reasoning is not None and prefill in spec.reasoning.opens()
    call_prefill = "" if reasoning_open else prefill
    closed = not reasoning_open and prompt_closes_reasoning(prompt, spec)
    tools, choice, answer = list(request.tools), request.choice, request.answer_schema
    gram = grammar_for(
        setup,
        tools,
        choice,
        request.parallel,
        reasoning_open,
        call_prefill,
        answer_schema=answer,
        layout=argument_layout,
        reasoning_closed=closed,
    )
    answer_alone = None
    if answer is not None and choice.optional and tools and spec.forcible and not call_prefill:
        # the same answer grammar without the calls (``grammar_for`` with no tools)
        answer_alone = grammar_for(
            setup,
            [],
            choice,
            request.parallel,
            reasoning_open,
            "",
            answer_schema=answer,
            reasoning_closed=closed,
        )
    if gram is None and not choice.forced:
        gram = request.grammar
    return Request(
        setup=setup,
        chat=request,
        prompt=prompt,
        grammar=gram,
        reasoning_open=reasoning_open,
        prefill=call_prefill,
        call_ids=client_call_ids(messages),
        stop=end_of_turn_markers(setup.template),
        prefix=prefix,
        answer_alone=answer_alone,
    )


def render_request(
    setup: ModelSetup,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolDef],
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
    tools: Sequence[ToolDef],
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
    calls = choice.reads_calls and bool(tools)
    answering = answer_schema is not None and (
        not calls or (choice.optional and setup.spec.forcible and not prefill)
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
        choice,
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
        from ..grammar.build import call_grammar

        setup.grammars[key] = call_grammar(
            spec,
            tools,
            choice,
            parallel_tool_calls=parallel,
            reasoning_open=reasoning_open,
            prefill=prefill,
            argument_layout=layout,
        )
    return setup.grammars[key]
