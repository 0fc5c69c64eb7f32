"""The engine's incremental trigger watch on a real model: a sampler that watches the patterns
allows exactly what llama.cpp's own scan allows, token by token, through prose and a call that
arms the grammar (every builtin dialect); and a chat reply is the same on both paths."""

from __future__ import annotations

from typing import Any, cast

import pytest

from tooldialect.engine.in_process import watched_grammar
from tooldialect.engine.in_process.sampling import GrammarSampler

pytestmark = pytest.mark.model

# not tool_defs.WEATHER: the model tests here decode from a prompt with this description
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant with tools."},
    {"role": "user", "content": "What is the weather in Paris right now? Use the tool."},
]


def _reply(path: Any) -> dict[str, Any]:
    from llama_cpp import Llama

    from tooldialect.handler import ToolChatHandler

    llm = Llama(str(path), n_ctx=2048, n_threads=2, seed=0, verbose=False)
    llm.chat_handler = ToolChatHandler()
    out: Any = llm.create_chat_completion(
        messages=cast(Any, MESSAGES),
        tools=cast(Any, TOOLS),
        tool_choice="auto",
        temperature=0.0,
        max_tokens=80,
    )
    message: dict[str, Any] = out["choices"][0]["message"]
    return message


def test_an_armed_reply_is_the_same_watched_and_native(
    smollm2_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    original = watched_grammar.WatchedGrammar.create

    # the watch alone is compared with llama.cpp's scan: the switch to the strict form after the
    # trigger (which only the watched sampler makes) has its own tests (test_strict_calls)
    def counting(*args: Any, **kwargs: Any) -> GrammarSampler:
        kwargs["strict"] = None
        sampler = original(*args, **kwargs)
        made.append(type(sampler).__name__)
        return sampler

    monkeypatch.setattr(watched_grammar.WatchedGrammar, "create", counting)
    watched = _reply(smollm2_path)
    assert made and made[-1] == "WatchedGrammar", made  # the patterns were watched here

    def native(vocab: Any, grammar: Any, **kwargs: Any) -> GrammarSampler:
        kwargs.pop("piece")
        kwargs.pop("strict", None)
        return GrammarSampler(vocab, grammar, **kwargs)

    monkeypatch.setattr(watched_grammar.WatchedGrammar, "create", native)
    plain = _reply(smollm2_path)
    assert plain.get("tool_calls") == watched.get("tool_calls")
    assert plain.get("content") == watched.get("content")


# ---- token by token, against llama.cpp's own scan -------------------------------------------

CALL_TOOL = TOOLS[0]


@pytest.fixture(scope="module")
def vocab_llama(smollm2_path: Any) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), vocab_only=True, verbose=False)


def _piece(llama: Any) -> Any:
    import ctypes

    import llama_cpp

    def piece(token: int) -> bytes:
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(llama._model.vocab, token, buf, len(buf), 0, True)
        return bytes(buf.raw[: max(n, 0)])

    return piece


def _decisions(sampler: GrammarSampler, tokens: list[int], probes: list[int]) -> list[list[bool]]:
    """What the sampler allows among ``probes`` (and the next token) before each token."""
    seen = []
    for t in tokens:
        row = [sampler.allows(p) for p in [t, *probes]]
        seen.append(row)
        if not row[0]:
            break
        sampler.accept(t)
    return seen


def test_watched_sampler_allows_what_llama_cpps_scan_allows(vocab_llama: Any) -> None:
    from tooldialect import DialectSpec, build_grammar, builtin_dialects

    piece = _piece(vocab_llama)
    probes = list(range(0, 2000, 7))
    armed = watched = 0
    for sid in builtin_dialects():
        spec = DialectSpec.builtin(sid)
        grammar = build_grammar(spec, [CALL_TOOL], tool_choice="auto")
        if grammar is None or not grammar.lazy:
            continue
        patterns = grammar.lazy_patterns()
        call = spec.render_call("get_weather", {"city": "Paris"})
        text = "Let me check that for you. " * 8 + call
        tokens = vocab_llama.tokenize(text.encode(), add_bos=False, special=True)
        vocab = vocab_llama._model.vocab
        native = GrammarSampler(vocab, grammar, trigger_patterns=patterns)
        ours = watched_grammar.WatchedGrammar.create(
            vocab, grammar, trigger_tokens=[], trigger_patterns=patterns, piece=piece
        )
        watched += isinstance(ours, watched_grammar.WatchedGrammar)
        want = _decisions(native, tokens, probes)
        assert _decisions(ours, tokens, probes) == want, sid
        armed += any(not all(row) for row in want)
        native.close()
        ours.close()
    assert watched >= 3 and armed >= 3, (watched, armed)
