"""What steering costs the front end per piece, with no model: the same replies through
``ToolChatHandler()`` and ``ToolChatHandler(steer_calls=False)`` on a scripted engine, as ratios
in one run (issue 38: decode speed unchanged).

The replies are Qwen2.5's (hermes): a prose answer of ``--words`` words streamed a word a piece,
and one call in the template's format streamed in 3-character pieces, each with and without an
answered call in the conversation. Reported: microseconds of front-end work per piece, steered
and not, and their ratio. A decoded token on the test models costs 8-60 ms on these CPUs, so the
absolute difference per piece is what to hold against it.

    .venv/bin/python bench/steering_overhead.py [--words 2000] [--repeats 5]
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import argparse
import time
from typing import Any

from bench.common import machine

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ANSWERED: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "7 C, sleet"},
]
FIRST: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]


def workloads(words: int) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    prose = [f"word{i} " for i in range(words)]
    call = [CALL[i : i + 3] for i in range(0, len(CALL), 3)]
    return {
        "prose, first turn": (prose, FIRST),
        "prose, after a result": (prose, ANSWERED),
        "call, first turn": (call, FIRST),
        "call, after a result": (call, ANSWERED),
    }


def seconds(pieces: list[str], messages: list[dict[str, Any]], *, steer: bool) -> float:
    """One streamed reply through the whole front end (prompt, grammar, parser, chunks)."""
    from conftest import read_template  # type: ignore[import-not-found]
    from fake_engine import fake_handler  # type: ignore[import-not-found]

    handler, llama, _ = fake_handler(
        read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"), pieces, steer_calls=steer
    )
    handler(llama=llama, messages=messages, tools=[WEATHER])  # warm: template, grammar caches
    started = time.perf_counter()
    for _ in handler(llama=llama, messages=messages, tools=[WEATHER], stream=True):
        pass
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print("| reply | pieces | not steered (us/piece) | steered (us/piece) | ratio |")
    print("|---|---|---|---|---|")
    for label, (pieces, messages) in workloads(args.words).items():
        off = min(seconds(pieces, messages, steer=False) for _ in range(args.repeats))
        on = min(seconds(pieces, messages, steer=True) for _ in range(args.repeats))
        per = 1e6 / len(pieces)
        print(f"| {label} | {len(pieces)} | {off * per:.0f} | {on * per:.0f} | {on / off:.2f}x |")


if __name__ == "__main__":
    main()
