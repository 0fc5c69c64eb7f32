"""An ``auto`` call switches to the lazy grammar's strict form once its trigger fired.

On the SmolLM2 vocabulary (no decoding): for every builtin dialect, a rendered call after some
prose arms the watched sampler, which switches to the strict form (llama.cpp accepted the
capture) and then allows the whole call; a capture the strict form rejects keeps the lenient
grammar, and nothing aborts. On Qwen2.5-Coder (decoding): an ``auto`` call is the same with
and without the switch, with more of it forced, and streamed as it is returned whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tooldialect import ToolChatHandler
from tooldialect.engine.in_process import LlamaCppEngine, watched_grammar
from tooldialect.engine.in_process.generate import decoder_for
from tooldialect.engine.in_process.strict_sampler import seed_strict, strict_of

pytestmark = pytest.mark.model

# not tool_defs.WEATHER_DAYS: the model tests here decode from a prompt with this description
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
PROSE = "Let me check that for you. "


@pytest.fixture(scope="module")
def vocab_llama(smollm2_path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), vocab_only=True, verbose=False)


def watched(llama: Any, grammar: Any) -> Any:
    engine = decoder_for(llama)
    return watched_grammar.WatchedGrammar.create(
        llama._model.vocab,
        grammar,
        trigger_tokens=[],
        trigger_patterns=grammar.lazy_patterns(),
        piece=engine.piece,
        strict=strict_of(grammar),
    )


def feed(sampler: Any, tokens: list[int]) -> int:
    """Accept ``tokens`` while the sampler allows them; returns how many it allowed."""
    for i, t in enumerate(tokens):
        if not sampler.allows(t):
            return i
        sampler.accept(t)
    return len(tokens)


def tokens_of(llama: Any, text: str) -> list[int]:
    return [int(t) for t in llama.tokenize(text.encode(), add_bos=False, special=True)]


def test_every_builtin_switches_to_its_strict_form_and_allows_the_call(vocab_llama: Any) -> None:
    from tooldialect import DialectSpec, build_grammar, builtin_dialects

    eos = int(vocab_llama.token_eos())
    switched = lazy = 0
    for sid in builtin_dialects():
        spec = DialectSpec.builtin(sid)
        grammar = build_grammar(spec, [WEATHER], tool_choice="auto", argument_layout="canonical")
        if grammar is None or not grammar.lazy:
            continue
        lazy += 1
        call = spec.render_call("get_weather", {"city": "Paris", "days": 2})
        # after prose, or alone (formats whose trigger only fires at the start)
        for text in (PROSE * 3 + call, call):
            tokens = tokens_of(vocab_llama, text)
            sampler = watched(vocab_llama, grammar)
            assert feed(sampler, tokens) == len(tokens), sid
            done = sampler.switched is not None
            if done:
                switched += 1
                assert sampler.switched.capture.strip(), sid
                assert sampler.switched.capture.strip() in call, sid
                assert sampler.allows(eos), sid  # the strict form is complete after the call
            sampler.close()
            if done:
                break
    assert lazy >= 20 and switched == lazy, (lazy, switched)


def test_a_capture_the_strict_form_rejects_keeps_the_lenient_grammar(vocab_llama: Any) -> None:
    from tooldialect import DialectSpec, build_grammar

    grammar = build_grammar(
        DialectSpec.builtin("hermes"), [WEATHER], tool_choice="auto", argument_layout="canonical"
    )
    assert grammar is not None
    # the bare-JSON trigger captures '{ "name" :' (free whitespace no strict layout writes)
    text = '{ "name" : "get_weather", "arguments": {"city": "Paris"}}'
    tokens = tokens_of(vocab_llama, text)
    sampler = watched(vocab_llama, grammar)
    assert feed(sampler, tokens) == len(tokens)
    assert sampler.switched is None
    sampler.close()
    # the same call written canonically switches
    canonical = tokens_of(vocab_llama, '{"name": "get_weather", "arguments": {"city": "Paris"}}')
    sampler = watched(vocab_llama, grammar)
    assert feed(sampler, canonical) == len(canonical)
    assert sampler.switched is not None
    sampler.close()


def test_seeding_is_checked_by_llama_cpp(vocab_llama: Any) -> None:
    """Text before the capture in its first token is a literal in front of the strict root;
    tokens the strict form rejects give no sampler (and no abort)."""
    from tooldialect import DialectSpec, build_grammar

    grammar = build_grammar(
        DialectSpec.builtin("hermes"), [WEATHER], tool_choice="auto", argument_layout="canonical"
    )
    strict = strict_of(grammar)
    assert strict is not None
    vocab = vocab_llama._model.vocab
    good = tokens_of(vocab_llama, ' {"name": "get')
    seeded = seed_strict(vocab, strict, good, " ")
    assert seeded is not None
    assert seeded.allows(tokens_of(vocab_llama, "_")[0])
    assert not seeded.allows(tokens_of(vocab_llama, "x")[0])
    seeded.close()
    assert seed_strict(vocab, strict, good, "") is None  # ' ' is no part of the strict form
    assert seed_strict(vocab, strict, tokens_of(vocab_llama, '{"nam": '), "") is None


# ---- decoding, Qwen2.5-Coder -------------------------------------------------------------------

MESSAGES = [{"role": "user", "content": "What is the weather in Paris for the next 3 days?"}]


def _auto(llm: Any, *, stream: bool = False, strict_calls: bool = True) -> tuple[Any, Any]:
    handler = ToolChatHandler()
    engine = handler.setup(llm).engine
    assert isinstance(engine, LlamaCppEngine)
    engine.strict_calls = strict_calls
    done = handler.complete(
        llama=llm,
        messages=MESSAGES,
        tools=[WEATHER],
        tool_choice="auto",
        temperature=0,
        max_tokens=64,
        stream=stream,
    )
    out: Any = done.response
    if stream:
        chunks = list(out)
        calls: dict[int, dict[str, str]] = {}
        for c in chunks:
            for d in c["choices"][0]["delta"].get("tool_calls") or []:
                slot = calls.setdefault(d["index"], {"name": "", "arguments": ""})
                fn = d.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
        return [calls[k] for k in sorted(calls)], done.result
    message = out["choices"][0]["message"]
    parsed = [
        {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in message.get("tool_calls") or []
    ]
    return parsed, done.result


def test_an_auto_call_is_the_same_with_the_strict_form_and_more_of_it_forced(
    qwen_path: Path,
) -> None:
    from llama_cpp import Llama

    qwen = Llama(str(qwen_path), n_threads=2, n_ctx=2048, verbose=False)
    lenient, lenient_result = _auto(qwen, strict_calls=False)
    strict, strict_result = _auto(qwen)
    assert lenient and lenient[0]["name"] == "get_weather"
    assert strict == lenient
    assert strict_result.stats.forced_tokens > lenient_result.stats.forced_tokens
    streamed, _ = _auto(qwen, stream=True)
    assert streamed == strict
