"""``ToolChatHandler``: llama-cpp-python's chat-handler protocol, OpenAI shapes in and out.

Glue only. Per ``Llama`` the model's template and dialect are resolved once (and cached); per
request the pipeline is: normalise tools -> render the prompt -> build (cached) grammar -> one
engine pass -> parse (batch or streaming) -> OpenAI response dicts.

Template resolution, in order: the handler's ``chat_template=``, the GGUF's own template, a
fallback shipped for the GGUF's architecture (with a warning naming it), else
``MissingTemplateError`` saying what to pass.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .dialect.builtins import get_builtin
from .dialect.detect import detect_dialect
from .dialect.spec import DialectSpec
from .engine.generate import Engine, GenerationResult, engine_for
from .engine.sampling import GrammarLike, SamplingParams
from .errors import MissingTemplateError, TemplateError, ToolSpecError, UnsupportedToolChoiceError
from .fallback_templates import FALLBACK_TEMPLATES, fallback_template
from .gguf import ModelInfo
from .history import ReplyMemory
from .messages import validate_messages
from .prompt import prompt_prefill, render_prompt
from .template import ChatTemplate
from .template_budget import RenderBudget, using_budget
from .tools import ToolChoice, ToolDef, normalize_tool_choice, normalize_tools

if TYPE_CHECKING:
    from .parse import ParsedOutput

__all__ = ["ModelSetup", "ToolChatHandler", "create_chat_completion", "register"]

_TEMPLATE_KWARG_NAMES = ("enable_thinking", "thinking", "reasoning_effort")
"""Request keywords that are template variables (Qwen3, DeepSeek V3.1, gpt-oss)."""


@dataclass
class ModelSetup:
    """What a handler resolved for one loaded model (cached per ``Llama``)."""

    info: ModelInfo
    template: ChatTemplate
    template_origin: str
    """``user``, ``gguf`` or ``fallback:<file>``."""
    spec: DialectSpec
    engine: Engine
    grammars: dict[tuple[Any, ...], GrammarLike | None] = field(default_factory=dict)
    replies: ReplyMemory = field(default_factory=ReplyMemory)
    """Raw text of this model's recent replies, re-rendered verbatim (see ``history``)."""


@dataclass(frozen=True)
class _ForeignGrammar:
    """A caller's ``LlamaGrammar`` passed through (non-lazy)."""

    gbnf: str
    root: str = "root"
    lazy: bool = False
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = ()


class ToolChatHandler:
    """A llama-cpp-python chat handler that speaks each model's own tool-call dialect.

    ``dialect``: a ``DialectSpec``, a builtin name, or ``None`` to detect it from the template.
    ``chat_template``: a Jinja source that overrides the model's. ``template_kwargs`` go to every
    render (a request's ``chat_template_kwargs`` / ``enable_thinking`` ... add to them).
    ``fallback``: use a shipped template for GGUFs that carry none (see ``fallback_templates``).
    ``render_budget`` bounds every render of the template, detection's included (see
    :class:`~tooldialect.RenderBudget`; ``None`` keeps the defaults).
    """

    def __init__(
        self,
        *,
        dialect: DialectSpec | str | None = None,
        chat_template: str | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
        parallel_tool_calls: bool = True,
        fallback: bool = True,
        verbatim_history: bool = True,
        render_budget: RenderBudget | None = None,
    ) -> None:
        self.dialect = get_builtin(dialect) if isinstance(dialect, str) else dialect
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.parallel_tool_calls = parallel_tool_calls
        self.fallback = fallback
        self.verbatim_history = verbatim_history
        self.render_budget = render_budget
        self._setups: weakref.WeakKeyDictionary[Any, ModelSetup] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self.last_result: GenerationResult | None = None
        """The engine's account of the latest request (complete once it has been consumed)."""

    def __repr__(self) -> str:
        name = self.dialect.id if self.dialect else "auto"
        return f"ToolChatHandler(dialect={name!r})"

    # ---- per model ---------------------------------------------------------------------------

    def setup(self, llama: Any) -> ModelSetup:
        """Template, dialect and engine for ``llama``, resolved once."""
        with self._lock:
            cached = self._setups.get(llama)
            if cached is not None:
                return cached
            info = ModelInfo.from_llama(llama)
            source, origin = self._template_source(info)
            template = ChatTemplate(
                source,
                bos_token=info.bos_token,
                eos_token=info.eos_token,
                budget=self.render_budget,
            )
            with using_budget(self.render_budget):
                spec = self.dialect or detect_dialect(
                    source, bos_token=info.bos_token, eos_token=info.eos_token
                )
            made = ModelSetup(
                info=info,
                template=template,
                template_origin=origin,
                spec=spec,
                engine=engine_for(llama),
            )
            self._setups[llama] = made
            return made

    def _template_source(self, info: ModelInfo) -> tuple[str, str]:
        if self.chat_template is not None:
            return self.chat_template, "user"
        if info.chat_template:
            return info.chat_template, "gguf"
        found = fallback_template(info.architecture) if self.fallback else None
        if found is not None:
            name, source = found
            warnings.warn(
                f"{info.path or info.name!r} carries no chat template; using tooldialect's "
                f"fallback {name!r} for architecture {info.architecture!r}. Pass "
                "ToolChatHandler(chat_template=...) to choose the template yourself.",
                stacklevel=4,
            )
            return source, f"fallback:{name}"
        shipped = ", ".join(sorted(FALLBACK_TEMPLATES))
        raise MissingTemplateError(
            f"model {info.path or info.name!r} (architecture {info.architecture!r}) carries no "
            f"chat template and tooldialect ships no fallback for it (it has: {shipped}); pass "
            "one: ToolChatHandler(chat_template=open('template.jinja').read())"
        )

    def _grammar(
        self,
        setup: ModelSetup,
        tools: list[ToolDef],
        choice: ToolChoice,
        parallel: bool,
        reasoning_open: bool,
        prefill: str,
    ) -> GrammarLike | None:
        if choice.mode == "none" or not tools:
            return None
        spec = setup.spec
        # Guarding triggers against reasoning turns them into regexes that llama.cpp re-matches
        # over the whole output at every token; skip it when the template never reasons (Qwen2.5
        # under the hermes spec, which also serves Qwen3) and the prompt did not open a block.
        guard = reasoning_open or setup.template.capabilities.reasoning
        if spec.reasoning is not None and not guard:
            spec = spec.model_copy(update={"reasoning": None})
        # the cache lives on the setup, whose spec is fixed: the key need not name the spec
        key = (
            json.dumps([t.model_dump() for t in tools], sort_keys=True),
            choice.mode,
            choice.name,
            parallel,
            reasoning_open,
            prefill,
            guard,
        )
        if key not in setup.grammars:
            from .grammar import build_grammar

            setup.grammars[key] = build_grammar(
                spec,
                tools,
                tool_choice=choice,
                parallel_tool_calls=parallel,
                reasoning_open=reasoning_open,
                prefill=prefill,
            )
        return setup.grammars[key]

    # ---- the protocol ------------------------------------------------------------------------

    def __call__(
        self,
        *,
        llama: Any,
        messages: Sequence[Mapping[str, Any]],
        functions: Sequence[Mapping[str, Any]] | None = None,
        function_call: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        stream: bool = False,
        stop: str | list[str] | None = None,
        seed: int | None = None,
        response_format: Any = None,
        max_tokens: int | None = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: str | None = None,
        logits_processor: Any = None,
        grammar: Any = None,
        logit_bias: Mapping[Any, float] | None = None,
        logprobs: bool | None = None,
        top_logprobs: int | None = None,
        **kwargs: Any,
    ) -> dict[str, Any] | Iterator[dict[str, Any]]:
        """One chat completion (a response dict, or an iterator of chunks when ``stream``)."""
        request = self.prepare(
            llama=llama,
            messages=messages,
            functions=functions,
            function_call=function_call,
            tools=tools,
            tool_choice=tool_choice,
            grammar=grammar,
            **kwargs,
        )
        sampling = SamplingParams(
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            min_p=min_p,
            typical_p=typical_p,
            repeat_penalty=repeat_penalty,
            presence_penalty=presence_penalty,
            frequency_penalty=frequency_penalty,
            penalty_last_n=int(llama.last_n_tokens_size),
            mirostat_mode=mirostat_mode,
            mirostat_tau=mirostat_tau,
            mirostat_eta=mirostat_eta,
            seed=seed,
            logit_bias={int(k): float(v) for k, v in (logit_bias or {}).items()},
        )
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        stops += request.setup.spec.stop
        gen = request.setup.engine.generate(
            request.prompt,
            grammar=request.grammar,
            sampling=sampling,
            max_tokens=max_tokens,
            stop=stops,
        )
        self.last_result = gen.result
        name = model or str(getattr(llama, "model_path", "") or "")
        if stream:
            return _stream(request, gen, name)
        text = gen.text()
        response = _response(request, text, gen.result, name)
        request.setup.replies.remember(response["choices"][0]["message"], text)
        return response

    def _render(
        self,
        setup: ModelSetup,
        messages: Sequence[Mapping[str, Any]],
        tools: list[ToolDef],
        template_kwargs: Mapping[str, Any],
    ) -> str:
        """The prompt, with this model's earlier replies in its own words where remembered
        (``history.ReplyMemory``); a template that refuses that form gets the messages as sent."""
        restored = setup.replies.restore(messages) if self.verbatim_history else None
        if restored is not None:
            try:
                return render_prompt(
                    setup.template, setup.spec, restored, tools=tools, **template_kwargs
                )
            except TemplateError:
                pass
        return render_prompt(setup.template, setup.spec, messages, tools=tools, **template_kwargs)

    def prepare(
        self,
        *,
        llama: Any,
        messages: Sequence[Mapping[str, Any]],
        functions: Sequence[Mapping[str, Any]] | None = None,
        function_call: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        grammar: Any = None,
        **kwargs: Any,
    ) -> Request:
        """Everything but generation: tools, prompt, grammar. Raises the library's errors."""
        validate_messages(messages)
        setup = self.setup(llama)
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
        spec = setup.spec
        if choice.forced and not spec.forcible:
            raise UnsupportedToolChoiceError(
                f"dialect {spec.id!r} cannot force tool_choice={tool_choice!r}: "
                f"{spec.unforcible_reason or 'no grammar can enforce it'}; use tool_choice='auto'"
            )
        parallel = bool(kwargs.pop("parallel_tool_calls", self.parallel_tool_calls))
        template_kwargs = dict(self.template_kwargs)
        template_kwargs.update(kwargs.pop("chat_template_kwargs", None) or {})
        for key in _TEMPLATE_KWARG_NAMES:
            if key in kwargs:
                template_kwargs[key] = kwargs.pop(key)
        shown = defs if choice.mode != "none" else []
        prompt = self._render(setup, messages, shown, template_kwargs)
        prefill = prompt_prefill(prompt, spec)
        reasoning_open = spec.reasoning is not None and prefill == spec.reasoning.open
        call_prefill = "" if reasoning_open else prefill
        gram = self._grammar(setup, defs, choice, parallel, reasoning_open, call_prefill)
        if gram is None and grammar is not None and choice.mode in ("none", "auto"):
            gram = _ForeignGrammar(gbnf=grammar._grammar, root=getattr(grammar, "_root", "root"))
        return Request(
            setup=setup,
            prompt=prompt,
            tools=defs,
            choice=choice,
            grammar=gram,
            reasoning_open=reasoning_open,
            prefill=call_prefill,
        )


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


def _parse(request: Request, text: str) -> ParsedOutput:
    from .parse import ParsedOutput, parse_output

    parsed = parse_output(
        text,
        request.setup.spec,
        tools=request.tools,
        reasoning_open=request.reasoning_open,
        prefill=request.prefill,
    )
    if request.choice.mode == "none" and parsed.tool_calls:
        # tool_choice="none": the model may not call, so a call it wrote anyway stays text
        return ParsedOutput(content=text)
    return parsed


def _finish(calls: bool, result: GenerationResult) -> str:
    if calls:
        return "tool_calls"
    return "length" if result.finish_reason == "length" else "stop"


def _usage(result: GenerationResult) -> dict[str, Any]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
        # OpenAI's field for prompt tokens served from cache: here, from the KV cache
        "prompt_tokens_details": {
            "cached_tokens": result.prompt_tokens - result.last_prompt_eval_tokens
        },
    }


def _message(parsed: ParsedOutput) -> dict[str, Any]:
    """The OpenAI assistant message for a parsed reply."""
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content or None}
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json},
        }
        for c in parsed.tool_calls
    ]
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    if parsed.reasoning_content:
        message["reasoning_content"] = parsed.reasoning_content
    return message


def _response(request: Request, text: str, result: GenerationResult, model: str) -> dict[str, Any]:
    message = _message(_parse(request, text))
    calls = message.get("tool_calls")
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish(bool(calls), result),
            }
        ],
        "usage": _usage(result),
    }


def _stream(request: Request, gen: Any, model: str) -> Iterator[dict[str, Any]]:
    from .parse import StreamParser

    parser = StreamParser(
        request.setup.spec,
        tools=request.tools if request.choice.mode != "none" else [],
        reasoning_open=request.reasoning_open,
        prefill=request.prefill,
    )
    cid = "chatcmpl-" + uuid.uuid4().hex
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant"})
    saw_call = False
    if request.choice.mode == "none":
        # no call may come back: the text is content as written
        for piece in gen:
            yield chunk({"content": piece})
        last = chunk({}, _finish(False, gen.result))
        last["usage"] = _usage(gen.result)
        yield last
        return
    for piece in gen:
        for delta in parser.feed(piece):
            saw_call = saw_call or "tool_calls" in delta
            yield chunk(delta)
    for delta in parser.close():
        saw_call = saw_call or "tool_calls" in delta
        yield chunk(delta)
    request.setup.replies.remember(_message(parser.result), gen.result.text)
    last = chunk({}, _finish(saw_call, gen.result))
    last["usage"] = _usage(gen.result)
    yield last


def create_chat_completion(
    llama: Any,
    *,
    messages: Sequence[Mapping[str, Any]],
    handler: ToolChatHandler | None = None,
    **request: Any,
) -> dict[str, Any] | Iterator[dict[str, Any]]:
    """``llama.create_chat_completion`` plus per-request extras.

    llama-cpp-python's ``create_chat_completion`` has a fixed signature and drops unknown
    keywords, so per-request ``enable_thinking``, ``thinking``, ``reasoning_effort``,
    ``chat_template_kwargs={...}`` and ``parallel_tool_calls`` cannot pass through it. This calls
    the handler directly with them. ``handler`` defaults to ``llama.chat_handler``.
    """
    chosen = handler if handler is not None else getattr(llama, "chat_handler", None)
    if not isinstance(chosen, ToolChatHandler):
        raise ToolSpecError(
            f"llama.chat_handler is {chosen!r}, not a ToolChatHandler; load the model with "
            "Llama(..., chat_handler=tooldialect.ToolChatHandler()) or pass handler="
        )
    return chosen(llama=llama, messages=messages, **request)


_REGISTERED: dict[str, ToolChatHandler] = {}


def register(name: str = "tooldialect", **handler_options: Any) -> ToolChatHandler:
    """Register a ``ToolChatHandler`` with llama-cpp-python so ``Llama(chat_format=name)`` uses it.

    Idempotent: registering the same name again returns the handler already registered (options
    given the second time replace it).
    """
    from llama_cpp import llama_chat_format

    existing = _REGISTERED.get(name)
    if existing is not None and not handler_options:
        return existing
    handler = ToolChatHandler(**handler_options)
    # typed as Any: llama_cpp's Protocol pins TypedDict message types we accept more loosely
    registry_cls: Any = llama_chat_format.LlamaChatCompletionHandlerRegistry
    registry = registry_cls()
    registry.register_chat_completion_handler(name, handler, overwrite=True)
    _REGISTERED[name] = handler
    return handler
