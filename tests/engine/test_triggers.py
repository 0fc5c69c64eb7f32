"""The incremental trigger watch (engine.trigger_watch) against llama.cpp's rule: after
every piece, each full-match pattern in order over the whole text, the first that matches firing,
the grammar starting at its first non-empty group."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldialect.dialect.families.common import BARE_JSON_TRIGGER, FENCED_JSON_TRIGGER, THINK
from tooldialect.dialect.families.json_envelope import LLAMA3_TRIGGER
from tooldialect.dialect.families.python_call import PYTHONIC_TRIGGER
from tooldialect.dialect.spec import Trigger
from tooldialect.engine.trigger_watch import TriggerWatch, searchable_core
from tooldialect.grammar.build import trigger_pattern, word_pattern

NAMES = "(?:get_weather|get_time)"


def _pattern(t: Trigger, reasoning: Any = None) -> str:
    named = t.model_copy(update={"value": t.value.replace("{name}", NAMES)})
    return trigger_pattern(named, reasoning)


PATTERNS = [
    word_pattern("<tool_call>"),
    word_pattern("[TOOL_CALLS]"),
    word_pattern("<|python_tag|>"),
    _pattern(BARE_JSON_TRIGGER),
    _pattern(FENCED_JSON_TRIGGER),
    _pattern(LLAMA3_TRIGGER),
    _pattern(PYTHONIC_TRIGGER),
    _pattern(Trigger(kind="pattern", value=r"(>>>){name}\n")),
    _pattern(Trigger(kind="pattern", value=r'(\{"name": ")')),
    # not inside a reasoning block (the builder's prefix for templates that reason)
    _pattern(Trigger(kind="word", value="<tool_call>"), THINK),
    _pattern(BARE_JSON_TRIGGER, THINK),
    _pattern(PYTHONIC_TRIGGER, THINK),
]

FRAGMENTS = [
    "<tool_call>",
    "<tool",
    "_call>",
    "[TOOL_",
    "CALLS]",
    "<|python_tag|>",
    "<|python",
    "_tag|>",
    '{"name"',
    '{ "name": "get_weather"',
    '"name"',
    "{",
    '"',
    ":",
    " ",
    "\n",
    "\t",
    "```json\n",
    "[get_time(",
    "[get_",
    "time(",
    ">>>",
    ">>>get_weather\n",
    '{"name": "',
    "get_weather",
    "Sure, ",
    "the weather is fine. ",
    "é",
    "€",
    "x",
]


def reference(patterns: list[str], pieces: list[str]) -> tuple[int, int, int] | None:
    """(piece index, pattern index, capture start) of the first firing, by full matches."""
    compiled = [re.compile(p) for p in patterns]
    text = ""
    for k, piece in enumerate(pieces):
        text += piece
        for i, p in enumerate(compiled):
            m = p.fullmatch(text)
            if m is None:
                continue
            start = next((m.start(g) for g in range(1, p.groups + 1) if m.group(g)), None)
            if start is not None:
                return k, i, start
    return None


def watched(patterns: list[str], pieces: list[str]) -> tuple[int, int, int] | None:
    watch = TriggerWatch.create((), patterns)
    assert watch is not None
    for k, piece in enumerate(pieces):
        if watch.feed(1, piece):
            assert watch.pattern is not None
            return k, watch.pattern, watch.start
    return None


def test_the_builders_patterns_are_watchable() -> None:
    for p in PATTERNS:
        assert TriggerWatch.create((), [p]) is not None, p


def test_context_dependent_patterns_are_left_to_llama_cpp() -> None:
    assert searchable_core(r"^[\s\S]*?(\bfoo)[\s\S]*") is None
    assert searchable_core(r"^[\s\S]*?(\{\s*\"name\")[\s\S]*") is None  # unbounded width
    assert searchable_core(r"^[\s\S]*?(</think>)[\s\S]*?(x)[\s\S]*") is None
    assert searchable_core(r"^(x)$") is None
    assert TriggerWatch.create((), [word_pattern("a"), r"^[\s\S]*?(?<=a)(b)[\s\S]*"]) is None


@settings(max_examples=600, deadline=None)
@given(
    head=st.sampled_from(["", "<think>", " <think>", "<think>x</think>", "<thi"]),
    pieces=st.lists(
        st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map("".join),
        max_size=30,
    ),
    chosen=st.lists(st.sampled_from(range(len(PATTERNS))), min_size=1, max_size=4, unique=True),
)
def test_watch_fires_where_full_matches_fire(
    head: str, pieces: list[str], chosen: list[int]
) -> None:
    patterns = [PATTERNS[i] for i in chosen]
    pieces = [head, *pieces]
    assert watched(patterns, pieces) == reference(patterns, pieces)


def test_trigger_token_fires_first_and_capture_start_is_its_text() -> None:
    watch = TriggerWatch.create([7], [word_pattern("<tool_call>")])
    assert watch is not None
    assert not watch.feed(1, "Hello <tool")
    assert watch.feed(7, "<|tok|>")
    assert watch.pattern is None and watch.start == len("Hello <tool")
    assert not watch.feed(1, "_call>")  # fired once, stays fired


def test_first_token_is_the_one_holding_the_capture() -> None:
    watch = TriggerWatch.create((), [word_pattern("<tool_call>")])
    assert watch is not None
    for piece in ["Sure", ", <", "tool", "_call>"]:
        watch.feed(1, piece)
    assert watch.fired and watch.start == len("Sure, ")
    assert watch.first_token() == 1


def test_an_anchored_call_after_a_later_close_of_the_reasoning_block() -> None:
    # the lazy run before the close backtracks to a later close; the call is anchored there
    pattern = _pattern(BARE_JSON_TRIGGER, THINK)
    pieces = ["<think>", "a</think>", "b", "</think>", ' {"name"', ":"]
    want = reference([pattern], pieces)
    assert want is not None and want[0] == 5
    assert watched([pattern], pieces) == want


def test_a_searched_word_after_the_reasoning_block_only() -> None:
    pattern = _pattern(Trigger(kind="word", value="<tool_call>"), THINK)
    inside = ["<think>", "use <tool_call> here", "?", "</think>", "ok <tool", "_call>"]
    want = reference([pattern], inside)
    assert want is not None and want[0] == 5
    assert watched([pattern], inside) == want
