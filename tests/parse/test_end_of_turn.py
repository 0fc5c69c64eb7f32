"""The end-of-turn marker ends the reply wherever it stands, inside an unclosed call too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import detect_dialect

TEMPLATE = (
    Path(__file__).parent.parent / "fixtures" / "templates" / "invented" / "like-qwen3.5.jinja"
)

END = ("<|im_end|>",)
UNCLOSED = (
    "Both.\n<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=g>\n<parameter=b>\ny\n</parameter>\n</function>\n<|im_end|>"
)


def _calls(out: object) -> list[tuple[str, object]]:
    return [(c.name, c.arguments) for c in out.tool_calls]  # type: ignore[attr-defined]


def _derived() -> DialectSpec:
    return detect_dialect(TEMPLATE.read_text(encoding="utf-8"), builtins=False)


def test_a_call_missing_its_closer_before_the_end_of_turn_is_read() -> None:
    spec = _derived()  # its call tail is two closers, </function>\n</tool_call>
    out = parse_output(UNCLOSED, spec, end_of_turn=END)
    assert _calls(out) == [("f", {"a": "x"}), ("g", {"b": "y"})]
    assert out.content == "Both."
    # the marker makes the cut: not known as the end of the turn, it is text inside the call
    assert _calls(parse_output(UNCLOSED, spec)) == [("f", {"a": "x"})]


def test_nothing_after_the_marker_is_read() -> None:
    text = 'Done.<|im_end|><tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    out = parse_output(text, get_builtin("hermes"), end_of_turn=END)
    assert out.tool_calls == [] and out.content == "Done."


@pytest.mark.parametrize("seed", range(8))
def test_streamed_in_random_chunks_equals_batch(seed: int) -> None:
    spec = _derived()
    batch = parse_output(UNCLOSED, spec, end_of_turn=END)
    rng = random.Random(seed)
    parser = StreamParser(spec, end_of_turn=END)
    deltas = []
    i = 0
    while i < len(UNCLOSED):
        n = rng.randint(1, 5)
        deltas += parser.feed(UNCLOSED[i : i + n])
        i += n
    deltas += parser.close()
    assert _calls(parser.result) == _calls(batch)
    assert parser.result.content == batch.content
    streamed = "".join(d.get("content", "") for d in deltas)
    assert streamed == batch.content
