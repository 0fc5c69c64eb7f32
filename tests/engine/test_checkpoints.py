"""Tool-prefix checkpoints, model-free: the LRU store's byte accounting, the option, the
front end's prefix (found by a probe render, cut to what the prompt shares) and the engine's
choice between reusing the KV cache, loading a checkpoint and saving one (a fake ``Llama``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tooldialect import ToolChatHandler
from tooldialect.engine.in_process import generate, prefill
from tooldialect.engine.in_process.checkpoints import (
    DEFAULT_CHECKPOINT_BYTES,
    MIN_PREFIX_TOKENS,
    CheckpointStores,
    PrefixCheckpoints,
    PrefixPoint,
    memory_cuts,
    prefix_key,
)
from tooldialect.errors import ToolDialectError
from tooldialect.frontend.prefix import SENTINEL, PrefixCache, shared_head, tool_prefix
from tooldialect.tool_defs import normalize_tools


@dataclass
class State:
    llama_state_size: int
    tag: str = ""


# ---- the store -----------------------------------------------------------------------------


def test_store_evicts_least_recently_used_past_its_capacity() -> None:
    store = PrefixCheckpoints(100)
    assert store.put(b"a", State(40, "a")) and store.put(b"b", State(40, "b"))
    assert store.get(b"a").tag == "a"  # a is now the most recent
    assert store.put(b"c", State(40, "c"))
    assert b"b" not in store and b"a" in store and b"c" in store
    assert store.size == 80 and len(store) == 2
    assert (store.hits, store.saves) == (1, 3)


def test_store_refuses_a_state_larger_than_its_capacity_and_keeps_the_rest() -> None:
    store = PrefixCheckpoints(100)
    store.put(b"a", State(60))
    assert not store.put(b"big", State(101))
    assert b"a" in store and store.size == 60 and store.saves == 1
    # a refused key is not worth capturing again; a kept one is not either; others are
    assert not store.wants(b"big") and not store.wants(b"a") and store.wants(b"other")


def test_store_replacing_a_key_counts_its_bytes_once() -> None:
    store = PrefixCheckpoints(100)
    store.put(b"a", State(60))
    store.put(b"a", State(70))
    assert store.size == 70 and len(store) == 1


def test_a_miss_is_none_and_no_hit() -> None:
    store = PrefixCheckpoints(10)
    assert store.get(b"x") is None and store.hits == 0


def test_prefix_key_is_the_exact_tokens() -> None:
    assert prefix_key([1, 2, 3]) == prefix_key((1, 2, 3))
    assert prefix_key([1, 2, 3]) != prefix_key([1, 2, 4])
    assert prefix_key([1, 2]) != prefix_key([1, 2, 0])


@pytest.mark.parametrize("capacity", [0, -1, True, 1.5], ids=["zero", "negative", "bool", "float"])
def test_store_capacity_must_be_positive_bytes(capacity: Any) -> None:
    with pytest.raises(ToolDialectError, match="capacity"):
        PrefixCheckpoints(capacity)


class FakeLlama:
    """Weak-referenceable stand-in."""


def test_option_gives_one_store_per_model_with_the_capacity_asked() -> None:
    stores = CheckpointStores(True)
    a, b = FakeLlama(), FakeLlama()
    first = stores.for_llama(a)
    assert first is not None and first is stores.for_llama(a)
    assert first is not stores.for_llama(b)
    assert first.capacity == DEFAULT_CHECKPOINT_BYTES
    sized = CheckpointStores(12345).for_llama(a)
    assert sized is not None and sized.capacity == 12345
    assert CheckpointStores(False).for_llama(a) is None
    assert CheckpointStores(0).for_llama(a) is None


@pytest.mark.parametrize("option", ["yes", -5, 1.5, None], ids=["str", "negative", "float", "none"])
def test_bad_option_is_a_tooldialect_error(option: Any) -> None:
    with pytest.raises(ToolDialectError, match="prefix_checkpoints"):
        ToolChatHandler(prefix_checkpoints=option)


# ---- the prefix ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("", "abc", 0), ("abc", "abcd", 3), ("abcd", "abc", 3), ("abxd", "abcd", 2), ("x", "y", 0)],
)
def test_shared_head(a: str, b: str, expected: int) -> None:
    assert shared_head(a, b) == expected


TOOLS = normalize_tools(
    [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
)
SYSTEM = {"role": "system", "content": "Be brief."}


def fake_render(messages: list[Any]) -> str:
    """A template: system turns, then the tools, then the other turns."""
    head = "".join(f"<{m['role']}>{m['content']}" for m in messages if m["role"] == "system")
    rest = "".join(f"<{m['role']}>{m['content']}" for m in messages if m["role"] != "system")
    return f"{head}<tools>f</tools>{rest}<assistant>"


def test_prefix_is_what_precedes_the_first_turn_after_the_system_turns() -> None:
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    prompt = fake_render(messages)
    cache = PrefixCache()
    head = tool_prefix(
        cache, fake_render, messages=messages, tools=TOOLS, template_kwargs={}, prompt=prompt
    )
    assert head == "<system>Be brief.<tools>f</tools><user>"
    assert prompt.startswith(head)


def test_prefix_is_rendered_once_per_tools_and_system_turns() -> None:
    calls: list[Any] = []

    def counting(messages: list[Any]) -> str:
        calls.append(messages)
        return fake_render(messages)

    cache = PrefixCache()
    for text in ("one", "two", "three"):
        messages = [SYSTEM, {"role": "user", "content": text}]
        tool_prefix(
            cache,
            counting,
            messages=messages,
            tools=TOOLS,
            template_kwargs={},
            prompt=fake_render(messages),
        )
    assert len(calls) == 1 and calls[0][-1]["content"] == SENTINEL
    other = [{"role": "system", "content": "Other."}, {"role": "user", "content": "x"}]
    tool_prefix(
        cache, counting, messages=other, tools=TOOLS, template_kwargs={}, prompt=fake_render(other)
    )
    assert len(calls) == 2


def test_prefix_is_cut_to_what_the_prompt_shares() -> None:
    # the conversation starts with an assistant turn: the probe's user opener is not shared
    messages = [SYSTEM, {"role": "assistant", "content": "hello"}]
    prompt = fake_render(messages)
    head = tool_prefix(
        PrefixCache(),
        fake_render,
        messages=messages,
        tools=TOOLS,
        template_kwargs={},
        prompt=prompt,
    )
    assert head == "<system>Be brief.<tools>f</tools><"


def test_no_tools_or_a_refused_probe_give_no_prefix() -> None:
    messages = [SYSTEM, {"role": "user", "content": "hi"}]

    def refusing(messages: list[Any]) -> str:
        from tooldialect.errors import TemplateError

        raise TemplateError("the template raised")

    args: dict[str, Any] = {"messages": messages, "template_kwargs": {}, "prompt": "x"}
    assert tool_prefix(PrefixCache(), fake_render, tools=[], **args) == ""
    assert tool_prefix(PrefixCache(), refusing, tools=TOOLS, **args) == ""


# ---- the engine's choice ---------------------------------------------------------------------


class FakeCtx:
    def __init__(self, llama: KVLlama) -> None:
        self.llama = llama
        self.ctx = None

    def kv_cache_seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        if not self.llama.can_cut:
            return False
        self.llama.kv = self.llama.kv[:p0]
        return True


class KVLlama:
    """A context as the engine's prompt decode sees it: a KV cache of tokens."""

    def __init__(self, *, can_cut: bool = True) -> None:
        self.kv: list[int] = []
        self.decoded: list[list[int]] = []
        self.can_cut = can_cut
        self._ctx = FakeCtx(self)
        self._requires_eval = False

    @property
    def _input_ids(self) -> np.ndarray:
        return np.asarray(self.kv, dtype=np.intc)

    @property
    def n_tokens(self) -> int:
        return len(self.kv)

    @n_tokens.setter
    def n_tokens(self, n: int) -> None:
        assert n == len(self.kv)

    def reset(self) -> None:
        self.kv = []

    def eval(self, tokens: list[int]) -> None:
        self.decoded.append(list(tokens))
        self.kv += tokens


class KVEngine(generate.LlamaDecoder):
    def __init__(self, llama: KVLlama, *, lazy: bool = False) -> None:
        self._fake = llama  # no vocab: only the prompt decode runs
        self._live = None
        self._cuts = lazy  # False: saved when decoded (a memory that cannot be cut)

    @property
    def llama(self) -> Any:
        return self._fake


@pytest.fixture
def states(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stands in for llama.cpp's state copy: a state is the KV's tokens."""
    log: list[str] = []

    @dataclass
    class TokensState:
        kv: list[int]
        llama_state_size: int

    def capture(llama: KVLlama) -> TokensState:
        log.append("save")
        return TokensState(list(llama.kv), 4 * len(llama.kv))

    def load(llama: KVLlama, state: TokensState) -> None:
        log.append("load")
        llama.kv = list(state.kv)

    monkeypatch.setattr(prefill, "capture_state", capture)
    monkeypatch.setattr(prefill, "load_captured", load)
    return log


PREFIX = list(range(1000, 1000 + MIN_PREFIX_TOKENS + 36))  # system + tools: 100 tokens


def point(store: PrefixCheckpoints, tokens: list[int]) -> Any:
    from tooldialect.engine.in_process.stats import LlamaCppStats

    n = len(PREFIX)
    return PrefixPoint(n, prefix_key(tokens[:n]), store, LlamaCppStats())


def test_first_prompt_saves_at_the_prefix_then_a_growing_history_reuses_the_kv(
    states: list[str],
) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama)
    first = [*PREFIX, 1, 2, 3]
    engine._decode_prompt(first, point(store, first))
    assert llama.decoded == [PREFIX, [1, 2, 3]] and states == ["save"]
    second = [*first, 4, 5]
    assert engine._decode_prompt(second, point(store, second)) == 2
    assert llama.decoded[-1] == [4, 5] and states == ["save"]  # nothing saved or loaded again


def test_a_history_cut_before_the_prefix_end_loads_the_checkpoint(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama)
    with_tools = [*PREFIX, 1, 2, 3]
    engine._decode_prompt(with_tools, point(store, with_tools))
    engine._decode_prompt([*PREFIX[:5], 7, 8], None)  # a step without tools
    again = [*PREFIX, 1, 2, 9]
    p = point(store, again)
    assert engine._decode_prompt(again, p) == 3
    assert llama.decoded[-1] == [1, 2, 9] and llama.kv == again
    assert states == ["save", "load"] and p.stats.checkpoint == "loaded" and store.hits == 1


def test_a_context_that_cannot_cut_its_memory_loads_the_checkpoint(states: list[str]) -> None:
    llama, store = KVLlama(can_cut=False), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama)
    first = [*PREFIX, 1, 2, 3]
    engine._decode_prompt(first, point(store, first))
    # the history changed after the prefix: cutting back fails, the prefix still is not decoded
    changed = [*PREFIX, 1, 5, 6]
    assert engine._decode_prompt(changed, point(store, changed)) == 3
    assert llama.decoded[-1] == [1, 5, 6] and states == ["save", "load"]


def test_a_kv_a_few_tokens_short_of_the_prefix_decodes_them_instead(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama)
    first = [*PREFIX, 1]
    engine._decode_prompt(first, point(store, first))
    engine._decode_prompt([*PREFIX[:-3], 42, 43], None)
    back = [*PREFIX, 2]
    engine._decode_prompt(back, point(store, back))
    assert llama.decoded[-1] == [*PREFIX[-3:], 2] and states == ["save"]


def test_a_prefix_too_large_to_keep_is_captured_once(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(4 * len(PREFIX) - 1)  # one byte short
    engine = KVEngine(llama)
    first = [*PREFIX, 1]
    p = point(store, first)
    engine._decode_prompt(first, p)
    assert states == ["save"] and p.stats.checkpoint == "" and len(store) == 0
    engine._decode_prompt([*PREFIX[:5], 7], None)
    again = [*PREFIX, 2]
    engine._decode_prompt(again, point(store, again))
    assert states == ["save"] and llama.decoded[-1] == again[5:]  # decoded, not captured


# ---- lazy saves: where the memory can be cut back, the prefix is saved only before it is lost


def test_a_lazy_prefix_is_saved_only_when_a_prompt_would_overwrite_it(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama, lazy=True)
    first = [*PREFIX, 1, 2, 3]
    p = point(store, first)
    engine._decode_prompt(first, p)
    grown = [*first, 4, 5]
    engine._decode_prompt(grown, point(store, grown))
    assert states == [] and p.stats.checkpoint == "kept" and len(store) == 0
    # a step without tools leaves the prefix: it is saved first, from the KV cut back to it
    assert engine._decode_prompt([*PREFIX[:5], 7, 8], None) == 2
    assert states == ["save"] and llama.kv == [*PREFIX[:5], 7, 8] and store.saves == 1
    again = [*PREFIX, 1, 9]
    p = point(store, again)
    assert engine._decode_prompt(again, p) == 2
    assert states == ["save", "load"] and p.stats.checkpoint == "loaded" and llama.kv == again


def test_a_lazy_prefix_another_prompt_overwrote_is_not_saved(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama, lazy=True)
    first = [*PREFIX, 1]
    engine._decode_prompt(first, point(store, first))
    llama.kv = [5, 6, 7]  # a plain completion in between: the KV no longer holds the prefix
    engine._decode_prompt([5, 6, 8], None)
    assert states == [] and len(store) == 0


def test_a_lazy_save_whose_cut_is_refused_saves_eagerly_from_then_on(states: list[str]) -> None:
    llama, store = KVLlama(), PrefixCheckpoints(1 << 20)
    engine = KVEngine(llama, lazy=True)
    first = [*PREFIX, 1]
    engine._decode_prompt(first, point(store, first))
    llama.can_cut = False
    engine._decode_prompt([*PREFIX[:5], 7], None)  # the cut fails: nothing saved, KV reset
    assert states == [] and llama.kv == [*PREFIX[:5], 7]
    back = [*PREFIX, 2]
    p = point(store, back)
    engine._decode_prompt(back, p)
    assert states == ["save"] and p.stats.checkpoint == "saved"


def test_a_stand_in_llama_is_not_known_to_cut_its_memory() -> None:
    assert memory_cuts(object()) is False


def test_without_a_point_the_prompt_decode_is_unchanged(states: list[str]) -> None:
    llama = KVLlama()
    engine = KVEngine(llama)
    engine._decode_prompt([1, 2, 3], None)
    assert engine._decode_prompt([1, 2, 4], None) == 1
    assert llama.kv == [1, 2, 4] and states == []
