"""``ToolChatHandler``: llama-cpp-python's chat-handler protocol, OpenAI shapes in and out.

A thin adapter: the shared ``frontend.pipeline.FrontEnd`` does everything above the engine
(template and dialect resolved once per ``Llama``, request preparation, the completion tail); this
class says where the model comes from (a ``Llama``) and what decodes (a ``LlamaCppEngine`` per
``Llama``, with this handler's prompt cache, checkpoints and fast-forward as its options).

Template resolution, in order: the handler's ``chat_template=``, the GGUF's own template, a
fallback shipped for the GGUF's architecture (with a warning naming it), else
``MissingTemplateError`` saying what to pass.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .dialect.spec import DialectSpec
from .dialect.vocabulary import Vocabulary
from .engine.base import Engine, GenerationResult
from .engine.in_process.checkpoints import CheckpointOption, CheckpointStores, PrefixCheckpoints
from .engine.in_process.llama_cpp_engine import LlamaCppEngine
from .engine.in_process.prompt_cache import PromptCacheOption, PromptCaches
from .errors import ToolSpecError
from .frontend.options import ChatOptions, FrontEndOptions
from .frontend.pipeline import Completed, FrontEnd, model_name
from .frontend.request import ModelSetup, Request
from .gguf import ModelInfo

if TYPE_CHECKING:
    from llama_cpp.llama_types import (
        CreateChatCompletionResponse,
        CreateChatCompletionStreamResponse,
    )
    from typing_extensions import Unpack  # typing's own from Python 3.11

    from .frontend.options import FrontEndKeywords, RequestOptions

__all__ = [
    "ModelSetup",
    "ToolChatHandler",
    "create_chat_completion",
    "handler_of",
    "register",
]


class ToolChatHandler:
    """A llama-cpp-python chat handler that speaks each model's own tool-call dialect.

    ``dialect``: a ``DialectSpec``, a builtin name, or ``None`` to detect it from the template.
    ``chat_template``: a Jinja source that overrides the model's. ``template_kwargs`` go to every
    render (a request's ``chat_template_kwargs`` / ``enable_thinking`` ... add to them).
    ``parallel_tool_calls``: the default for a request that does not say; a request's own
    ``parallel_tool_calls`` wins (through ``tooldialect.create_chat_completion`` or
    :meth:`complete`: llama-cpp-python's ``Llama.create_chat_completion`` has no such keyword).
    ``False`` makes the call grammar allow exactly one call; a named ``tool_choice`` always
    allows one, and a spec with ``parallel_calls=False`` never more. Only decoding is
    constrained: the prompt and the parser are the same either way.
    ``fallback``: use a shipped template for GGUFs that carry none (see ``fallback_templates``).
    ``verbatim_history``: render the assistant turns this model wrote as the raw text it wrote
    them (remembered per model, the latest 64 replies, matched by the content and calls the
    client got back, not by position), instead of the template's own rendering of the
    ``tool_calls`` the client sends back. The prompt then matches the tokens the KV cache holds
    (a tolerated layout or the model's own JSON spacing re-rendered canonically would change
    them, and the whole reply would be decoded again), and the model sees what it said. A
    template that refuses that form gets the messages as sent. ``False`` renders history as
    sent.
    ``render_budget`` bounds every render of the template, detection's included (see
    :class:`~tooldialect.RenderBudget`; ``None`` keeps the defaults).
    ``prompt_cache``: restore the longest cached prompt prefix across conversations, as
    ``create_completion`` does with ``Llama.cache``: ``None`` uses ``Llama.cache`` when one is set,
    ``True`` / a byte capacity gives each model its own ``LlamaRAMCache``, a cache object is used
    as is, ``False`` turns it off (see docs/prompt-cache.md for the memory cost).
    ``prefix_checkpoints``: keep llama.cpp's state at the end of the system prompt and tools, so
    a changed history, a step without tools or a later conversation with the same tools loads
    it instead of decoding the tool prefix again: ``True`` keeps up to 1 GiB of such states per
    model (least recently used dropped first), an ``int`` that many bytes, ``False`` none. One
    checkpoint is the prefix's KV cache: 12.3 KB a token on Qwen2.5-0.5B (docs/prompt-cache.md).
    ``fast_forward``: decode the text a call's grammar forces in one batch instead of sampling it
    token by token (docs/fast-forward.md): a forced call decodes 1.26-1.45x faster than plain
    decoding of as many tokens. ``False`` samples every token; it is off by itself for requests
    with ``logprobs`` or a ``logits_processor``. Batched logits can change greedy output at near
    ties (BFCL: 94 % of Qwen2.5-0.5B answers identical, every difference explained).
    ``argument_layout``: whitespace a constrained call may write inside its arguments.
    ``"canonical"`` allows exactly what ``render_call`` writes (``{"k": v, "k2": v2}``): fewest
    tokens, separators forced; ``"natural"`` also a pretty-printer's line breaks and indents,
    as models write unconstrained; ``"free"`` any bounded whitespace. The default (``None``)
    is natural under ``auto``, where the model chose to call and its own layout keeps its
    answers (BFCL: parse-only's verdict on every case, docs/benchmarks.md), and canonical for
    a forced call (docs/fast-forward.md).
    ``invalid_arguments``: what a parsed call whose arguments fail its tool's full JSON Schema
    does (docs/parsing.md): ``"report"`` keeps it in ``tool_calls``, lists it in the message's
    ``invalid_tool_calls`` (the last chunk's delta when streaming) and logs a warning;
    ``"raise"`` raises ``InvalidToolCallError``.
    ``steer_calls``: steer a reply's calls while they are decoded (``frontend.steering``): a
    call begun in a format the template never writes is written in the template's own, and a
    call whose result the conversation already holds, or a repeat within the reply, is taken
    back so the model makes its next choice (usually the answer). ``False``: the model's text
    as decoded.

    ``prompt_cache``, ``prefix_checkpoints`` and ``fast_forward`` are the options of the
    ``LlamaCppEngine`` it makes for each ``Llama``; the others are its front end's
    (``frontend.options.FrontEndOptions``, where their defaults are written), shared with
    ``ServerClient``; ``setup(llama, engine=...)`` gives a model an
    engine of your own instead (``LlamaCppEngine(llama, drafts=None)``, a test double).
    """

    def __init__(
        self,
        *,
        prompt_cache: PromptCacheOption = None,
        prefix_checkpoints: CheckpointOption = True,
        fast_forward: bool = True,
        **options: Unpack[FrontEndKeywords],
    ) -> None:
        self.frontend = FrontEnd(
            adapter="ToolChatHandler",
            options=FrontEndOptions.of(options, adapter="ToolChatHandler"),
        )
        self._prompt_caches = PromptCaches(prompt_cache)
        self._checkpoints = CheckpointStores(prefix_checkpoints)
        self.fast_forward = fast_forward
        self._setups: weakref.WeakKeyDictionary[Any, ModelSetup] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._latest = threading.local()

    @property
    def dialect(self) -> DialectSpec | None:
        """The dialect given (``None``: detected per model)."""
        return self.frontend.dialect

    @property
    def last_result(self) -> GenerationResult | None:
        """The engine's account of the latest request this thread made (complete once it has
        been consumed): for llama-cpp-python's ``create_chat_completion``, which returns only
        the response. :meth:`complete` returns it with the response."""
        result: GenerationResult | None = getattr(self._latest, "result", None)
        return result

    def __repr__(self) -> str:
        name = self.dialect.id if self.dialect else "auto"
        return f"ToolChatHandler(dialect={name!r})"

    # ---- per model ---------------------------------------------------------------------------

    def setup(self, llama: Any, *, engine: Engine | None = None) -> ModelSetup:
        """Template, dialect and engine for ``llama``, resolved once. ``engine`` replaces the
        ``LlamaCppEngine`` with this handler's options on first resolution (an engine of your
        own, or a test double)."""
        with self._lock:
            cached = self._setups.get(llama)
            if cached is not None:
                return cached
            made = self.frontend.resolve(
                ModelInfo.from_llama(llama),
                engine if engine is not None else self._engine(llama),
                vocabulary=Vocabulary.of_llama(llama),
            )
            self._setups[llama] = made
            return made

    def _engine(self, llama: Any) -> LlamaCppEngine:
        option = self._prompt_caches.option
        return LlamaCppEngine(
            llama,
            fast_forward=self.fast_forward,
            # None: the engine reads Llama.cache at each request, as create_completion does
            prompt_cache=None if option is None else self._prompt_caches.for_llama(llama) or False,
            checkpoints=self._checkpoints.for_llama(llama),
        )

    # ---- the protocol ------------------------------------------------------------------------

    def __call__(
        self, *, llama: Any, messages: Sequence[Mapping[str, Any]], **request: Any
    ) -> CreateChatCompletionResponse | Iterator[CreateChatCompletionStreamResponse]:
        """One chat completion (a response dict, or an iterator of chunks when ``stream``).

        ``request``: the ``RequestOptions`` keys (``frontend.options``), every keyword
        ``Llama.create_chat_completion`` passes among them; an unknown key is a
        ``ToolSpecError`` naming the nearest valid one. Typed ``Any`` (not
        ``Unpack[RequestOptions]``) so that llama-cpp-python's handler protocol, which ends in
        ``**kwargs``, still type-checks ``Llama(chat_handler=...)``. Returns llama-cpp-python's
        response types; what is returned is a superset of them (``reasoning_content``, usage
        details), which their closed TypedDicts cannot state, hence the cast.
        """
        response = self.complete(llama=llama, messages=messages, **request).response
        if isinstance(response, dict):
            return cast("CreateChatCompletionResponse", response)
        return cast("Iterator[CreateChatCompletionStreamResponse]", response)

    def complete(
        self, *, llama: Any, messages: Sequence[Mapping[str, Any]], **request: Any
    ) -> Completed:
        """What ``__call__`` does, returning the response with the engine's account of it
        (``Completed.result``: usage, the stop string, the engine's ``stats``), so that
        concurrent requests each read their own."""
        options = ChatOptions.build(
            request, where="ToolChatHandler", penalty_last_n=int(llama.last_n_tokens_size)
        )
        done = self.frontend.complete(
            self.setup(llama),
            messages=messages,
            options=options,
            model=options.model or model_name(getattr(llama, "model_path", None)),
        )
        self._latest.result = done.result
        return done

    def prepare(
        self, *, llama: Any, messages: Sequence[Mapping[str, Any]], **request: Any
    ) -> Request:
        """Everything but generation: tools, prompt, grammar (``request.prepare_request`` with
        this handler's defaults). ``request``: the ``RequestOptions`` keys, checked as
        :meth:`complete` checks them. Raises the library's errors."""
        return self.frontend.prepare_from(
            self.setup(llama), messages, request, where="ToolChatHandler.prepare"
        )

    def checkpoints(self, llama: Any) -> PrefixCheckpoints | None:
        """The tool-prefix checkpoints kept for ``llama`` (``None`` when they are off): their
        ``size`` in bytes, ``hits`` and ``saves``."""
        return self._checkpoints.for_llama(llama)


def create_chat_completion(
    llama: Any,
    *,
    messages: Sequence[Mapping[str, Any]],
    handler: ToolChatHandler | None = None,
    **request: Unpack[RequestOptions],
) -> CreateChatCompletionResponse | Iterator[CreateChatCompletionStreamResponse]:
    """``llama.create_chat_completion`` plus per-request extras.

    llama-cpp-python's ``create_chat_completion`` has a fixed signature and drops unknown
    keywords, so per-request ``enable_thinking``, ``thinking``, ``reasoning_effort``,
    ``chat_template_kwargs={...}`` and ``parallel_tool_calls`` cannot pass through it. This calls
    the handler directly with them. ``handler`` defaults to the one ``llama`` uses
    (``handler_of``): its ``chat_handler``, or the handler ``register()`` made for its
    ``chat_format``.
    """
    chosen = handler if handler is not None else handler_of(llama)
    if chosen is None:
        own = getattr(llama, "chat_handler", None)
        raise ToolSpecError(
            f"llama uses neither a ToolChatHandler (chat_handler={own!r}) nor a "
            f"registered one (chat_format={getattr(llama, 'chat_format', None)!r}); load the "
            "model with Llama(..., chat_handler=tooldialect.ToolChatHandler()), or "
            "tooldialect.register() and Llama(..., chat_format='tooldialect'), or pass handler="
        )
    return chosen(llama=llama, messages=messages, **request)


_REGISTERED: dict[str, ToolChatHandler] = {}


def handler_of(llama: Any) -> ToolChatHandler | None:
    """The ``ToolChatHandler`` ``llama`` completes chats with: ``Llama(chat_handler=...)``, or
    ``Llama(chat_format=name)`` after ``register(name)``; ``None`` when it uses neither."""
    own = getattr(llama, "chat_handler", None)
    if isinstance(own, ToolChatHandler):
        return own
    if own is not None:  # llama-cpp-python's create_chat_completion prefers it
        return None
    return _REGISTERED.get(getattr(llama, "chat_format", None) or "")


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
