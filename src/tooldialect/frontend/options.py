"""The options, typed once: an adapter's (``FrontEndOptions``) and a request's (``ChatOptions``).

``RequestOptions`` names each key a chat completion takes besides ``messages`` (the tools, the
template variables, generation and sampling), so that mypy catches a misspelt key at a call site
typed with ``Unpack[RequestOptions]``. ``ChatOptions.build`` is what each adapter
(``ToolChatHandler``, ``tooldialect.create_chat_completion``, ``ServerClient``, the server) does
once with what it was given, the one check of a request's keys: an unknown key is refused with a
``ToolSpecError`` naming the nearest valid field, as OpenAI answers an unknown argument, instead
of being dropped; the tools, ``tool_choice`` and ``response_format`` are normalised there, so the
pipeline reads typed values only. ``LLAMA_CPP_KEYWORDS`` lists what llama-cpp-python's
``Llama.create_chat_completion`` passes to a chat handler, which must all be taken.

``FrontEndOptions`` holds the options ``ToolChatHandler`` and ``ServerClient`` share, with their
defaults, written once; both take them as keywords (``FrontEndKeywords``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..dialect.spec import DialectSpec
from ..engine.base import SamplingParams
from ..errors import OptionError, ToolSpecError
from ..grammar.codec import DEFAULT_ARGUMENT_LAYOUT, ArgumentLayout
from ..prompt.budget import RenderBudget
from ..tool_defs import (
    ToolChoice,
    ToolDef,
    function_call_choice,
    normalize_response_format,
    normalize_tool_choice,
    normalize_tools,
)
from .chat_request import ForeignGrammar, foreign_grammar
from .validation import InvalidArguments

__all__ = [
    "LLAMA_CPP_KEYWORDS",
    "REQUEST_KEYS",
    "TEMPLATE_KWARG_NAMES",
    "ChatOptions",
    "FrontEndKeywords",
    "FrontEndOptions",
    "RequestOptions",
    "check_known_keys",
    "check_request_values",
    "nearest_field",
]


class RequestOptions(TypedDict, total=False):
    """Every per-request option (``messages`` aside): OpenAI's names, llama-cpp-python's
    sampling names, and tooldialect's extras."""

    # what the reply may call, and in what shape (``request.prepare_request``)
    tools: Sequence[Mapping[str, Any]] | None
    tool_choice: Any
    functions: Sequence[Mapping[str, Any]] | None
    function_call: Any
    parallel_tool_calls: bool | None
    response_format: Any
    grammar: Any
    # template variables (``chat_template_kwargs`` and the three known by name)
    chat_template_kwargs: Mapping[str, Any] | None
    enable_thinking: Any
    thinking: Any
    reasoning_effort: Any
    # generation
    stream: bool
    max_tokens: int | None
    stop: str | Sequence[str] | None
    logprobs: bool | None
    top_logprobs: int | None
    logits_processor: Any
    model: str | None
    # sampling (``engine.base.SamplingParams`` holds the defaults)
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    typical_p: float
    repeat_penalty: float
    presence_penalty: float
    frequency_penalty: float
    mirostat_mode: int
    mirostat_tau: float
    mirostat_eta: float
    seed: int | None
    logit_bias: Mapping[Any, float] | None
    tfs_z: float
    """Passed by llama-cpp-python; llama.cpp has no tail-free sampling any more (ignored)."""


REQUEST_KEYS: frozenset[str] = frozenset(RequestOptions.__optional_keys__)
"""Every key of ``RequestOptions``."""

TEMPLATE_KWARG_NAMES = ("enable_thinking", "thinking", "reasoning_effort")
"""Request keywords that are template variables (Qwen3, DeepSeek V3.1, gpt-oss)."""

LLAMA_CPP_KEYWORDS = (
    "functions",
    "function_call",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "logprobs",
    "top_logprobs",
    "stream",
    "stop",
    "seed",
    "response_format",
    "max_tokens",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_tau",
    "mirostat_eta",
    "model",
    "logits_processor",
    "grammar",
    "logit_bias",
)
"""What ``Llama.create_chat_completion`` passes to its chat handler besides ``llama`` and
``messages`` (every one is a ``RequestOptions`` key; tests/frontend/test_options.py checks it
against the installed llama-cpp-python)."""

_SAMPLING_KEYS = tuple(
    name for name in SamplingParams.__dataclass_fields__ if name != "penalty_last_n"
)


def nearest_field(key: str, known: Iterable[str]) -> str | None:
    """The valid field ``key`` most likely misspells (``None`` when none is close)."""
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def check_known_keys(
    keys: Iterable[str], *, where: str, known: Collection[str] = REQUEST_KEYS
) -> None:
    """Refuse the first key not in ``known`` with a ``ToolSpecError`` naming the nearest
    valid field (OpenAI answers an unknown argument with a 400 the same way)."""
    for key in keys:
        if key in known:
            continue
        near = nearest_field(key, known)
        hint = (
            f"; did you mean {near!r}?" if near else f"; valid fields: {', '.join(sorted(known))}"
        )
        raise ToolSpecError(f"{where} got an unknown request field {key!r}{hint}", param=key)


def check_request_values(request: Mapping[str, Any]) -> None:
    """OpenAI's ranges, for a request that came over HTTP: ``max_tokens`` >= 1, ``temperature``
    a number >= 0, ``top_p`` in [0, 1]. In process, llama-cpp-python's own meanings stay
    (``max_tokens`` <= 0 is "until the context is full", a negative temperature samples the raw
    distribution); NaN is refused everywhere (``ChatOptions.build``)."""
    limit = request.get("max_tokens")
    if limit is not None and (not _is_int(limit) or limit < 1):
        raise ToolSpecError(
            f"max_tokens must be an integer of at least 1, got {limit!r}", param="max_tokens"
        )
    for name, low, high in (("temperature", 0.0, math.inf), ("top_p", 0.0, 1.0)):
        value = request.get(name)
        if value is None:
            continue
        if not _is_number(value) or not low <= value <= high:
            span = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
            raise ToolSpecError(f"{name} must be a number {span}, got {value!r}", param=name)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


@dataclass(frozen=True)
class ChatOptions:
    """One request's options, checked and typed once by the adapter that received them."""

    sampling: SamplingParams = field(default_factory=SamplingParams)
    """The sampler chain's settings (``engine.base.SamplingParams`` holds the defaults)."""
    stream: bool = False
    """Chunks as the reply is decoded, instead of one response."""
    max_tokens: int | None = None
    """``None`` or <= 0: until the context is full (llama-cpp-python's meaning)."""
    stop: str | Sequence[str] | None = None
    """The caller's stop strings (the dialect's and the template's are added)."""
    logprobs: bool | None = None
    """Whether each sampled token's log probability is reported."""
    top_logprobs: int | None = None
    """How many alternatives each reported token lists."""
    logits_processor: Any = None
    """llama-cpp-python's ``LogitsProcessorList`` (or a callable), in process only."""
    model: str | None = None
    """The model name the reply gives (``None``: the model file's)."""
    tools: tuple[ToolDef, ...] = ()
    """``tools`` (or the legacy ``functions``), validated."""
    choice: ToolChoice = field(default_factory=lambda: ToolChoice(mode="none"))
    """``tool_choice`` (or the legacy ``function_call``) read against ``tools``."""
    answer_schema: dict[str, Any] | None = None
    """The JSON Schema ``response_format`` asks an answer to follow (``None``: free text)."""
    parallel_tool_calls: bool | None = None
    """The request's own ``parallel_tool_calls`` (``None``: the handler's default)."""
    template_variables: Mapping[str, Any] = field(default_factory=dict)
    """``chat_template_kwargs`` with the ``TEMPLATE_KWARG_NAMES`` given over them."""
    grammar: ForeignGrammar | None = None
    """A caller's own ``grammar``."""

    @classmethod
    def build(
        cls, request: Mapping[str, Any], *, where: str, penalty_last_n: int = 64
    ) -> ChatOptions:
        """``request`` (``RequestOptions`` keys) checked: an unknown key or a NaN is a
        ``ToolSpecError`` naming it, a bad tool, ``tool_choice`` or ``response_format`` the
        library's error about it. ``where`` names the entry point for the message;
        ``penalty_last_n`` is the model's penalty window."""
        check_known_keys(request, where=where)
        for name in _SAMPLING_KEYS:
            value = request.get(name)
            if isinstance(value, float) and math.isnan(value):
                raise ToolSpecError(f"{name} must be a number, got nan", param=name)
        sampling = {n: request[n] for n in _SAMPLING_KEYS if request.get(n) is not None}
        bias = sampling.pop("logit_bias", None) or {}
        tools = _tools(request)
        parallel = request.get("parallel_tool_calls")
        return cls(
            sampling=SamplingParams(
                **sampling,
                penalty_last_n=penalty_last_n,
                logit_bias={int(k): float(v) for k, v in bias.items()},
            ),
            stream=bool(request.get("stream", False)),
            max_tokens=request.get("max_tokens"),
            stop=request.get("stop"),
            logprobs=request.get("logprobs"),
            top_logprobs=request.get("top_logprobs"),
            logits_processor=request.get("logits_processor"),
            model=request.get("model"),
            tools=tools,
            choice=normalize_tool_choice(_tool_choice(request), tools),
            answer_schema=normalize_response_format(request.get("response_format")),
            parallel_tool_calls=None if parallel is None else bool(parallel),
            template_variables=_template_variables(request),
            grammar=foreign_grammar(request.get("grammar")),
        )


def _tools(request: Mapping[str, Any]) -> tuple[ToolDef, ...]:
    """``tools``, or the legacy ``functions`` as tools, validated."""
    tools = request.get("tools")
    functions = request.get("functions")
    if functions is not None and tools is None:
        tools = [{"type": "function", "function": f} for f in functions]
    return tuple(normalize_tools(tools))


def _tool_choice(request: Mapping[str, Any]) -> Any:
    """``tool_choice``, or the legacy ``function_call`` in its form."""
    choice = request.get("tool_choice")
    call = request.get("function_call")
    return function_call_choice(call) if choice is None and call is not None else choice


def _template_variables(request: Mapping[str, Any]) -> dict[str, Any]:
    given = request.get("chat_template_kwargs") or {}
    if not isinstance(given, Mapping):
        raise ToolSpecError(
            f"chat_template_kwargs must be an object of template variables, got {given!r}",
            param="chat_template_kwargs",
        )
    return {**given, **{k: request[k] for k in TEMPLATE_KWARG_NAMES if k in request}}


@dataclass(frozen=True)
class FrontEndOptions:
    """What ``ToolChatHandler`` and ``ServerClient`` both take: the options of their shared
    front end (``pipeline.FrontEnd``), each written here once with its default.
    ``ToolChatHandler``'s docstring says what each does."""

    dialect: DialectSpec | str | None = None
    """A ``DialectSpec``, a builtin's name, or ``None`` to detect it from the template."""
    chat_template: str | None = None
    """A Jinja source that overrides the model's own template."""
    template_kwargs: Mapping[str, Any] | None = None
    """Template variables of every render (a request's own win)."""
    parallel_tool_calls: bool = True
    """The default for a request that does not say."""
    fallback: bool = True
    """Use a shipped template for a model that carries none."""
    verbatim_history: bool = True
    """Render this model's earlier replies as the text it wrote."""
    render_budget: RenderBudget | None = None
    """Bounds on every render of the template (``None``: the defaults)."""
    argument_layout: ArgumentLayout | None = DEFAULT_ARGUMENT_LAYOUT
    """Whitespace a constrained call may write inside its arguments (``None``: natural under
    ``auto``, canonical for a forced call)."""
    invalid_arguments: InvalidArguments = "report"
    """What a call whose arguments fail its tool's schema does."""
    steer_calls: bool = True
    """Steer a reply's calls while they are decoded (``frontend.steering``)."""

    @classmethod
    def of(cls, keywords: Mapping[str, Any], *, adapter: str) -> FrontEndOptions:
        """``keywords`` given to ``adapter``'s constructor; one it does not take is an
        ``OptionError`` naming the nearest option."""
        known = cls.__dataclass_fields__
        for key in keywords:
            if key not in known:
                near = nearest_field(key, known)
                hint = f"did you mean {near!r}?" if near else f"options: {', '.join(known)}"
                raise OptionError(f"{adapter}() got an unknown option {key!r}; {hint}")
        return cls(**keywords)


class FrontEndKeywords(TypedDict, total=False):
    """``FrontEndOptions`` as keywords (``Unpack[FrontEndKeywords]``): the names and types mypy
    checks at a ``ToolChatHandler(...)`` or ``ServerClient(...)`` call; the defaults are
    ``FrontEndOptions``'s (a test keeps the two lists equal)."""

    dialect: DialectSpec | str | None
    chat_template: str | None
    template_kwargs: Mapping[str, Any] | None
    parallel_tool_calls: bool
    fallback: bool
    verbatim_history: bool
    render_budget: RenderBudget | None
    argument_layout: ArgumentLayout | None
    invalid_arguments: InvalidArguments
    steer_calls: bool
