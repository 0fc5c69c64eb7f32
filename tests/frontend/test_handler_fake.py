"""ToolChatHandler's own behaviour on the scripted engine (no GGUF): OpenAI shapes, streaming,
finish reasons, ids, truncation, stop strings, reply memory and invalid UTF-8 from the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeEngine, FakeLlama, fake_handler
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect.engine.base import SamplingParams
from tooldialect.errors import GrammarError
from tooldialect.handler import ToolChatHandler

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")  # hermes: <tool_call> JSON
ASK = [{"role": "user", "content": "Weather in Paris?"}]
CALL = [
    "<tool_call>",
    '\n{"name": "get_weather",',
    ' "arguments": {"city": "Paris"}}',
    "\n</tool_call>",
]


def _collect(chunks: Any) -> tuple[str, list[tuple[str, str]], str | None, list[dict[str, Any]]]:
    from openai.types.chat import ChatCompletionChunk

    content, finish, seen = "", None, []
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
        seen.append(chunk)
        choice = chunk["choices"][0]
        content += choice["delta"].get("content") or ""
        for tc in choice["delta"].get("tool_calls") or []:
            slot = calls.setdefault(tc["index"], ["", ""])
            slot[0] += (tc.get("function") or {}).get("name") or ""
            slot[1] += (tc.get("function") or {}).get("arguments") or ""
        finish = choice["finish_reason"] or finish
    return content, [(v[0], v[1]) for _, v in sorted(calls.items())], finish, seen


def _call(handler: ToolChatHandler, llama: FakeLlama, **request: Any) -> Any:
    """The handler's reply, as the plain dicts it is (not llama-cpp-python's TypedDicts)."""
    return handler(llama=llama, **request)


def _batch(handler: ToolChatHandler, llama: FakeLlama, **request: Any) -> dict[str, Any]:
    from openai.types.chat import ChatCompletion

    out = _call(handler, llama, messages=request.pop("messages", ASK), **request)
    assert isinstance(out, dict)
    ChatCompletion.model_validate(out)
    return out


def test_plain_reply_shape_usage_and_ids() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["Sun", "ny ", "today."])
    out = _batch(handler, llama, tools=[WEATHER])
    assert out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-")
    assert out["model"] == "fake.gguf"  # the file name, not the local path
    choice = out["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Sunny today."}
    assert choice["finish_reason"] == "stop"
    assert out["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "total_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    assert handler.last_result is not None and handler.last_result.text == "Sunny today."
    again = _batch(handler, llama)
    assert again["id"] != out["id"]
    # what reached the engine: the prompt rendered with the template, the lazy grammar
    job = engine.jobs[0]
    assert job.prompt.endswith("<|im_start|>assistant\n") and "get_weather" in job.prompt
    assert job.grammar is not None and job.grammar.lazy
    assert "<tool_call>" in job.triggers.words


def test_sampling_defaults_have_one_source() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["ok"])
    _batch(handler, llama)
    sent = engine.jobs[0].sampling
    assert sent == SamplingParams(penalty_last_n=64, logit_bias={})
    _batch(handler, llama, temperature=0, top_k=3, seed=5, logit_bias={"7": -1})
    assert engine.jobs[1].sampling == SamplingParams(
        temperature=0, top_k=3, seed=5, logit_bias={7: -1.0}
    )


def test_call_batch_and_stream_agree_with_one_id_per_stream() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, CALL)
    out = _batch(handler, llama, tools=[WEATHER], tool_choice="auto")
    message, finish = out["choices"][0]["message"], out["choices"][0]["finish_reason"]
    assert finish == "tool_calls" and message["content"] is None
    (call,) = message["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "get_weather",
        {"city": "Paris"},
    )
    content, calls, sfinish, chunks = _collect(
        _call(handler, llama, messages=ASK, tools=[WEATHER], stream=True)
    )
    assert content == "" and sfinish == "tool_calls"
    assert calls == [(call["function"]["name"], call["function"]["arguments"])]
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["delta"] == {} and chunks[-1]["usage"]["completion_tokens"] == 4
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_max_tokens_cuts_a_call_and_says_length(stream: bool) -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["Let me check. ", *CALL])
    request: dict[str, Any] = {"tools": [WEATHER], "max_tokens": 3}
    if stream:
        content, calls, finish, _ = _collect(
            _call(handler, llama, messages=ASK, stream=True, **request)
        )
    else:
        choice = _batch(handler, llama, **request)["choices"][0]
        content, finish = choice["message"]["content"] or "", choice["finish_reason"]
        calls = [
            (c["function"]["name"], c["function"]["arguments"])
            for c in choice["message"].get("tool_calls") or []
        ]
    assert finish == "length"
    assert engine.jobs[-1].max_tokens == 3
    assert handler.last_result is not None and handler.last_result.completion_tokens == 3
    assert content.startswith("Let me check.")
    # a call the limit cut is never completed into valid arguments
    assert all(args != '{"city": "Paris"}' for _, args in calls)


def test_full_script_within_max_tokens_is_stop() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, ["a", "b"])
    assert _batch(handler, llama, max_tokens=5)["choices"][0]["finish_reason"] == "stop"
    assert _batch(handler, llama, max_tokens=2)["choices"][0]["finish_reason"] == "length"


def test_stop_strings_reach_the_engine_and_cut_the_reply() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["one ", "two ", "END", " three"])
    out = _batch(handler, llama, stop="END")
    assert out["choices"][0]["message"]["content"] == "one two "
    assert out["choices"][0]["finish_reason"] == "stop"
    assert engine.jobs[-1].stop[0] == "END"
    assert handler.last_result is not None and handler.last_result.stopped_by == "END"
    content, _, finish, _ = _collect(_call(handler, llama, messages=ASK, stop=["END"], stream=True))
    assert (content, finish) == ("one two ", "stop")


def test_tool_choice_none_keeps_a_call_as_text() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, CALL)
    out = _batch(handler, llama, tools=[WEATHER], tool_choice="none")
    assert out["choices"][0]["message"]["content"] == "".join(CALL)
    assert out["choices"][0]["finish_reason"] == "stop" and engine.jobs[-1].grammar is None
    content, calls, _, _ = _collect(
        _call(handler, llama, messages=ASK, tools=[WEATHER], tool_choice="none", stream=True)
    )
    assert content == "".join(CALL) and not calls


# the model's own words, with a spacing the template would never re-render
ODD_CALL = [
    "<tool_call>",
    '\n{"name":   "get_weather", "arguments":{"city":"Paris"}}',
    "\n</tool_call>",
]


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_reply_memory_renders_the_last_reply_verbatim(stream: bool) -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ODD_CALL)
    raw = "".join(ODD_CALL)
    if stream:
        chunks = list(_call(handler, llama, messages=ASK, tools=[WEATHER], stream=True))
        _, calls, _, _ = _collect(chunks)
        call_id = next(
            tc["id"]
            for c in chunks
            for tc in c["choices"][0]["delta"].get("tool_calls") or []
            if "id" in tc
        )
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": calls[0][0], "arguments": calls[0][1]},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        message = _batch(handler, llama, tools=[WEATHER])["choices"][0]["message"]
        call = message["tool_calls"][0]
    assert raw not in engine.jobs[-1].prompt
    engine.script = ["It is sunny."]
    turn2 = [*ASK, message, {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]
    _batch(handler, llama, messages=turn2, tools=[WEATHER])
    assert raw in engine.jobs[-1].prompt, "the reply is re-rendered in the model's own words"
    # and without the memory the template re-renders the call its own way
    plain, plain_llama, plain_engine = fake_handler(TEMPLATE, ["x"], verbatim_history=False)
    _batch(plain, plain_llama, messages=turn2, tools=[WEATHER])
    assert raw not in plain_engine.jobs[-1].prompt


# byte-level pieces: "café", a sequence that never completes (\xe2\x82 then "x"), a stray
# continuation byte, then a call, then an unfinished sequence at the very end
BYTES: list[str | bytes] = [
    b"caf",
    b"\xc3",
    b"\xa9 ",
    b"\xe2\x82",
    b"x",
    b"\xbf!",
    b" <tool_call>",
    b'\n{"name": "get_weather", "arguments": {"city": "Par',
    b'is"}}\n</tool_call>',
]


def test_invalid_utf8_is_replaced_and_the_reply_goes_on() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, BYTES)
    out = _batch(handler, llama, tools=[WEATHER])
    message = out["choices"][0]["message"]
    assert message["content"] == "café \ufffdx\ufffd!"
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    content, calls, finish, _ = _collect(
        _call(handler, llama, messages=ASK, tools=[WEATHER], stream=True)
    )
    assert content == message["content"] and finish == "tool_calls"
    assert calls == [("get_weather", message["tool_calls"][0]["function"]["arguments"])]


def test_utf8_streams_without_stalling_and_ends_with_replacement() -> None:
    pieces: list[str | bytes] = [b"a\xc3", b"\xa9b", b"\xff", b"c", b"\xe6\x97"]
    handler, llama, _ = fake_handler(TEMPLATE, pieces)
    deltas = [
        c["choices"][0]["delta"].get("content")
        for c in _call(handler, llama, messages=ASK, stream=True)
    ]
    texts = [d for d in deltas if d]
    # each piece's complete characters go out with that piece; only "\xc3" waits for its tail
    assert texts == ["a", "éb", "\ufffd", "c", "\ufffd"]
    assert _batch(handler, llama)["choices"][0]["message"]["content"] == "aéb\ufffdc\ufffd"


def test_bad_argument_layout_is_refused_by_both_adapters() -> None:
    from tooldialect import ServerClient

    with pytest.raises(GrammarError, match="argument_layout"):
        ToolChatHandler(argument_layout="tight")  # type: ignore[arg-type]
    with pytest.raises(GrammarError, match="argument_layout"):
        ServerClient("http://127.0.0.1:9", argument_layout="tight")  # type: ignore[arg-type]


def test_a_fake_engine_is_an_engine() -> None:
    from tooldialect.engine.base import Engine

    engine: Engine = FakeEngine(["x"])  # the protocol type-checks (mypy) and runs
    handler = ToolChatHandler()
    llama = FakeLlama(TEMPLATE)
    assert handler.setup(llama, engine=engine).engine is engine
    assert handler.setup(llama) is handler.setup(llama)


def test_the_grammar_cache_is_a_bounded_lru() -> None:
    from tooldialect.frontend.grammar_cache import GRAMMAR_CACHE_SIZE, GrammarCache

    cache = GrammarCache(capacity=2)
    cache[("a",)] = None
    cache[("b",)] = None
    assert cache[("a",)] is None  # used: "b" is now the least recent
    cache[("c",)] = None
    assert list(cache) == [("a",), ("c",)]
    handler, llama, _ = fake_handler(TEMPLATE, ["ok"])
    setup = handler.setup(llama)
    assert setup.grammars.capacity == GRAMMAR_CACHE_SIZE
    setup.grammars = GrammarCache(capacity=3)
    for i in range(5):
        tool = {"type": "function", "function": {"name": f"tool_{i}", "parameters": {}}}
        _batch(handler, llama, tools=[tool])
    assert len(setup.grammars) == 3  # one request shape each, the two oldest dropped
