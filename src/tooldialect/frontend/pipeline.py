"""``FrontEnd``: everything above the engine, once, for every engine.

It owns the options a caller gives ``ToolChatHandler`` or ``ServerClient`` (``FrontEndOptions``),
resolves a model's template (the caller's, the model's own, a shipped fallback, else
``MissingTemplateError``) and its dialect (detection bounded by the render budget), makes each
request's typed ``ChatRequest`` once (``chat_request``) and prepares it
(``request.prepare_request``), turns it into the engine-neutral ``GenerationRequest`` (prompt,
grammar, resolved triggers, sampling, stops) and shapes what the engine returns into OpenAI
dicts (``response``), batch or stream, feeding the reply memory on both paths. The two adapters
only say where the model and the engine come from.

``FrontEnd.complete`` returns the reply with the engine's account of it (``Completed``), so
that concurrent requests each read their own.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dialect.builtins import get_builtin
from ..dialect.spec import DialectSpec
from ..dialect.vocabulary import Vocabulary
from ..engine.base import (
    Engine,
    Generation,
    GenerationRequest,
    GenerationResult,
    GrammarLike,
    SamplingParams,
    Triggers,
)
from ..errors import GrammarError, MissingTemplateError, ToolSpecError
from ..gguf import ModelInfo
from ..grammar.build import word_pattern
from ..grammar.codec import LAYOUTS, ArgumentLayout
from ..prompt.budget import using_budget
from ..prompt.fallbacks import FALLBACK_TEMPLATES, fallback_template
from ..prompt.request_messages import canonical_messages
from ..prompt.template import ChatTemplate
from ..shapes import ChatCompletion, ChatCompletionChunk
from ..verify import detect_dialect
from .call_or_answer import choose_answer_or_call
from .chat_request import ChatRequest
from .options import ChatOptions, FrontEndOptions
from .request import ModelSetup, Request, prepare_request
from .response import build_response, stream_chunks
from .steering import REMINDER, steer, steering_for
from .validation import check_invalid_arguments

__all__ = [
    "Completed",
    "FrontEnd",
    "check_encodable",
    "model_name",
    "resolve_triggers",
    "spec_markers",
]

Completion = ChatCompletion | Iterator[ChatCompletionChunk]


@dataclass(frozen=True)
class Completed:
    """One chat completion and the engine's account of it."""

    response: Completion
    """A ``chat.completion`` dict, or an iterator of chunks when the request streams."""
    result: GenerationResult
    """What the engine did (usage, the stop string, its own ``stats``); complete once
    ``response`` has been consumed."""


def spec_markers(spec: DialectSpec, vocabulary: Vocabulary | None = None) -> list[str]:
    """Every envelope and reasoning marker of ``spec`` (stripped), and every special token of
    ``vocabulary`` a marker holds (``<|tool_call_start|>`` of the opener
    ``<|tool_call_start|>[``): what the parser must see in the output even where it is a
    special token (the server engine sends them as ``preserved_tokens``, which only name
    single tokens)."""
    texts: list[str] = []
    for fmt in spec.formats:
        texts += [fmt.section_open, fmt.section_close, fmt.call_open, fmt.call_close]
        texts.append(fmt.opener())
    if spec.reasoning is not None:
        texts += [spec.reasoning.open, spec.reasoning.close]
    markers = [t for t in dict.fromkeys(s.strip() for s in texts) if t]
    if vocabulary is None:
        return markers
    inside = [tok for tok in sorted(vocabulary.special) if any(tok in m for m in markers)]
    return list(dict.fromkeys([*markers, *inside]))


def model_name(path: str | None) -> str:
    """How a reply names a model loaded from ``path``: its file name (as llama-server does),
    never the server's full local path."""
    return os.path.basename(str(path or "")) or "model"


def check_encodable(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None
) -> None:
    """Refuse a message or tool holding a lone surrogate (``"\\udcff"``, which JSON can
    carry): no tokenizer takes it, and it would fail deep in the engine as a
    ``UnicodeEncodeError``."""
    for field, values in (("messages", messages), ("tools", tools or ())):
        for index, value in enumerate(values):
            if _has_surrogate(value):
                raise ToolSpecError(
                    f"{field}[{index}] holds a lone surrogate (text that is not valid Unicode, "
                    "such as '\\udcff'); send valid UTF-8 text",
                    param=field,
                )


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, Mapping):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_surrogate(v) for v in value)
    return False


def _markers(setup: ModelSetup) -> tuple[str, ...]:
    if setup.markers is not None:
        return setup.markers
    return tuple(spec_markers(setup.spec, setup.vocabulary))


def resolve_triggers(grammar: GrammarLike | None) -> Triggers:
    """A lazy grammar's triggers for every engine: its words, each word's full-match pattern
    (for an engine where no single token spells it), and its patterns."""
    if grammar is None or not grammar.lazy:
        return Triggers()
    words = tuple(grammar.trigger_words)
    return Triggers(
        words=words,
        word_patterns=tuple(word_pattern(w) for w in words),
        patterns=tuple(grammar.trigger_patterns),
    )


class FrontEnd:
    """The shared front end of one adapter (see the module docstring).

    ``adapter`` names the class the caller constructs, for the errors' advice; ``options``
    mean what ``ToolChatHandler`` documents.
    """

    def __init__(self, *, adapter: str, options: FrontEndOptions | None = None) -> None:
        options = options or FrontEndOptions()
        layout = options.argument_layout
        if layout is not None and layout not in LAYOUTS:
            raise GrammarError(f"argument_layout={layout!r} is not a layout; pass one of {LAYOUTS}")
        check_invalid_arguments(options.invalid_arguments, adapter=adapter)
        self.adapter = adapter
        self.options = options
        """The adapter's options, as given."""
        dialect = options.dialect
        self.dialect: DialectSpec | None = (
            get_builtin(dialect) if isinstance(dialect, str) else dialect
        )
        """The dialect given (a builtin's name resolved), or ``None``: detected per model."""

    @property
    def argument_layout(self) -> ArgumentLayout | None:
        """The ``argument_layout`` option."""
        return self.options.argument_layout

    # ---- per model ---------------------------------------------------------------------------

    def resolve(
        self,
        info: ModelInfo,
        engine: Engine,
        *,
        native: str = "gguf",
        where: str = "",
        vocabulary: Vocabulary | None = None,
        vocabulary_of: Callable[[str], Vocabulary | None] | None = None,
    ) -> ModelSetup:
        """Template, dialect and engine for one model. ``native`` names where ``info``'s own
        template came from (``gguf``, ``server``); ``where`` describes the model for errors;
        ``vocabulary`` (the model's tokens, when known) is evidence for detection;
        ``vocabulary_of`` finds it from the template source where ``vocabulary`` is ``None``
        (a server's tokenizer is probed for the template's markers)."""
        source, origin = self.template_source(info, native=native, where=where)
        if vocabulary is None and vocabulary_of is not None:
            vocabulary = vocabulary_of(source)
        budget = self.options.render_budget
        template = ChatTemplate(
            source, bos_token=info.bos_token, eos_token=info.eos_token, budget=budget
        )
        with using_budget(budget):
            spec = self.dialect or detect_dialect(
                source,
                bos_token=info.bos_token,
                eos_token=info.eos_token,
                vocabulary=vocabulary,
            )
        return ModelSetup(
            info=info,
            template=template,
            template_origin=origin,
            spec=spec,
            engine=engine,
            vocabulary=vocabulary,
            markers=tuple(spec_markers(spec, vocabulary)),
        )

    def template_source(
        self, info: ModelInfo, *, native: str = "gguf", where: str = ""
    ) -> tuple[str, str]:
        """``(source, origin)``: the caller's template, the model's own, a shipped fallback for
        its architecture (with a warning naming it), else ``MissingTemplateError``."""
        if self.options.chat_template is not None:
            return self.options.chat_template, "user"
        if info.chat_template:
            return info.chat_template, native
        model = where or f"{info.path or info.name!r}"
        found = fallback_template(info.architecture) if self.options.fallback else None
        if found is not None:
            name, source = found
            warnings.warn(
                f"{model} carries no chat template; using tooldialect's fallback {name!r} for "
                f"architecture {info.architecture!r}. Pass {self.adapter}(chat_template=...) to "
                "choose the template yourself.",
                stacklevel=5,
            )
            return source, f"fallback:{name}"
        shipped = ", ".join(sorted(FALLBACK_TEMPLATES))
        raise MissingTemplateError(
            f"model {model} (architecture {info.architecture!r}) carries no chat template and "
            f"tooldialect ships no fallback for it (it has: {shipped}); pass one: "
            f"{self.adapter}(chat_template=open('template.jinja').read())"
        )

    # ---- per request -------------------------------------------------------------------------

    def chat_request(
        self, setup: ModelSetup, messages: Sequence[Mapping[str, Any]], options: ChatOptions
    ) -> ChatRequest:
        """The one typed request of ``messages`` and ``options`` for ``setup``'s model: the
        messages checked and made canonical, this front end's defaults merged in (the
        request's own win), the parallel calls resolved against the dialect."""
        asked = options.parallel_tool_calls
        if asked is None:
            asked = self.options.parallel_tool_calls
        defaults = self.options.template_kwargs or {}
        return ChatRequest(
            messages=tuple(canonical_messages(messages)),
            tools=options.tools,
            choice=options.choice,
            answer_schema=options.answer_schema,
            parallel=options.choice.allows_several(asked) and setup.spec.parallel_calls,
            template_variables={**defaults, **options.template_variables},
            grammar=options.grammar,
        )

    def prepare_from(
        self,
        setup: ModelSetup,
        messages: Sequence[Mapping[str, Any]],
        request: Mapping[str, Any],
        *,
        where: str,
    ) -> Request:
        """:meth:`prepare` of a request given as OpenAI keywords (``RequestOptions``), checked
        once by ``ChatOptions.build`` (``where`` names the entry point in its errors)."""
        options = ChatOptions.build(request, where=where)
        return self.prepare(setup, self.chat_request(setup, messages, options))

    def prepare(self, setup: ModelSetup, request: ChatRequest) -> Request:
        """Everything but generation: prompt and grammar (``request.prepare_request`` with this
        front end's options). Raises the library's errors."""
        return prepare_request(
            setup,
            request,
            argument_layout=self.options.argument_layout,
            verbatim_history=self.options.verbatim_history,
        )

    def generation_request(
        self,
        request: Request,
        *,
        sampling: SamplingParams,
        max_tokens: int | None = None,
        stop: str | Sequence[str] | None = None,
        logprobs: bool | None = None,
        top_logprobs: int | None = None,
        logits_processor: Any = None,
    ) -> GenerationRequest:
        """What the engine decodes for ``request``: the same for every engine (a
        ``logits_processor`` travels as the extension of that name)."""
        spec = request.setup.spec
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        return GenerationRequest(
            prompt=request.prompt,
            grammar=request.grammar,
            triggers=resolve_triggers(request.grammar),
            sampling=sampling,
            max_tokens=max_tokens,
            stop=(*stops, *spec.stop, *request.stop),  # + the template's end-of-turn markers
            # OpenAI: top_logprobs needs logprobs=True; llama-cpp-python reads it the same way
            logprobs=(top_logprobs or 0) if logprobs else None,
            bos=request.setup.info.bos_token,
            markers=_markers(request.setup),
            prefix=request.prefix,
            extensions={} if logits_processor is None else {"logits_processor": logits_processor},
        )

    def complete(
        self,
        setup: ModelSetup,
        *,
        messages: Sequence[Mapping[str, Any]],
        options: ChatOptions,
        model: str,
    ) -> Completed:
        """One chat completion on ``setup``'s engine: a ``chat.completion`` dict, or an iterator
        of chunks when ``options.stream``, with the engine's account of it. ``model`` names the
        model in the reply."""
        check_encodable(messages, [t.to_openai() for t in options.tools])
        prepared = self.prepare(setup, self.chat_request(setup, messages, options))
        job = self.generation_request(
            prepared,
            sampling=options.sampling,
            max_tokens=options.max_tokens,
            stop=options.stop,
            logprobs=options.logprobs,
            top_logprobs=options.top_logprobs,
            logits_processor=options.logits_processor,
        )
        job = choose_answer_or_call(prepared, job, setup.engine)
        steering = steering_for(
            prepared,
            messages,
            layout=self.argument_layout,
            reminded=lambda words: self.reminded_prompt(setup, messages, options, words=words),
        )
        if self.options.steer_calls and steering is not None:
            gen = steer(prepared, job, setup.engine, steering)
        else:
            gen = setup.engine.run(job)
        return Completed(self.reply(prepared, gen, model=model, stream=options.stream), gen.result)

    def reminded_prompt(
        self,
        setup: ModelSetup,
        messages: Sequence[Mapping[str, Any]],
        options: ChatOptions,
        *,
        words: str = REMINDER,
    ) -> str:
        """The prompt of ``messages`` with the steering's ``words`` as the user's last (rendered
        by the model's template, never kept in the conversation)."""
        said = [*messages, {"role": "user", "content": words}]
        return self.prepare(setup, self.chat_request(setup, said, options)).prompt

    def reply(self, request: Request, gen: Generation, *, model: str, stream: bool) -> Completion:
        """The completion tail: the OpenAI shapes of ``gen`` (calls checked against their full
        schema, ``validation``), and the reply remembered in the model's own words
        (``history.ReplyMemory``) on the batch and the streaming path alike."""
        if stream:
            return stream_chunks(
                request,
                gen,
                model,
                on_reply=request.setup.replies.remember,
                invalid_arguments=self.options.invalid_arguments,
            )
        text = gen.text()
        response = build_response(
            request, text, gen.result, model, invalid_arguments=self.options.invalid_arguments
        )
        request.setup.replies.remember(response["choices"][0]["message"], text)
        return response
