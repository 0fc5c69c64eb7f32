"""``ToolChatHandler``: llama-cpp-python's chat-handler protocol, OpenAI shapes in and out.

Glue only. Per ``Llama`` the model's template and dialect are resolved once (and cached); per
request the pipeline is: ``request`` (normalise tools, render the prompt, build the cached
grammar) -> one engine pass -> ``response`` (parse, batch or streaming, into OpenAI dicts).

Template resolution, in order: the handler's ``chat_template=``, the GGUF's own template, a
fallback shipped for the GGUF's architecture (with a warning naming it), else
``MissingTemplateError`` saying what to pass.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .dialect.builtins import get_builtin
from .dialect.detect import detect_dialect
from .dialect.spec import DialectSpec
from .dialect.vocabulary import Vocabulary
from .engine.in_process.generate import GenerationResult, engine_for
from .engine.in_process.prompt_cache import PromptCacheOption, PromptCaches
from .engine.in_process.sampling import SamplingParams
from .errors import GrammarError, MissingTemplateError, ToolSpecError
from .frontend.request import ModelSetup, Request, prepare_request
from .frontend.response import build_response, stream_chunks
from .gguf import ModelInfo
from .grammar.codec import DEFAULT_ARGUMENT_LAYOUT, ArgumentLayout
from .prompt.budget import RenderBudget, using_budget
from .prompt.fallbacks import FALLBACK_TEMPLATES, fallback_template
from .prompt.template import ChatTemplate

__all__ = ["ModelSetup", "ToolChatHandler", "create_chat_completion", "register"]


class ToolChatHandler:
    """A llama-cpp-python chat handler that speaks each model's own tool-call dialect.

    ``dialect``: a ``DialectSpec``, a builtin name, or ``None`` to detect it from the template.
    ``chat_template``: a Jinja source that overrides the model's. ``template_kwargs`` go to every
    render (a request's ``chat_template_kwargs`` / ``enable_thinking`` ... add to them).
    ``fallback``: use a shipped template for GGUFs that carry none (see ``fallback_templates``).
    ``render_budget`` bounds every render of the template, detection's included (see
    :class:`~tooldialect.RenderBudget`; ``None`` keeps the defaults).
    ``prompt_cache``: restore the longest cached prompt prefix across conversations, as
    ``create_completion`` does with ``Llama.cache``: ``None`` uses ``Llama.cache`` when one is set,
    ``True`` / a byte capacity gives each model its own ``LlamaRAMCache``, a cache object is used
    as is, ``False`` turns it off (see docs/prompt-cache.md for the memory cost).
    ``fast_forward``: decode the text a call's grammar forces in one batch instead of sampling it
    token by token (docs/fast-forward.md): a forced call decodes 1.26-1.45x faster than plain
    decoding of as many tokens. ``False`` samples every token; it is off by itself for requests
    with ``logprobs`` or a ``logits_processor``. Batched logits can change greedy output at near
    ties (BFCL: 94 % of Qwen2.5-0.5B answers identical, every difference explained).
    ``argument_layout``: whitespace a constrained call may write inside its arguments. The
    default ``"canonical"`` allows exactly what ``render_call`` writes (``{"k": v, "k2": v2}``):
    fewer tokens, same BFCL accuracy, separators forced; ``"free"`` lets the model indent
    (docs/fast-forward.md).
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
        prompt_cache: PromptCacheOption = None,
        fast_forward: bool = True,
        argument_layout: ArgumentLayout = DEFAULT_ARGUMENT_LAYOUT,
    ) -> None:
        if argument_layout not in ("free", "canonical"):
            raise GrammarError(
                f"argument_layout={argument_layout!r} is not a layout; pass 'canonical' or 'free'"
            )
        self.dialect = get_builtin(dialect) if isinstance(dialect, str) else dialect
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.parallel_tool_calls = parallel_tool_calls
        self.fallback = fallback
        self.verbatim_history = verbatim_history
        self.render_budget = render_budget
        self._prompt_caches = PromptCaches(prompt_cache)
        self.fast_forward = fast_forward
        self.argument_layout: ArgumentLayout = argument_layout
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
                    source,
                    bos_token=info.bos_token,
                    eos_token=info.eos_token,
                    vocabulary=Vocabulary.of_llama(llama),
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
            response_format=response_format,
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
            prompt_cache=_cache_argument(self._prompt_caches.for_llama(llama)),
            fast_forward=self.fast_forward,
            # OpenAI: top_logprobs needs logprobs=True; llama-cpp-python reads it the same way
            logprobs=(top_logprobs or 0) if logprobs else None,
            logits_processor=logits_processor,
        )
        self.last_result = gen.result
        name = model or str(getattr(llama, "model_path", "") or "")
        if stream:
            return stream_chunks(request, gen, name)
        text = gen.text()
        response = build_response(request, text, gen.result, name)
        request.setup.replies.remember(response["choices"][0]["message"], text)
        return response

    def prepare(
        self, *, llama: Any, messages: Sequence[Mapping[str, Any]], **request: Any
    ) -> Request:
        """Everything but generation: tools, prompt, grammar (``request.prepare_request`` with
        this handler's defaults). Raises the library's errors."""
        return prepare_request(
            self.setup(llama),
            messages=messages,
            default_parallel=self.parallel_tool_calls,
            default_template_kwargs=self.template_kwargs,
            verbatim_history=self.verbatim_history,
            argument_layout=self.argument_layout,
            **request,
        )


def _cache_argument(cache: Any) -> Any:
    """The engine reads ``None`` as "use ``Llama.cache``"; a resolved absence is ``False``."""
    return False if cache is None else cache


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
