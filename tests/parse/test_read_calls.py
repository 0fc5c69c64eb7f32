"""``read_calls=False`` (``tool_choice="none"``): no call is read, batch and stream alike, under
any chunking; reasoning and answers are read as ever. Header-addressed messages (harmony) once
ignored it (the front end then streamed the raw text while the batch response split it): a
message addressed to a function now stays content, as written from its header to its end."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.parse import StreamParser, parse_output
from tooldialect.tool_defs import normalize_tools

TOOLS = normalize_tools(
    [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {}}}}]
)
CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris"}<|call|>'
)
REPLIES: dict[str, tuple[str, str, str | None, str | None]] = {
    # name: (spec, reply, content, reasoning) under read_calls=False
    "harmony-answer": (
        "gpt-oss",
        "<|channel|>analysis<|message|>They want weather.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>",
        "It is sunny.",
        "They want weather.",
    ),
    "harmony-call": (
        "gpt-oss",
        "<|channel|>analysis<|message|>Call it.<|end|>" + CALL,
        CALL,
        "Call it.",
    ),
    "harmony-answer-then-call": (
        "gpt-oss",
        "<|channel|>final<|message|>Checking.<|end|>" + CALL,
        "Checking.\n" + CALL,
        None,
    ),
    "harmony-call-cut": ("gpt-oss", CALL[:-10], CALL[:-10], None),
    "hermes-call": (
        "hermes",
        'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call>",
        'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call>",
        None,
    ),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_no_call_is_read_and_streaming_equals_batch(name: str) -> None:
    spec_id, reply, content, reasoning = REPLIES[name]
    spec = get_builtin(spec_id)
    batch = parse_output(reply, spec, tools=TOOLS, read_calls=False)
    assert (batch.content, batch.reasoning_content, batch.tool_calls) == (content, reasoning, [])
    read = parse_output(reply, spec, tools=TOOLS)
    assert bool(read.tool_calls) is ("call" in name)  # the same text with calls read
    rng = random.Random(40)
    for _ in range(40):
        parser = StreamParser(spec, tools=TOOLS, read_calls=False)
        deltas: list[dict[str, Any]] = []
        i = 0
        while i < len(reply):
            n = rng.randint(1, 7)
            deltas += parser.feed(reply[i : i + n])
            i += n
        deltas += parser.close()
        assert parser.result == batch
        assert "".join(d.get("content", "") for d in deltas) == (content or "")
        assert "".join(d.get("reasoning_content", "") for d in deltas) == (reasoning or "")
        assert not any("tool_calls" in d for d in deltas)
