"""Interrupted and exhausted generations leave nothing behind; concurrent use is serialized.

After each interruption the same ``Llama`` answers the reference request exactly as a freshly
loaded one does (temperature 0, ids aside).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import model_path
from tooldialect import EngineBusyError, ToolChatHandler
from tooldialect.engine.in_process.generate import decoder_for

pytestmark = pytest.mark.model

N_CTX = 1024
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
REFERENCE = {
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "tools": TOOLS,
    "temperature": 0.0,
    "max_tokens": 40,
}


def load(path: Path, handler: ToolChatHandler | None = None) -> Any:
    from llama_cpp import Llama

    return Llama(
        str(path),
        chat_handler=handler or ToolChatHandler(),
        n_ctx=N_CTX,
        n_threads=2,
        seed=7,
        verbose=False,
    )


def answer(llm: Any, **request: Any) -> tuple[Any, ...]:
    """The reply without its random call ids."""
    out = llm.create_chat_completion(**{**REFERENCE, **request})
    message = out["choices"][0]["message"]
    calls = [
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
    ]
    return message.get("content"), calls, out["choices"][0]["finish_reason"]


@pytest.fixture(scope="module")
def reference() -> tuple[Any, ...]:
    return answer(load(model_path("smollm2")))


@pytest.fixture(scope="module")
def llm() -> Any:
    return load(model_path("smollm2"))


def stream(llm: Any, **request: Any) -> Iterator[dict[str, Any]]:
    return iter(llm.create_chat_completion(**{**REFERENCE, "stream": True, **request}))


def break_out_of_stream(llm: Any) -> None:
    for i, _ in enumerate(stream(llm)):
        if i == 3:
            break


def consumer_raises_mid_stream(llm: Any) -> None:
    try:
        for i, _ in enumerate(stream(llm)):
            if i == 3:
                raise RuntimeError("consumer failed")
    except RuntimeError:
        pass


def keyboard_interrupt_in_piece(llm: Any) -> None:
    engine = decoder_for(llm)
    real = engine.piece
    calls = [0]

    def piece(token: int) -> bytes:
        calls[0] += 1
        if calls[0] == 4:
            raise KeyboardInterrupt
        return real(token)

    engine.piece = piece  # type: ignore[method-assign]
    try:
        answer(llm)
    except KeyboardInterrupt:
        pass
    finally:
        del engine.piece


def keyboard_interrupt_after_decode(llm: Any) -> None:
    real = llm.eval
    calls = [0]

    def eval_then_interrupt(tokens: Any) -> None:
        real(tokens)
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt

    llm.eval = eval_then_interrupt
    try:
        answer(llm)
    except KeyboardInterrupt:
        pass
    finally:
        del llm.eval


def max_tokens_inside_a_call(llm: Any) -> None:
    _, _, finish = answer(llm, tool_choice="required", max_tokens=6)
    assert finish == "length"


def context_fills_up(llm: Any) -> None:
    handler = llm.chat_handler
    base = handler.prepare(llama=llm, messages=REFERENCE["messages"], tools=TOOLS)
    used = len(decoder_for(llm).tokenize_prompt(base.prompt))
    words = " ".join(["go"] * (N_CTX - used - 12))
    messages = [{"role": "user", "content": f"Repeat forever: {words}"}]
    _, _, finish = answer(llm, messages=messages, max_tokens=None, tool_choice="none")
    assert finish == "length"


def superseded_stream(llm: Any) -> None:
    """An unfinished stream, then a new request in the same thread: the old one fails clearly."""
    old = stream(llm)
    next(old)
    next(old)
    answer(llm)
    with pytest.raises(EngineBusyError, match="close"):
        for _ in old:
            pass


INTERRUPTIONS = [
    break_out_of_stream,
    consumer_raises_mid_stream,
    keyboard_interrupt_in_piece,
    keyboard_interrupt_after_decode,
    max_tokens_inside_a_call,
    context_fills_up,
    superseded_stream,
]


@pytest.mark.parametrize("interrupt", INTERRUPTIONS, ids=[f.__name__ for f in INTERRUPTIONS])
def test_next_request_matches_a_fresh_llama(
    llm: Any, reference: tuple[Any, ...], interrupt: Any
) -> None:
    interrupt(llm)
    assert answer(llm) == reference


def test_one_handler_shared_by_two_llamas_keeps_them_apart(reference: tuple[Any, ...]) -> None:
    handler = ToolChatHandler()
    path = model_path("smollm2")
    a, b = load(path, handler), load(path, handler)
    assert handler.setup(a) is not handler.setup(b)
    assert handler.setup(a).engine is not handler.setup(b).engine
    other = {"messages": [{"role": "user", "content": "Say hello."}], "tool_choice": "none"}
    first = answer(a)
    answer(b, **other)
    break_out_of_stream(b)
    assert answer(a) == first == reference
    assert answer(b, **other) == answer(load(path), **other)


def test_two_threads_on_one_llama_are_serialized(llm: Any, reference: tuple[Any, ...]) -> None:
    results: list[Any] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(answer(llm))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert results == [reference] * 3


def test_a_thread_waits_for_another_threads_open_stream(
    llm: Any, reference: tuple[Any, ...]
) -> None:
    """An open stream holds the Llama; another thread's request runs once it is closed."""
    chunks = stream(llm)
    for chunk in chunks:  # the first chunks (the role) may come before decoding starts
        delta = chunk["choices"][0]["delta"]
        if delta.get("content") or delta.get("tool_calls"):
            break
    done = threading.Event()
    box: list[Any] = []

    def worker() -> None:
        box.append(answer(llm))
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    assert not done.wait(1.0)  # blocked behind the open stream, not interleaved with it
    list(chunks)  # the stream finishes undisturbed
    thread.join(600)
    assert box == [reference]
