"""``ServerClient``: the same dialects, grammars and OpenAI shapes as ``ToolChatHandler``, with
llama.cpp's own ``llama-server`` as the engine (one or several, over HTTP).

A thin adapter over the shared ``frontend.pipeline.FrontEnd`` (template resolution with the render
budget and the fallbacks, detection, request preparation, the completion tail): only the model's
facts (the template and BOS/EOS, from the server's ``/props``) and the engine
(``engine.llama_server``) differ from the in-process handler.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .dialect.vocabulary import Vocabulary
from .engine.llama_server.launch import LlamaServer
from .engine.llama_server.llama_server_engine import LlamaServerEngine, server_adds_bos
from .engine.llama_server.pool import Backend, ServerPool
from .engine.llama_server.vocab import server_vocabulary
from .errors import ServerError
from .frontend.options import ChatOptions, FrontEndOptions
from .frontend.pipeline import Completed, FrontEnd, model_name
from .frontend.request import ModelSetup, Request
from .gguf import ModelInfo
from .shapes import ChatCompletion, ChatCompletionChunk

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

    from .frontend.options import FrontEndKeywords, RequestOptions

__all__ = ["ServerClient"]


class ServerClient:
    """OpenAI-shaped chat completions with tool calls, served by one or more llama-servers.

    ``urls``: one base URL or several (``"http://127.0.0.1:8080"``), or ``LlamaServer``s we
    launched; each request goes to the least busy server that serves ``model``, except that a
    conversation returns to the server and slot holding its prefix. ``dialect``,
    ``chat_template``, ``template_kwargs``, ``parallel_tool_calls``, ``fallback``,
    ``verbatim_history``, ``render_budget``, ``argument_layout``, ``invalid_arguments`` and
    ``steer_calls`` mean what they mean for ``ToolChatHandler`` (the front end's options,
    ``frontend.options.FrontEndOptions``).
    ``retry_window``: seconds spent finding a server that answers before ``ServerError``;
    ``timeout``: seconds of silence before a running reply is abandoned; a server that is down,
    or does not answer its ``/slots`` probe within ``probe_timeout`` seconds, is left out of
    rotation for ``cooldown`` seconds. ``vocabulary``: the model's tokens, evidence for
    detection as ``ToolChatHandler`` reads them from its ``Llama``; by default read from the GGUF
    file of a server we launched (or that ``/props`` names on this machine), else probed through
    the server's ``/tokenize`` (``engine.llama_server.vocab``). ``strict_switch``: once a lazy
    trigger fired, go on in a second request under the grammar's strict form
    (``engine.llama_server.strict_switch``; off by default: without fast-forward it does not pay).
    """

    def __init__(
        self,
        urls: str | LlamaServer | Sequence[str | LlamaServer],
        *,
        model: str | None = None,
        timeout: float = 600.0,
        retry_window: float = 30.0,
        cooldown: float = 5.0,
        probe_timeout: float = 2.0,
        vocabulary: Vocabulary | None = None,
        strict_switch: bool = False,
        **options: Unpack[FrontEndKeywords],
    ) -> None:
        self.frontend = FrontEnd(
            adapter="ServerClient", options=FrontEndOptions.of(options, adapter="ServerClient")
        )
        servers = [urls] if isinstance(urls, str | LlamaServer) else list(urls)
        self.launched = {s.url: s.model for s in servers if isinstance(s, LlamaServer)}
        """URL -> the GGUF path of each server given as a ``LlamaServer``."""
        self.vocabulary = vocabulary
        self.pool = ServerPool(
            [s.url if isinstance(s, LlamaServer) else s for s in servers],
            model=model,
            cooldown=cooldown,
            probe_timeout=probe_timeout,
        )
        self.engine = LlamaServerEngine(
            self.pool, timeout=timeout, retry_window=retry_window, strict_switch=strict_switch
        )
        self.model = model
        self._setup: ModelSetup | None = None
        self._lock = threading.Lock()

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
            self.engine.adds_bos = server_adds_bos(backend.url)
            where = f"{info.path or info.name!r} on llama-server at {backend.url}"
            self._setup = self.frontend.resolve(
                info,
                self.engine,
                native="server",
                where=where,
                vocabulary=self.vocabulary,
                vocabulary_of=lambda source: server_vocabulary(
                    backend.url,
                    props,
                    source,
                    model_path=self.launched.get(backend.url),
                    specs=[self.frontend.dialect] if self.frontend.dialect else [],
                    timeout=max(self.pool.probe_timeout, 5.0),
                ),
            )
            return self._setup

    def _first_props(self) -> tuple[Backend, dict[str, Any]]:
        for backend in self.pool.backends:
            props = self.pool.props(backend)
            if props is not None:
                return backend, props
        urls = ", ".join(b.url for b in self.pool.backends)
        raise ServerError(f"no llama-server answered /props (servers: {urls}); is one running?")

    def prepare(self, *, messages: Sequence[Mapping[str, Any]], **request: Any) -> Request:
        """Everything but generation, exactly as ``ToolChatHandler.prepare`` does it."""
        return self.frontend.prepare_from(
            self.setup(), messages, request, where="ServerClient.prepare"
        )

    def create_chat_completion(
        self, *, messages: Sequence[Mapping[str, Any]], **request: Unpack[RequestOptions]
    ) -> ChatCompletion | Iterator[ChatCompletionChunk]:
        """One chat completion: a ``chat.completion`` dict, or an iterator of chunks when
        ``stream``. Takes what ``Llama.create_chat_completion`` takes (sampling fields with its
        names and defaults, see ``SamplingParams``), plus the per-request extras of
        ``tooldialect.create_chat_completion`` (``chat_template_kwargs``, ...): the
        ``RequestOptions`` keys, an unknown one refused with a ``ToolSpecError`` naming the
        nearest. ``logits_processor`` cannot cross HTTP and raises ``ToolSpecError``."""
        return self.complete(messages=messages, **request).response

    def complete(
        self, *, messages: Sequence[Mapping[str, Any]], **request: Unpack[RequestOptions]
    ) -> Completed:
        """What :meth:`create_chat_completion` does, returning the response with the engine's
        account of it (``Completed.result``: usage, the stop string), so that concurrent
        requests each read their own."""
        options = ChatOptions.build(request, where="ServerClient.create_chat_completion")
        setup = self.setup()
        return self.frontend.complete(
            setup,
            messages=messages,
            options=options,
            model=options.model or self.model or model_name(setup.info.path),
        )
