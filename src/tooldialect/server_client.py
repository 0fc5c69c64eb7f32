"""``ServerClient``: the same dialects, grammars and OpenAI shapes as ``ToolChatHandler``, with
llama.cpp's own ``llama-server`` as the engine (one or several, over HTTP).

The request is prepared exactly as in-process (``request.prepare_request``: tools, the model's
template rendered client-side, the dialect spec, the grammar and lazy triggers) and shaped exactly
as in-process (``response``); only the engine differs (``server.engine``). The template and
BOS/EOS come from the server's ``/props``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .dialect.builtins import get_builtin
from .dialect.detect import detect_dialect
from .dialect.spec import DialectSpec
from .engine.in_process.generate import GenerationResult
from .engine.in_process.sampling import SamplingParams
from .engine.llama_server.engine import RemoteEngine, completion_body
from .engine.llama_server.http import HttpStatusError, Unreachable, open_post, read_json
from .engine.llama_server.pool import ServerPool
from .errors import MissingTemplateError, ServerError, ToolSpecError
from .frontend.request import ModelSetup, Request, prepare_request
from .frontend.response import build_response, stream_chunks
from .gguf import ModelInfo
from .grammar.codec import DEFAULT_ARGUMENT_LAYOUT, ArgumentLayout
from .prompt.template import ChatTemplate
from .shapes import ChatCompletion, ChatCompletionChunk

__all__ = ["ServerClient"]


class ServerClient:
    """OpenAI-shaped chat completions with tool calls, served by one or more llama-servers.

    ``urls``: one base URL or several (``"http://127.0.0.1:8080"``); each request goes to the
    least busy server that serves ``model``, except that a conversation returns to the server and
    slot holding its prefix. ``dialect``, ``chat_template``, ``template_kwargs`` and
    ``argument_layout`` mean what they mean for ``ToolChatHandler``. ``retry_window``: seconds
    spent finding a server that answers before ``ServerError``; ``timeout``: seconds of silence
    before a running reply is abandoned.
    """

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        model: str | None = None,
        dialect: DialectSpec | str | None = None,
        chat_template: str | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
        parallel_tool_calls: bool = True,
        verbatim_history: bool = True,
        argument_layout: ArgumentLayout = DEFAULT_ARGUMENT_LAYOUT,
        timeout: float = 600.0,
        retry_window: float = 30.0,
        cooldown: float = 5.0,
    ) -> None:
        self.pool = ServerPool(
            [urls] if isinstance(urls, str) else list(urls), model=model, cooldown=cooldown
        )
        self.engine = RemoteEngine(self.pool, timeout=timeout, retry_window=retry_window)
        self.model = model
        self.dialect = get_builtin(dialect) if isinstance(dialect, str) else dialect
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.parallel_tool_calls = parallel_tool_calls
        self.verbatim_history = verbatim_history
        self.argument_layout: ArgumentLayout = argument_layout
        self._setup: ModelSetup | None = None
        self._adds_bos = False
        self._lock = threading.Lock()
        self.last_result: GenerationResult | None = None
        """The engine's account of the latest request (complete once it has been consumed)."""

    def __repr__(self) -> str:
        return f"ServerClient({[b.url for b in self.pool.backends]!r})"

    def setup(self) -> ModelSetup:
        """Template and dialect, from the first server that answers (resolved once)."""
        with self._lock:
            if self._setup is not None:
                return self._setup
            backend, props = self._first_props()
            info = ModelInfo(
                path=str(props.get("model_path") or "") or None,
                name=str(props.get("model_alias") or ""),
                chat_template=props.get("chat_template") or None,
                bos_token=str(props.get("bos_token") or ""),
                eos_token=str(props.get("eos_token") or ""),
            )
            source = self.chat_template if self.chat_template is not None else info.chat_template
            if not source:
                raise MissingTemplateError(
                    f"llama-server at {backend.url} reports no chat template for "
                    f"{info.path!r}; pass ServerClient(chat_template=open('t.jinja').read())"
                )
            spec = self.dialect or detect_dialect(
                source, bos_token=info.bos_token, eos_token=info.eos_token
            )
            self._adds_bos = _adds_bos(backend.url)
            self._setup = ModelSetup(
                info=info,
                template=ChatTemplate(source, bos_token=info.bos_token, eos_token=info.eos_token),
                template_origin="user" if self.chat_template is not None else "server",
                spec=spec,
                engine=self.engine,
            )
            return self._setup

    def _first_props(self) -> tuple[Any, dict[str, Any]]:
        for backend in self.pool.backends:
            props = self.pool.props(backend)
            if props is not None:
                return backend, props
        urls = ", ".join(b.url for b in self.pool.backends)
        raise ServerError(f"no llama-server answered /props (servers: {urls}); is one running?")

    def prepare(self, *, messages: Sequence[Mapping[str, Any]], **request: Any) -> Request:
        """Everything but generation, exactly as ``ToolChatHandler.prepare`` does it."""
        return prepare_request(
            self.setup(),
            messages=messages,
            default_parallel=self.parallel_tool_calls,
            default_template_kwargs=self.template_kwargs,
            verbatim_history=self.verbatim_history,
            argument_layout=self.argument_layout,
            **request,
        )

    def create_chat_completion(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        stream: bool = False,
        stop: str | list[str] | None = None,
        max_tokens: int | None = None,
        logprobs: bool | None = None,
        top_logprobs: int | None = None,
        logits_processor: Any = None,
        model: str | None = None,
        **request: Any,
    ) -> ChatCompletion | Iterator[ChatCompletionChunk]:
        """One chat completion: a ``chat.completion`` dict, or an iterator of chunks when
        ``stream``. Takes what ``Llama.create_chat_completion`` takes (sampling fields with its
        names and defaults, see ``SamplingParams``), plus the per-request
        extras of ``tooldialect.create_chat_completion`` (``chat_template_kwargs``, ...).
        ``logits_processor`` cannot cross HTTP and raises ``ToolSpecError``."""
        if logits_processor is not None:
            raise ToolSpecError(
                "logits_processor runs Python on every token and cannot be sent to llama-server; "
                "use the in-process ToolChatHandler for it, or logit_bias= here"
            )
        sampling = SamplingParams.pop_from(request)
        prepared = self.prepare(messages=messages, tools=tools, tool_choice=tool_choice, **request)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        spec = prepared.setup.spec
        prompt = self._wire_prompt(prepared.prompt, prepared.setup.info.bos_token)
        body = completion_body(
            prompt,
            spec=spec,
            grammar=prepared.grammar,
            sampling=sampling,
            max_tokens=max_tokens,
            stop=[*stops, *spec.stop],
            n_probs=max(1, top_logprobs or 0) if logprobs else 0,
        )
        gen = self.engine.generate(
            prompt, body, top_logprobs=(top_logprobs or 0) if logprobs else None
        )
        self.last_result = gen.result
        name = model or self.model or prepared.setup.info.path or ""
        if stream:
            return stream_chunks(prepared, gen, name)
        text = gen.text()
        response = build_response(prepared, text, gen.result, name)
        prepared.setup.replies.remember(response["choices"][0]["message"], text)
        return response

    def _wire_prompt(self, prompt: str, bos: str) -> str:
        # the server tokenizes with add_special: a BOS the template wrote would be doubled
        if self._adds_bos and bos and prompt.startswith(bos):
            return prompt[len(bos) :]
        return prompt


def _adds_bos(url: str) -> bool:
    """Whether the server's tokenizer adds a BOS token of its own."""
    try:
        with_bos = read_json(
            open_post(url, "/tokenize", {"content": "a", "add_special": True}, timeout=5.0)
        )
        without = read_json(
            open_post(url, "/tokenize", {"content": "a", "add_special": False}, timeout=5.0)
        )
        return len(with_bos.get("tokens", [])) > len(without.get("tokens", []))
    except (Unreachable, HttpStatusError, ValueError, AttributeError):
        return False
