"""The prompt cache across conversations: option resolution, and on a model, identical greedy
output with and without it, restored prefixes, and entries llama-cpp-python itself can load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tooldialect import ToolChatHandler
from tooldialect.engine.in_process.prompt_cache import PromptCaches, common_prefix
from tooldialect.errors import ToolDialectError


class FakeLlama:
    """Weak-referenceable stand-in with a ``cache`` attribute."""

    def __init__(self, cache: Any = None) -> None:
        self.cache = cache


class FakeCache(dict[Any, Any]):
    cache_size = 0

    # dict sets __hash__ = None; the prompt caches are keyed by cache identity
    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([], [1, 2], 0),
        ([1, 2, 3], [1, 2, 3], 3),
        ([1, 2, 3], [1, 2], 2),
        ([1, 9, 3], [1, 2, 3], 1),
        ([7], [1], 0),
    ],
    ids=["empty", "equal", "shorter", "differ-middle", "differ-first"],
)
def test_common_prefix(a: list[int], b: list[int], expected: int) -> None:
    assert common_prefix(a, b) == expected


@pytest.mark.parametrize(
    "option", ["yes", 0, -5, 1.5, object()], ids=["str", "zero", "negative", "float", "object"]
)
def test_bad_option_is_a_tooldialect_error(option: Any) -> None:
    with pytest.raises(ToolDialectError, match="prompt_cache"):
        PromptCaches(option)


def test_none_follows_llama_cache_and_false_ignores_it() -> None:
    cache = FakeCache()
    llama = FakeLlama(cache)
    assert PromptCaches(None).for_llama(llama) is cache
    assert PromptCaches(None).for_llama(FakeLlama()) is None
    assert PromptCaches(False).for_llama(llama) is None


def test_owned_caches_are_per_model_with_the_capacity_asked() -> None:
    caches = PromptCaches(12345)
    a, b = FakeLlama(), FakeLlama()
    first = caches.for_llama(a)
    assert first is caches.for_llama(a)
    assert first is not caches.for_llama(b)
    assert first.capacity_bytes == 12345
    assert PromptCaches(True).for_llama(a).capacity_bytes == 2 << 30


def test_a_cache_object_refuses_a_second_model() -> None:
    cache = FakeCache()
    caches = PromptCaches(cache)
    a = FakeLlama()
    assert caches.for_llama(a) is cache
    with pytest.raises(ToolDialectError, match="another Llama"):
        caches.for_llama(FakeLlama())


# ---- on a model --------------------------------------------------------------------------------

# not tool_defs.WEATHER: the model tests here decode from a prompt with this description
TOOLS_A = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
TOOLS_B = [
    {
        "type": "function",
        "function": {
            "name": "add_numbers",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a helpful assistant with tools."}
TURNS = [
    (TOOLS_A, "What's the weather in Paris?"),
    (TOOLS_B, "What is 2 plus 3?"),
    (TOOLS_A, "And the weather in Rome?"),
]


def run_turns(path: Path, **handler_options: Any) -> tuple[list[Any], list[int], Any]:
    from llama_cpp import Llama

    handler = ToolChatHandler(**handler_options)
    # Any: llama-cpp-python's TypedDict request types are closed; the tests send plain dicts
    llm: Any = Llama(str(path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler)
    messages, evals = [], []
    for tools, question in TURNS:
        out = llm.create_chat_completion(
            messages=[SYSTEM, {"role": "user", "content": question}],
            tools=tools,
            temperature=0,
            max_tokens=24,
        )
        message = out["choices"][0]["message"]
        messages.append(
            (
                message.get("content"),
                message.get("tool_calls") and [c["function"] for c in message["tool_calls"]],
            )
        )
        assert handler.last_result is not None
        evals.append(handler.last_result.last_prompt_eval_tokens)
    return messages, evals, llm


@pytest.mark.model
def test_cache_restores_a_returning_tool_set_and_changes_nothing(smollm2_path: Path) -> None:
    # the tool-prefix checkpoints off: they too spare the return its prefill
    # (tests/engine/test_checkpoints_models.py)
    plain, plain_evals, _ = run_turns(smollm2_path, prompt_cache=False, prefix_checkpoints=False)
    cached, cached_evals, _ = run_turns(smollm2_path, prompt_cache=True, prefix_checkpoints=False)
    assert cached == plain
    # without the cache the return to tool set A prefills the tools again ...
    assert plain_evals[2] > 0.5 * plain_evals[0]
    # ... with it only the new user turn is decoded
    assert cached_evals[2] < 0.3 * plain_evals[2]
    assert cached_evals[:2] == plain_evals[:2]


@pytest.mark.model
def test_llama_cache_is_honoured_and_entries_load_in_llama_cpp(smollm2_path: Path) -> None:
    from llama_cpp import Llama
    from llama_cpp.llama_cache import LlamaRAMCache

    handler = ToolChatHandler()
    llm: Any = Llama(
        str(smollm2_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler
    )
    cache = LlamaRAMCache(1 << 30)
    llm.set_cache(cache)
    evals = []
    for tools, question in TURNS:
        llm.create_chat_completion(
            messages=[SYSTEM, {"role": "user", "content": question}],
            tools=tools,
            temperature=0,
            max_tokens=8,
        )
        assert handler.last_result is not None
        evals.append(handler.last_result.last_prompt_eval_tokens)
    assert len(cache.cache_state) == 3
    assert evals[2] < 0.3 * evals[0]
    # llama-cpp-python's own load_state accepts our (one-row-scores) entries
    first = next(iter(cache.cache_state.values()))
    llm.load_state(first)
    assert llm.n_tokens == first.n_tokens
    # and decoding goes on from it
    after = llm.create_completion("Hello", max_tokens=4, temperature=0)
    assert after["usage"]["completion_tokens"] > 0 and after["choices"][0]["text"]
