"""The server engine: one generation on a llama-server's ``/completion``, with what the
in-process engine would use (the rendered prompt, the grammar and its lazy triggers, sampling),
returned as the same ``Generation`` the response shaping reads (``engine.base.Engine``).

Retries: until the first event of a reply arrives, a server that is down or answers 5xx is set
aside and the request goes to the next candidate, within ``retry_window`` seconds. Once a reply
has started it is never sent again: a broken stream raises ``ServerError``.

The strict switch (``strict_switch=True``, off by default): once a lazy trigger fired, the reply
goes on in a second request under the grammar's strict form (``strict``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from ...errors import ContextOverflowError, ServerError, ToolSpecError
from ..base import Generation, GenerationRequest, GenerationResult, Triggers
from .http import HttpStatusError, Unreachable, open_post, read_json, read_sse
from .pool import Backend, ServerPool
from .strict_switch import Continuation, SwitchWatch

__all__ = ["LlamaServerEngine", "completion_body", "server_adds_bos"]

_WORD, _PATTERN_FULL = 1, 3
"""llama.cpp's ``common_grammar_trigger_type`` values."""


def _triggers(triggers: Triggers) -> list[dict[str, Any]]:
    # words go as words: the server makes a one-token word a trigger token, as in-process
    return [{"type": _WORD, "value": w} for w in triggers.words] + [
        {"type": _PATTERN_FULL, "value": p} for p in triggers.patterns
    ]


def completion_body(request: GenerationRequest, *, prompt: str | None = None) -> dict[str, Any]:
    """The ``/completion`` request that decodes ``request`` as the in-process engine would
    (``prompt``: the text to send, when it differs from ``request.prompt``)."""
    sampling, max_tokens = request.sampling, request.max_tokens
    body: dict[str, Any] = {
        "prompt": request.prompt if prompt is None else prompt,
        "stream": True,
        "cache_prompt": True,
        # each event says what the prompt cost: a reply closed early (steering rewound it)
        # still has its usage
        "timings_per_token": True,
        "n_predict": max_tokens if max_tokens and max_tokens > 0 else -1,
        "temperature": sampling.temperature,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "min_p": sampling.min_p,
        "typical_p": sampling.typical_p,
        "repeat_penalty": sampling.repeat_penalty,
        "repeat_last_n": sampling.penalty_last_n,
        "presence_penalty": sampling.presence_penalty,
        "frequency_penalty": sampling.frequency_penalty,
        "mirostat": sampling.mirostat_mode,
        "mirostat_tau": sampling.mirostat_tau,
        "mirostat_eta": sampling.mirostat_eta,
        "stop": [s for s in dict.fromkeys(request.stop) if s],
        "preserved_tokens": list(request.markers),
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.logit_bias:
        body["logit_bias"] = [[int(k), float(v)] for k, v in sampling.logit_bias.items()]
    if request.logprobs is not None:
        body["n_probs"] = max(1, request.logprobs)
    grammar = request.grammar
    if grammar is not None:
        gbnf = grammar.gbnf
        if grammar.root != "root":  # the server always starts at `root`
            gbnf = f"root ::= {grammar.root}\n{gbnf}"
        body["grammar"] = gbnf
        if grammar.lazy:
            body["grammar_lazy"] = True
            body["grammar_triggers"] = _triggers(request.triggers)
            # a trigger word that is one token must be preserved, or the server answers 400
            body["preserved_tokens"] = list(
                dict.fromkeys([*body["preserved_tokens"], *request.triggers.words])
            )
    return body


def server_adds_bos(url: str) -> bool:
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


class LlamaServerEngine:
    """``engine.base.Engine`` on the llama-servers of a ``ServerPool``; ``result.stats`` is
    ``None`` (the servers' own timings are in their logs)."""

    def __init__(
        self,
        pool: ServerPool,
        *,
        timeout: float = 600.0,
        retry_window: float = 30.0,
        strict_switch: bool = False,
    ) -> None:
        self.pool = pool
        self.strict_switch = strict_switch
        """Once a lazy trigger fired, go on under the grammar's strict form (``strict``): the
        server has no fast-forward, so this saves no decoding and costs a round trip."""
        self.switches = 0
        """Replies that went on under the strict form so far (for tests and benchmarks)."""
        self.timeout = timeout
        """Seconds without a byte from the server before a running reply is abandoned."""
        self.retry_window = retry_window
        """Seconds spent looking for a server that answers, across retries."""
        self.adds_bos = False
        """The servers' tokenizer adds a BOS itself (``server_adds_bos``), so a BOS the template
        wrote is stripped from the prompt, or the model would see two."""

    def run(self, request: GenerationRequest) -> Generation:
        """``engine.base.Engine``: one generation of a request the front end prepared."""
        if request.extensions.get("logits_processor") is not None:
            raise ToolSpecError(
                "logits_processor runs Python on every token and cannot be sent to llama-server; "
                "use the in-process ToolChatHandler for it, or logit_bias= here"
            )
        prompt = self.wire_prompt(request.prompt, request.bos)
        body = completion_body(request, prompt=prompt)
        switch = SwitchWatch.create(request, body) if self.strict_switch else None
        if switch is not None:
            body["return_tokens"] = True  # the continuation's prompt ends in these ids
        return self.generate(prompt, body, request.logprobs, switch=switch)

    def wire_prompt(self, prompt: str, bos: str) -> str:
        """The prompt as sent: the server tokenizes with ``add_special``, so a BOS the template
        wrote would be doubled where the server adds one."""
        if self.adds_bos and bos and prompt.startswith(bos):
            return prompt[len(bos) :]
        return prompt

    def generate(
        self,
        prompt: str,
        body: Mapping[str, Any],
        top_logprobs: int | None = None,
        *,
        switch: SwitchWatch | None = None,
    ) -> Generation:
        """Send ``body`` (see ``completion_body``) and return the reply as a ``Generation``.
        ``top_logprobs`` (not ``None``: logprobs were asked for, with that many alternatives)
        fills ``result.logprobs`` from the server's ``completion_probabilities``.

        ``switch``: watches the stream for the strict switch (``strict``).

        Connecting happens here, so "no server answers" raises before anything is yielded."""
        result = GenerationResult()
        if top_logprobs is not None:
            result.logprobs = []  # filled as events arrive; the response shaping reads it live
        backend, slot, events = self._open(prompt, body)
        pieces = self._switched(backend, slot, prompt, events, result, top_logprobs or 0, switch)
        return Generation(pieces, result)

    def _open(
        self, prompt: str, body: Mapping[str, Any]
    ) -> tuple[Backend, int, Iterator[dict[str, Any]]]:
        deadline = time.monotonic() + self.retry_window
        tried: list[Backend] = []
        errors: list[str] = []
        while True:
            choices = self.pool.candidates(prompt, exclude=tried)
            if not choices:
                if time.monotonic() >= deadline or not self.pool.backends:
                    break
                tried.clear()  # every server failed once: wait for one to come back
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                if time.monotonic() >= deadline:
                    break
                continue
            backend, slot = choices[0]
            tried.append(backend)
            self.pool.started(backend)
            try:
                response = open_post(
                    backend.url, "/completion", {**body, "id_slot": slot}, timeout=self.timeout
                )
                events = read_sse(response)
                first = next(events, None)  # the reply has started once one event arrived
            except HttpStatusError as exc:
                self.pool.finished(backend, slot=None, text=None)
                if exc.status < 500:
                    raise _client_error(backend, exc) from None
                self.pool.failed(backend)
                errors.append(f"{backend.url}: {exc}")
                continue
            except Unreachable as exc:
                self.pool.finished(backend, slot=None, text=None)
                self.pool.failed(backend)
                errors.append(f"{backend.url}: {exc}")
                continue
            if first is None:
                self.pool.finished(backend, slot=None, text=None)
                self.pool.failed(backend)
                errors.append(f"{backend.url}: empty reply")
                continue
            return backend, slot, _chain(first, events)
        urls = ", ".join(b.url for b in self.pool.backends)
        detail = "; ".join(errors[-4:]) or "none serves the model"
        raise ServerError(
            f"no llama-server answered within {self.retry_window:g} s (servers: {urls}; {detail}); "
            "start one (`llama-server -m MODEL.gguf --port 8080`) or raise retry_window="
        )

    def _switched(
        self,
        backend: Backend,
        slot: int,
        prompt: str,
        events: Iterator[dict[str, Any]],
        result: GenerationResult,
        top: int,
        switch: SwitchWatch | None,
    ) -> Iterator[str]:
        """The reply's pieces; where ``switch`` switches, the first stream's and then the
        continuation's, counted as one request's."""
        box: list[Continuation] = []
        yield from self._pieces(backend, prompt, events, result, top, switch=switch, box=box)
        if not box:
            return
        cont = box[0]
        self.switches += 1
        head = result.text
        self.pool.started(backend)
        events = self._continue(backend, slot, cont)
        yield from self._pieces(backend, prompt, events, result, top, head=(head, cont.tokens))

    def _continue(
        self, backend: Backend, slot: int, cont: Continuation
    ) -> Iterator[dict[str, Any]]:
        """The continuation's events on the first request's server and slot: the strict body,
        else (the server refused its grammar) the lenient one."""
        refusals = []
        for body in (cont.strict, cont.lenient):
            try:
                response = open_post(
                    backend.url, "/completion", {**body, "id_slot": slot}, timeout=self.timeout
                )
                return read_sse(response)
            except HttpStatusError as exc:
                refusals.append(str(exc))
            except Unreachable as exc:
                self.pool.finished(backend, slot=None, text=None)
                self.pool.failed(backend)
                raise ServerError(
                    f"llama-server at {backend.url} broke off the reply ({exc}) while it went "
                    "on under the strict grammar; the request was not sent again"
                ) from None
        self.pool.finished(backend, slot=None, text=None)
        raise ServerError(
            f"llama-server at {backend.url} refused to go on with the reply after its trigger "
            f"({'; '.join(refusals)[:300]}); the request was not sent again; pass "
            "strict_switch=False"
        )

    def _pieces(
        self,
        backend: Backend,
        prompt: str,
        events: Iterator[dict[str, Any]],
        result: GenerationResult,
        top: int,
        *,
        switch: SwitchWatch | None = None,
        box: list[Continuation] | None = None,
        head: tuple[str, int] = ("", 0),
    ) -> Iterator[str]:
        """One stream's pieces (``head``: the text and token count of a switched reply's first
        request; ``box`` receives the continuation where ``switch`` switches)."""
        text: list[str] = [head[0]]
        slot: int | None = None
        done = False
        try:
            for event in events:
                piece = event.get("content") or ""
                if not result.prompt_tokens:
                    _prompt_cost(event, result, head[1])
                if result.logprobs is not None:
                    result.logprobs += _logprobs(event, top)
                if piece:
                    text.append(piece)
                    result.completion_tokens = head[1] + int(event.get("tokens_predicted") or 0)
                    yield piece
                if event.get("stop"):
                    slot = _final(event, result, head[1])
                    done = True
                    break
                cont = switch.feed(event) if switch is not None else None
                if cont is not None and box is not None:
                    box.append(cont)
                    break
            if not (done or box):
                raise ServerError(
                    f"llama-server at {backend.url} closed the stream before the reply ended "
                    f"({len(text)} pieces received); the request was not sent again"
                )
        except Unreachable as exc:
            self.pool.failed(backend)
            raise ServerError(
                f"llama-server at {backend.url} broke off the reply ({exc}); the request was "
                "not sent again because part of it had been returned"
            ) from None
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # a reply abandoned early closes its connection: the server cancels it
            result.text = "".join(text)
            held = prompt + result.text if done else None
            self.pool.finished(backend, slot=slot if done else None, text=held)


def _logprobs(event: Mapping[str, Any], top: int) -> list[dict[str, Any]]:
    """OpenAI ``logprobs.content`` entries from an event's ``completion_probabilities`` (the
    server's softmax of the raw logits: before the grammar mask and the samplers, as in-process)."""

    def entry(p: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "token": str(p.get("token", "")),
            "logprob": float(p.get("logprob", 0.0)),
            "bytes": list(p.get("bytes") or str(p.get("token", "")).encode("utf-8")),
        }

    out = []
    for p in event.get("completion_probabilities") or []:
        item = entry(p)
        item["top_logprobs"] = [entry(a) for a in (p.get("top_logprobs") or [])[:top]]
        out.append(item)
    return out


def _chain(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield first
    yield from rest


def _prompt_cost(event: Mapping[str, Any], result: GenerationResult, head: int = 0) -> None:
    """The prompt's tokens and those decoded (not cached), from any event that says them
    (``head``: tokens a switched reply's first request generated, which the second one's
    prompt ends in)."""
    result.prompt_tokens = int(event.get("tokens_evaluated", 0) or 0) - head
    timings = event.get("timings") or {}
    result.last_prompt_eval_tokens = int(timings.get("prompt_n", result.prompt_tokens) or 0)


def _final(event: Mapping[str, Any], result: GenerationResult, head: int = 0) -> int | None:
    """Fill ``result`` from the closing event (``head``: as in ``_prompt_cost``); returns the
    slot that served."""
    result.completion_tokens = head + int(event.get("tokens_predicted", 0) or 0)
    _prompt_cost(event, result, head)
    stop_type = event.get("stop_type", "")
    result.finish_reason = "length" if stop_type == "limit" else "stop"
    result.stopped_by = str(event.get("stopping_word") or "") or None
    slot = event.get("id_slot")
    return int(slot) if isinstance(slot, int) else None


def _client_error(backend: Backend, exc: HttpStatusError) -> Exception:
    if "context" in exc.body and ("exceed" in exc.body or "size" in exc.body):
        return ContextOverflowError(
            f"llama-server at {backend.url} refused the prompt: {exc.body[:300]}; start it with a "
            "larger context (-c) or send fewer messages"
        )
    return ServerError(f"llama-server at {backend.url} refused the request: {exc}")
