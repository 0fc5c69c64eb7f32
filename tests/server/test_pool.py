"""The server engine's choice of server, retries and stream safety, against scripted servers."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tool_defs import WEATHER_BARE
from tooldialect import ServerClient, ServerError
from tooldialect.dialect.spec import DialectSpec
from tooldialect.engine.base import GenerationRequest, SamplingParams
from tooldialect.engine.llama_server.llama_server_engine import completion_body
from tooldialect.frontend.pipeline import resolve_triggers, spec_markers
from tooldialect.grammar import build_grammar
from tooldialect.tool_defs import normalize_tool_choice, normalize_tools

from .fake import FakeServer

HELLO = [{"role": "user", "content": "hi"}]


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens


def _ask(client: ServerClient, messages: list[dict[str, str]] = HELLO) -> str:
    out = client.create_chat_completion(messages=messages, temperature=0)
    assert isinstance(out, dict)
    return str(out["choices"][0]["message"]["content"])


def test_reply_and_usage_come_from_the_server() -> None:
    with FakeServer() as srv:
        client = ServerClient(srv.url)
        out = client.create_chat_completion(messages=HELLO)
        assert isinstance(out, dict)
        assert out["choices"][0]["message"]["content"] == "Hello there"
        assert out["usage"]["prompt_tokens"] == 7
        assert out["usage"]["prompt_tokens_details"]["cached_tokens"] == 4
        sent = srv.requests[0]
        assert sent["prompt"].endswith("<|im_start|>assistant\n")
        assert sent["cache_prompt"] is True and sent["stream"] is True


def test_least_busy_server_gets_the_request() -> None:
    with FakeServer() as a, FakeServer() as b:
        a.behaviour.busy_slots = 2
        client = ServerClient([a.url, b.url])
        _ask(client)
        assert (len(a.requests), len(b.requests)) == (0, 1)
        a.behaviour.busy_slots, b.behaviour.busy_slots = 0, 2
        _ask(client, [{"role": "user", "content": "another conversation entirely"}])
        assert (len(a.requests), len(b.requests)) == (1, 1)


def test_a_conversation_sticks_to_its_server_and_slot() -> None:
    with FakeServer() as a, FakeServer() as b:
        client = ServerClient([a.url, b.url])
        first = [{"role": "user", "content": "tell me about the sea, at length please"}]
        _ask(client, first)
        home = a if a.requests else b
        other = b if home is a else a
        other.behaviour.busy_slots = 0
        home.behaviour.busy_slots = 1  # busier now, but it holds the prefix
        follow = [
            *first,
            {"role": "assistant", "content": "Hello there"},
            {"role": "user", "content": "and the mountains?"},
        ]
        _ask(client, follow)
        assert len(home.requests) == 2 and not other.requests
        assert home.requests[1]["id_slot"] == 0


def test_down_and_failing_servers_are_skipped_before_the_reply_starts() -> None:
    with FakeServer() as failing, FakeServer() as good:
        failing.behaviour.status = 500
        client = ServerClient([_dead_url(), failing.url, good.url], retry_window=5)
        assert _ask(client) == "Hello there"
        assert len(failing.requests) <= 1 and len(good.requests) == 1


def test_no_server_answers_within_the_window() -> None:
    with FakeServer() as failing:
        failing.behaviour.status = 503
        client = ServerClient([failing.url], retry_window=0.5, cooldown=0.1)
        with pytest.raises(ServerError, match="no llama-server answered"):
            _ask(client)


def test_a_reply_broken_off_is_never_sent_again() -> None:
    with FakeServer() as a, FakeServer() as b:
        for srv in (a, b):
            srv.behaviour.reply = ["one", " two", " three"]
            srv.behaviour.break_after = 1
        client = ServerClient([a.url, b.url])
        chunks = client.create_chat_completion(messages=HELLO, stream=True)
        assert not isinstance(chunks, dict)
        got = []
        with pytest.raises(ServerError, match="not sent again"):
            for chunk in chunks:
                got.append(chunk)
        assert len(a.requests) + len(b.requests) == 1
        assert any(c["choices"][0]["delta"].get("content") == "one" for c in got)


def test_client_errors_are_not_retried() -> None:
    with FakeServer() as a, FakeServer() as b:
        a.behaviour.status = b.behaviour.status = 400
        client = ServerClient([a.url, b.url])
        with pytest.raises(ServerError, match="refused"):
            _ask(client)
        assert len(a.requests) + len(b.requests) == 1


TOOLS = normalize_tools([WEATHER_BARE])


@pytest.mark.parametrize("mode", ["auto", "required"])
def test_completion_body_carries_the_grammar_and_triggers(mode: str) -> None:
    spec = DialectSpec.builtin("hermes")
    grammar = build_grammar(spec, TOOLS, tool_choice=normalize_tool_choice(mode, TOOLS))
    job = GenerationRequest(
        prompt="p",
        grammar=grammar,
        triggers=resolve_triggers(grammar),
        sampling=SamplingParams(),
        max_tokens=5,
        stop=("x", "x"),
        markers=tuple(spec_markers(spec)),
    )
    body = completion_body(job)
    assert grammar is not None
    assert body["grammar"] == grammar.gbnf and body["n_predict"] == 5 and body["stop"] == ["x"]
    assert "<tool_call>" in body["preserved_tokens"]
    if mode == "auto":
        assert body["grammar_lazy"] is True
        words = [t["value"] for t in body["grammar_triggers"] if t["type"] == 1]
        assert set(words) == set(grammar.trigger_words)
        assert set(grammar.trigger_words) <= set(body["preserved_tokens"])
    else:
        assert "grammar_lazy" not in body


@pytest.mark.parametrize("name", ["hermes", "mistral-v11", "llama-3", "kimi-k2", "gpt-oss"])
def test_every_marker_of_a_spec_is_preserved(name: str) -> None:
    spec = DialectSpec.builtin(name)
    markers = spec_markers(spec)
    openers = {f.opener().strip() for f in spec.formats} - {""}
    assert openers and openers <= set(markers)
    assert all(m == m.strip() and m for m in markers)


def test_logprobs_come_from_the_servers_probabilities() -> None:
    with FakeServer() as srv:
        srv.behaviour.probs = True
        client = ServerClient(srv.url)
        out = client.create_chat_completion(messages=HELLO, logprobs=True, top_logprobs=1)
        assert isinstance(out, dict)
        logprobs = out["choices"][0]["logprobs"]
        assert logprobs is not None
        entries = logprobs["content"]
        assert [e["token"] for e in entries] == ["Hello", " there"]
        assert srv.requests[0]["n_probs"] == 1
        assert all(len(e["top_logprobs"]) == 1 for e in entries)
        plain = client.create_chat_completion(messages=HELLO)
        assert isinstance(plain, dict) and plain["choices"][0]["logprobs"] is None


def test_a_logits_processor_cannot_cross_http() -> None:
    with FakeServer() as srv, pytest.raises(ValueError, match="logits_processor"):
        ServerClient(srv.url).create_chat_completion(
            messages=HELLO, logits_processor=lambda ids, scores: scores
        )


@pytest.mark.parametrize("adds", [True, False], ids=["server-adds-bos", "server-adds-none"])
def test_a_bos_the_server_adds_itself_is_not_sent_twice(adds: bool) -> None:
    from .fake import TEMPLATE

    with FakeServer(template="{{ bos_token }}" + TEMPLATE, bos="<s>", adds_bos=adds) as srv:
        client = ServerClient(srv.url)
        _ask(client)
        sent = srv.requests[0]["prompt"]
        assert sent.startswith("<|im_start|>user") is adds
        assert sent.startswith("<s><|im_start|>user") is not adds
        assert client.prepare(messages=HELLO).prompt.startswith("<s>")  # the render keeps it


def test_invalid_utf8_from_the_server_is_replaced_and_the_reply_goes_on() -> None:
    with FakeServer() as srv:
        srv.behaviour.reply = [" end"]
        srv.behaviour.raw = [b"caf\xc3\xa9 ", b"\xe2\x82x", b"\xff ok"]
        client = ServerClient(srv.url)
        assert _ask(client) == "café \ufffdx\ufffd ok end"
        chunks: Any = client.create_chat_completion(messages=HELLO, stream=True)
        texts = [c["choices"][0]["delta"].get("content") for c in chunks]
        # the stream holds a trailing space until text follows it (the parser's whitespace
        # rule), so chunk edges move; the text, and that it arrives in pieces, do not
        assert "".join(t for t in texts if t) == "café \ufffdx\ufffd ok end"
        assert len([t for t in texts if t]) >= 3


def _hung_url() -> tuple[socket.socket, str]:
    """A server that accepts connections and never answers (a stopped process)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s, f"http://127.0.0.1:{s.getsockname()[1]}"


def test_dead_hung_and_garbled_servers_cost_a_cooldown_not_the_request() -> None:
    hung, hung_url = _hung_url()
    with hung, FakeServer() as garbled, FakeServer() as good:
        garbled.behaviour.slots_answer = b"\x00not json"
        urls = [_dead_url(), hung_url, garbled.url, good.url]
        client = ServerClient(urls, retry_window=10, cooldown=60, probe_timeout=0.5)
        for turn in range(3):
            assert _ask(client, [{"role": "user", "content": f"question {turn}"}]) == "Hello there"
        assert len(good.requests) == 3 and not garbled.requests
        down = [b.url for b in client.pool.backends if b.down_until > 0]
        assert down == urls[:3]


def test_a_server_that_went_down_after_setup_is_taken_out_of_rotation() -> None:
    with FakeServer() as a, FakeServer() as b:
        client = ServerClient([a.url, b.url], retry_window=10, cooldown=60, probe_timeout=0.5)
        _ask(client)  # both known and healthy
        a.__exit__(None, None, None)  # now refuses connections
        for turn in range(3):
            _ask(client, [{"role": "user", "content": f"next {turn}"}])
        assert len(b.requests) >= 3
        assert client.pool.backends[0].down_until > 0 and client.pool.backends[1].down_until == 0


def test_the_render_budget_and_missing_template_rules_hold_for_the_server_engine() -> None:
    from tooldialect import MissingTemplateError, RenderBudget
    from tooldialect.errors import RenderBudgetError

    hostile = "{% for i in range(100000) %}{{ i }}{% endfor %}{{ messages[0].content }}"
    with FakeServer(template=hostile) as srv:
        client = ServerClient(srv.url, render_budget=RenderBudget(max_steps=5000))
        with pytest.raises(RenderBudgetError, match="max_steps"):
            client.create_chat_completion(messages=HELLO)
        assert not srv.requests
    with FakeServer(template="") as srv:
        with pytest.raises(MissingTemplateError, match=r"ServerClient\(chat_template="):
            ServerClient(srv.url).setup()
        mine = ServerClient(srv.url, chat_template="{{ messages[0].content }}").setup()
        assert mine.template_origin == "user"


def test_each_request_reads_its_own_result() -> None:
    """Two streams open at once on one client: each ``complete`` returns its own result (a
    shared ``last_result`` named only the latest)."""
    with FakeServer() as srv:
        client = ServerClient(srv.url)
        first = client.complete(messages=HELLO, stream=True)
        srv.behaviour.reply = ["Bye"]
        second = client.complete(messages=HELLO, stream=True)
        list(second.response)
        list(first.response)
        assert (first.result.text, second.result.text) == ("Hello there", "Bye")
