"""The llama-server strict switch without a model: the continuation grammar, when the watch
switches, and the fallbacks (the strict form rejects the capture; text held back; logprobs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grammar_check import grammar_accepts
from server.fake import FakeServer
from tool_defs import WEATHER_DAYS
from tooldialect.dialect.spec import DialectSpec
from tooldialect.engine.base import GenerationRequest, Triggers
from tooldialect.engine.llama_server.llama_server_engine import LlamaServerEngine, completion_body
from tooldialect.engine.llama_server.pool import ServerPool
from tooldialect.engine.llama_server.strict_switch import SwitchWatch
from tooldialect.grammar import build_grammar
from tooldialect.grammar.forced import GbnfAutomaton, continuation_gbnf

LENIENT = 'call ::= "<c>" ws "{" ws "\\"n\\":" ws [a-z]+ ws "}" ws "</c>"\nws ::= [ \\n]*\n'
STRICT = 'strict ::= "<c>" "{" "\\"n\\":" " " [a-z]+ "}" "</c>"\n'


@dataclass(frozen=True)
class Grammar:
    gbnf: str = LENIENT
    root: str = "call"
    lazy: bool = True
    trigger_words: tuple[str, ...] = ("<c>",)
    trigger_patterns: tuple[str, ...] = ()
    strict_gbnf: str = STRICT
    strict_root: str = "strict"


def _accepts(gbnf: str, root: str, text: str) -> bool:
    auto = GbnfAutomaton(gbnf, root)
    return auto.feed(text) and () in auto._stacks


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        ("<c>", '{"n": ab}</c>'),
        ("<c>{", '"n": x}</c>'),
        ('<c>{"n": a', "b}</c>"),
        ("<c>", '{"n":ab}</c>'),  # not the strict layout: the continuation rejects it too
        ("<c>", '{"n": }</c>'),
    ],
)
def test_the_continuation_accepts_what_the_grammar_accepts_after_the_head(
    head: str, tail: str
) -> None:
    cont = continuation_gbnf(STRICT, "strict", head)
    assert cont is not None
    assert _accepts(cont, "root", tail) == _accepts(STRICT, "strict", head + tail)


def test_no_continuation_after_text_the_grammar_rejects() -> None:
    assert continuation_gbnf(STRICT, "strict", "<c> {") is None
    assert continuation_gbnf(STRICT, "strict", "<d>") is None


def _request(**kw: Any) -> GenerationRequest:
    grammar = Grammar(**kw)
    return GenerationRequest(
        prompt="PROMPT",
        grammar=grammar,
        triggers=Triggers(words=grammar.trigger_words),
        max_tokens=20,
        stop=("<end>",),
    )


def _events(pieces: list[str]) -> list[dict[str, Any]]:
    return [
        {"content": p, "tokens": [100 + i], "tokens_predicted": i + 1, "stop": False}
        for i, p in enumerate(pieces)
    ]


def _watch(request: GenerationRequest) -> SwitchWatch:
    watch = SwitchWatch.create(request, completion_body(request))
    assert watch is not None
    return watch


def test_the_watch_switches_once_the_trigger_completes() -> None:
    watch = _watch(_request())
    results = [watch.feed(e) for e in _events(["Sure", ". <", "c>{"])]
    assert results[:2] == [None, None]
    cont = results[2]
    assert cont is not None and watch.done
    assert cont.tokens == 3
    assert cont.strict["prompt"] == ["PROMPT", 100, 101, 102]
    assert cont.strict["n_predict"] == 17 and cont.strict["stop"] == ["<end>"]
    assert "grammar_lazy" not in cont.strict and "grammar_triggers" not in cont.strict
    # the capture was "<c>{": what may follow it in each form
    assert _accepts(cont.strict["grammar"], "root", '"n": ab}</c>')
    assert not _accepts(cont.strict["grammar"], "root", ' "n": ab}</c>')
    assert _accepts(cont.lenient["grammar"], "root", ' "n": ab }</c>')


def test_no_switch_when_the_strict_form_rejects_the_capture() -> None:
    # the token completing the trigger brought a space: the lenient grammar accepts the
    # capture, the strict form does not, so the first stream goes on under the lazy grammar
    watch = _watch(_request())
    assert [watch.feed(e) for e in _events(["ok", "<c> {"])] == [None, None]
    assert watch.done  # one decision per reply: nothing more is watched
    assert all(watch.feed(e) is None for e in _events(["<c>", " {", "<c>{"]))


def test_no_switch_where_the_server_held_text_back_or_missed_a_token() -> None:
    held = _watch(_request())
    events = _events(["a", "", "<c>{"])
    assert [held.feed(e) for e in events] == [None, None, None] and held.done
    missed = _watch(_request())
    events = _events(["a", "<c>{"])
    events[1]["tokens_predicted"] = 3
    assert [missed.feed(e) for e in events] == [None, None]


def test_no_switch_at_the_last_token_or_before_a_stop_string() -> None:
    late = GenerationRequest(
        prompt="P", grammar=Grammar(), triggers=Triggers(words=("<c>",)), max_tokens=2
    )
    watch = _watch(late)
    assert [watch.feed(e) for e in _events(["x", "<c>"])] == [None, None]
    stop = GenerationRequest(
        prompt="P", grammar=Grammar(), triggers=Triggers(words=("<c>",)), stop=("{x",)
    )
    watch = _watch(stop)
    assert watch.feed(_events(["<c>{"])[0]) is None


def test_nothing_is_watched_without_a_strict_form_or_with_logprobs() -> None:
    assert SwitchWatch.create(_request(strict_gbnf=""), {}) is None
    assert SwitchWatch.create(_request(lazy=False), {}) is None
    with_probs = GenerationRequest(
        prompt="P", grammar=Grammar(), triggers=Triggers(words=("<c>",)), logprobs=0
    )
    assert SwitchWatch.create(with_probs, completion_body(with_probs)) is None


def _engine(srv: FakeServer) -> LlamaServerEngine:
    return LlamaServerEngine(ServerPool([srv.url]), strict_switch=True, retry_window=2.0)


def test_a_switched_reply_goes_on_in_a_second_request_counted_as_one() -> None:
    with FakeServer() as srv:
        srv.behaviour.reply = ["Sure", " <c>{", '"n"', "NEVER SENT"]
        srv.behaviour.continuation = ['"n": ', "ab", "}</c>"]
        engine = _engine(srv)
        gen = engine.run(_request())
        assert gen.text() == 'Sure <c>{"n": ab}</c>'
        assert engine.switches == 1
        first, second = srv.requests
        assert first["grammar_lazy"] and first["return_tokens"]
        assert second["prompt"] == ["PROMPT", 1000, 1001] and second["n_predict"] == 18
        assert second["grammar"] == continuation_gbnf(STRICT, "strict", "<c>{")
        assert gen.result.completion_tokens == 2 + 3
        assert gen.result.prompt_tokens == 7 - 2 and gen.result.finish_reason == "stop"


def test_the_lenient_continuation_goes_on_where_the_server_refuses_the_strict_one() -> None:
    strict = continuation_gbnf(STRICT, "strict", "<c>")
    with FakeServer() as srv:
        srv.behaviour.reply = ["<c>", "NEVER SENT"]
        srv.behaviour.continuation = [' { "n": ab }', "</c>"]
        srv.behaviour.refuse = lambda body: body.get("grammar") == strict
        engine = _engine(srv)
        gen = engine.run(_request())
        assert gen.text() == '<c> { "n": ab }</c>'
        assert [r["grammar"] for r in srv.requests[1:]] == [
            strict,
            continuation_gbnf(LENIENT, "call", "<c>"),
        ]
        assert gen.result.completion_tokens == 1 + 2


def test_a_reply_whose_capture_the_strict_form_rejects_is_one_request() -> None:
    with FakeServer() as srv:
        srv.behaviour.reply = ["<c> {", ' "n": ab', " }</c>"]
        engine = _engine(srv)
        gen = engine.run(_request())
        assert gen.text() == '<c> { "n": ab }</c>'
        assert len(srv.requests) == 1 and engine.switches == 0
        assert gen.result.completion_tokens == 3


SPECS = ["hermes", "mistral-v11", "llama-3", "kimi-k2", "gpt-oss", "qwen3-coder"]
WEATHER = [WEATHER_DAYS]


def _strict_call(name: str) -> tuple[Any, str]:
    spec = DialectSpec.builtin(name)
    grammar = build_grammar(spec, WEATHER, tool_choice="auto", argument_layout="canonical")
    assert grammar is not None and grammar.strict_gbnf
    text = spec.render_call("get_weather", {"city": "Paris", "days": 3}).lstrip()
    assert _accepts(grammar.strict_gbnf, grammar.strict_root, text)
    return grammar, text


@pytest.mark.parametrize("name", SPECS)
def test_a_builder_grammars_continuation_accepts_the_rest_of_a_call_at_every_cut(
    name: str,
) -> None:
    grammar, text = _strict_call(name)
    for cut in range(1, len(text)):
        cont = continuation_gbnf(grammar.strict_gbnf, grammar.strict_root, text[:cut])
        assert cont is not None, text[:cut]
        assert _accepts(cont, "root", text[cut:]), (text[:cut], text[cut:])
        assert not _accepts(cont, "root", text[cut:] + "\x01")


@pytest.mark.model
@pytest.mark.parametrize("name", SPECS)
def test_llama_cpp_reads_the_continuation_as_the_automaton_does(name: str, qwen_path: Path) -> None:
    import llama_cpp

    llama = llama_cpp.Llama(str(qwen_path), vocab_only=True, verbose=False)
    grammar, text = _strict_call(name)
    for cut in sorted({1, len(text) // 3, len(text) // 2, len(text) - 1}):
        cont = continuation_gbnf(grammar.strict_gbnf, grammar.strict_root, text[:cut])
        assert cont is not None
        assert grammar_accepts(cont, text[cut:], llama=llama)
        for bad in ("\x01" + text[cut:], text[cut:] + "\x01"):
            # llama.cpp and the automaton agree on a tail cut by a stray character
            viable = GbnfAutomaton(cont, "root").feed(bad)
            assert grammar_accepts(cont, bad, llama=llama, complete=False) == viable
