"""The server engine against real llama-server processes on loopback, with the small models.

Skips with the build command when no llama-server binary is found (see
``scripts/build_llama_server.sh``).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tooldialect import ServerClient, ToolChatHandler
from tooldialect.engine.llama_server import LlamaServer, find_llama_server
from tooldialect.engine.llama_server.launch import BUILD_HINT
from tooldialect.shapes import ChatCompletion, ChatCompletionChunk

pytestmark = pytest.mark.model

# one thread: llama.cpp threads spin-wait, so two on a busy 2-core box crawl
ARGS = ["-t", "1", "-c", "4096", "--parallel", "2"]
# not tool_defs.WEATHER: the model tests here decode from a prompt with this description
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a timezone",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]


def _binary() -> Path:
    found = find_llama_server()
    if found is None:
        pytest.skip(f"no llama-server binary; build or copy one with `{BUILD_HINT}`")
    return found


@pytest.fixture(scope="module")
def qwen_server(qwen_path: Path) -> Iterator[LlamaServer]:
    with LlamaServer(qwen_path, binary=_binary(), args=ARGS) as server:
        yield server


def _complete(client: ServerClient, **request: Any) -> ChatCompletion:
    out = client.create_chat_completion(temperature=0, max_tokens=60, **request)
    assert isinstance(out, dict)
    return out


def iter_chunks(out: ChatCompletion | Iterator[ChatCompletionChunk]) -> Iterator[Any]:
    assert not isinstance(out, dict), "a stream was asked for"
    return out


def _reassemble(chunks: Iterator[dict[str, Any]]) -> tuple[str, list[tuple[str, Any]], str]:
    content, finish = "", ""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        choice = chunk["choices"][0]
        delta = choice["delta"]
        content += delta.get("content") or ""
        for tc in delta.get("tool_calls") or []:
            slot = calls.setdefault(tc["index"], {"name": "", "arguments": ""})
            fn = tc.get("function") or {}
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""
        finish = choice["finish_reason"] or finish
    return (
        content,
        [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())],
        finish,
    )


def _calls(out: ChatCompletion) -> list[tuple[str, Any]]:
    msg = out["choices"][0]["message"]
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in msg.get("tool_calls") or []
    ]


@pytest.mark.parametrize(
    "choice",
    ["required", {"type": "function", "function": {"name": "get_time"}}, "auto"],
    ids=["required", "named", "auto"],
)
def test_tool_choice(qwen_server: LlamaServer, choice: Any) -> None:
    client = ServerClient(qwen_server.url)
    out = _complete(client, messages=ASK, tools=[WEATHER, TIME], tool_choice=choice)
    calls = _calls(out)
    if choice == "auto":
        # Qwen2.5-Coder calls here; the lazy grammar then keeps the call valid
        assert calls and calls[0][0] in ("get_weather", "get_time")
    elif isinstance(choice, dict):
        assert [name for name, _ in calls] == ["get_time"] * len(calls) and calls
        assert isinstance(calls[0][1]["timezone"], str)
    else:
        assert calls and isinstance(calls[0][1].get("city", calls[0][1].get("timezone")), str)
    assert out["choices"][0]["finish_reason"] == "tool_calls"


def test_streaming_equals_non_streaming(qwen_server: LlamaServer) -> None:
    client = ServerClient(qwen_server.url)
    request: dict[str, Any] = {"messages": ASK, "tools": [WEATHER, TIME], "tool_choice": "required"}
    # both from a slot that holds the prompt: llama.cpp's logits differ in the last bits between a
    # cold and a cached prefill, which can flip a greedy near-tie
    _complete(client, **request)
    batch = _complete(client, **request)
    stream = client.create_chat_completion(temperature=0, max_tokens=60, stream=True, **request)
    content, calls, finish = _reassemble(iter_chunks(stream))
    assert calls == _calls(batch)
    assert finish == batch["choices"][0]["finish_reason"]
    assert content == (batch["choices"][0]["message"]["content"] or "")


def test_tool_result_turn_reuses_the_slot(qwen_server: LlamaServer) -> None:
    client = ServerClient(qwen_server.url)
    first = _complete(client, messages=ASK, tools=[WEATHER], tool_choice="required")
    msg = first["choices"][0]["message"]
    call = msg["tool_calls"][0]
    turn2 = [
        *ASK,
        msg,
        {"role": "tool", "tool_call_id": call["id"], "content": '{"temp_c": 18, "sky": "clear"}'},
    ]
    second = _complete(client, messages=turn2, tools=[WEATHER])
    answer = second["choices"][0]["message"]
    assert answer.get("tool_calls") or answer["content"]
    usage = second["usage"]
    # the prefix (system, tools, question, call) came from the slot's prompt cache
    assert usage["prompt_tokens_details"]["cached_tokens"] >= first["usage"]["prompt_tokens"] - 2


def test_prompt_and_grammar_are_the_in_process_ones(
    qwen_server: LlamaServer, qwen_path: Path
) -> None:
    from llama_cpp import Llama

    llama = Llama(str(qwen_path), vocab_only=True, verbose=False)
    handler = ToolChatHandler()
    client = ServerClient(qwen_server.url)
    for choice in ("auto", "required"):
        local = handler.prepare(llama=llama, messages=ASK, tools=[WEATHER], tool_choice=choice)
        remote = client.prepare(messages=ASK, tools=[WEATHER], tool_choice=choice)
        assert remote.prompt == local.prompt
        assert remote.setup.spec == local.setup.spec
        assert remote.grammar is not None and local.grammar is not None
        assert remote.grammar.gbnf == local.grammar.gbnf


def test_two_servers_one_killed_mid_run(smollm2_path: Path) -> None:
    binary = _binary()
    with (
        LlamaServer(smollm2_path, binary=binary, args=ARGS) as a,
        LlamaServer(smollm2_path, binary=binary, args=ARGS) as b,
    ):
        client = ServerClient([a.url, b.url], retry_window=20, cooldown=30)
        convo: list[Mapping[str, Any]] = [{"role": "user", "content": "Say hello to Ada."}]
        out = _complete(client, messages=convo)
        convo += [out["choices"][0]["message"], {"role": "user", "content": "And to Bob?"}]
        holder = next(be for be in client.pool.backends if be.held)
        (a if holder.url == a.url else b).kill()
        out2 = _complete(client, messages=convo)  # goes to the survivor, no error
        assert out2["choices"][0]["message"]["content"]
        survivor = next(be for be in client.pool.backends if be.url != holder.url)
        assert survivor.held and not holder.held


def test_a_killed_and_a_stopped_server_cost_no_request(smollm2_path: Path) -> None:
    """One server killed (SIGKILL) and one stopped (SIGSTOP) before the next request: the
    /slots probe finds the first refusing and the second silent, both sit out their cooldown,
    and the three following requests are served by the third."""
    binary = _binary()
    with (
        LlamaServer(smollm2_path, binary=binary, args=ARGS) as a,
        LlamaServer(smollm2_path, binary=binary, args=ARGS) as b,
        LlamaServer(smollm2_path, binary=binary, args=ARGS) as c,
    ):
        client = ServerClient(
            [a.url, b.url, c.url], retry_window=20, cooldown=60, probe_timeout=1.0
        )
        hello = [{"role": "user", "content": "Say hi."}]
        assert client.create_chat_completion(messages=hello, temperature=0, max_tokens=2)
        assert b.process is not None
        a.kill()
        os.kill(b.process.pid, signal.SIGSTOP)
        try:
            for name in ("Ada", "Bob", "Cy"):
                ask = [{"role": "user", "content": f"Write the name {name}."}]
                out = client.create_chat_completion(messages=ask, temperature=0, max_tokens=3)
                assert isinstance(out, dict) and out["choices"][0]["message"]["role"]
                assert out["usage"]["completion_tokens"] >= 1
            dead, stopped, alive = client.pool.backends
            assert dead.down_until > 0 and stopped.down_until > 0 and alive.down_until == 0
            assert alive.held and not dead.held and not stopped.held
        finally:
            os.kill(b.process.pid, signal.SIGCONT)


CITY = {
    "type": "json_schema",
    "json_schema": {
        "name": "City",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["city", "population"],
        },
    },
}


def test_structured_output(qwen_server: LlamaServer) -> None:
    client = ServerClient(qwen_server.url)
    ask = [{"role": "user", "content": "The biggest city of France and its population, as JSON."}]
    _complete(client, messages=ask, response_format=CITY)  # warm the slot (see above)
    batch = _complete(client, messages=ask, response_format=CITY)
    content = batch["choices"][0]["message"]["content"]
    assert content is not None
    value = json.loads(content)  # bare JSON, no fences
    assert set(value) == {"city", "population"} and isinstance(value["population"], int)
    stream = client.create_chat_completion(
        messages=ask, response_format=CITY, temperature=0, max_tokens=60, stream=True
    )
    streamed, calls, _ = _reassemble(iter_chunks(stream))
    assert streamed == content and not calls


def test_logprobs(qwen_server: LlamaServer) -> None:
    client = ServerClient(qwen_server.url)
    out = _complete(
        client, messages=ASK, tools=[WEATHER], tool_choice="required", logprobs=True, top_logprobs=3
    )
    logprobs = out["choices"][0]["logprobs"]
    assert logprobs is not None
    entries = logprobs["content"]
    assert len(entries) == out["usage"]["completion_tokens"]
    assert all(e["logprob"] <= 0 and len(e["top_logprobs"]) == 3 for e in entries)
    assert "".join(e["token"] for e in entries).strip().startswith("<tool_call>")


# a template that handles tools, carries no builtin's signature and never renders a call: only
# the vocabulary (Qwen's special <tool_call>) can tell the wire format
UNSIGNED = (
    "{% if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_the_vocabulary_is_the_same_evidence_on_both_engines(
    qwen_server: LlamaServer, qwen_path: Path
) -> None:
    from llama_cpp import Llama

    from tooldialect.dialect.vocabulary import Vocabulary, marker_candidates
    from tooldialect.engine.llama_server.vocab import probe_vocabulary
    from tooldialect.frontend.pipeline import spec_markers
    from tooldialect.verify import detect_dialect

    llama = Llama(str(qwen_path), vocab_only=True, verbose=False)
    local = Vocabulary.from_llama(llama)
    # launched here: the GGUF itself; by URL: the file /props names, checked; else the probe
    launched = ServerClient(qwen_server).setup().vocabulary
    by_url = ServerClient(qwen_server.url).setup().vocabulary
    assert launched == by_url == Vocabulary.from_gguf(qwen_path)
    template = ServerClient(qwen_server.url).setup().template.source
    candidates = marker_candidates(template)
    probed = probe_vocabulary(qwen_server.url, template)
    assert launched is not None and probed.byte_level and local.byte_level
    # the three readings agree on every marker detection asks about
    for vocab in (launched, probed):
        assert {c for c in candidates if vocab.has_special(c)} == {
            c for c in candidates if local.has_special(c)
        }
    assert {"<tool_call>", "</tool_call>", "<|im_start|>"} <= probed.special
    for vocab in (launched, probed):
        handler = ToolChatHandler(chat_template=UNSIGNED)
        client = ServerClient(qwen_server.url, chat_template=UNSIGNED, vocabulary=vocab)
        local_spec = handler.setup(llama).spec
        remote = client.setup().spec
        assert remote == local_spec and remote.id != detect_dialect(UNSIGNED).id
        assert "<tool_call>" in remote.primary.opener()
        assert spec_markers(remote, vocab) == spec_markers(local_spec, local)


def test_the_call_or_answer_choice_is_the_front_ends(smollm2_path: Path) -> None:
    """Tools and a schema under ``"auto"`` over HTTP: the model's free start is read by the same
    front end (``frontend.call_or_answer``), so SmolLM2's prose answer becomes the schema's
    JSON, not a call, as in process (tests/frontend/test_structured_reasoning_models.py)."""
    forecast = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature_c": {"type": "integer"}},
        "required": ["city", "temperature_c"],
    }
    ask = "Yesterday Rome was 20 C; today it is 3 degrees warmer. What is it today in Rome?"
    with LlamaServer(smollm2_path, binary=_binary(), args=ARGS) as server:
        client = ServerClient(server.url)
        out = _complete(
            client,
            messages=[{"role": "user", "content": ask}],
            tools=[WEATHER],
            tool_choice="auto",
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Forecast", "schema": forecast},
            },
        )
    message = out["choices"][0]["message"]
    assert not message.get("tool_calls"), message
    answer = json.loads(message["content"] or "")
    assert set(answer) == {"city", "temperature_c"} and answer["city"] == "Rome"
