"""``"auto"`` calls against plain decoding over a spread of workloads (issue 31, section 3).

    python bench/auto_spread.py --model qwen --reps 3

Each workload is one user message that asks for one call, under ``tool_choice="auto"``, with 1,
10 or 50 tools offered (the target tool first, fillers from :mod:`bench.workload` after it).
Per rep, interleaved on one warm Llama: the whole ``create_chat_completion`` (render, grammar,
decoding, parsing; the handler's defaults) and plain ``create_completion`` of as many tokens on
the same prompt tokens (end-of-generation biased away, so it decodes the whole length). Both are
timed as a user times them, from the call to its return. The ratio is plain / request: above 1
the request is faster than plain decoding of the same tokens. Reported per workload: the median
ratio, the call's tokens, the forced share, drafted tokens accepted; and the median over the
spread (target >= 1.3x).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from bench import workload
from bench.common import make_llama, median, quiet_stderr

TARGET = 1.3
MAX_TOKENS = 160


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


REMINDER = _fn(
    "set_reminder",
    "Set a reminder that shows a text after some minutes.",
    {
        "text": {"type": "string", "description": "What the reminder says."},
        "minutes": {"type": "integer", "description": "Minutes from now."},
    },
    ["text", "minutes"],
)
TICKET = _fn(
    "create_ticket",
    "Open a support ticket.",
    {
        "customer": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "email": {"type": "string"},
                "address": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
                    "required": ["city", "country"],
                },
            },
            "required": ["name", "email", "address"],
        },
        "priority": {"type": "string", "enum": ["low", "medium", "high"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    ["customer", "priority"],
)
WEATHER = _fn(
    "get_weather",
    "Current weather for a city.",
    {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    ["city"],
)


@dataclass(frozen=True)
class Workload:
    """One request shape: the target tool and the user message that asks for it."""

    name: str
    tool: dict[str, Any]
    question: str


WORKLOADS = (
    Workload(
        "short strings",
        WEATHER,
        "What's the weather in Paris in celsius? Use the tool.",
    ),
    Workload(
        "quoted sentence + integer",  # issue 31 s3's workload
        REMINDER,
        'In 45 minutes remind me: "Call the dentist and move the Thursday appointment to '
        'next week, then tell Anna about the new time." Use the tool.',
    ),
    Workload(
        "long unquoted string",
        workload.NOTE_TOOL,
        "Save a note titled Standup saying that the release moves to Friday because the "
        "payment tests still fail on the staging server, and that Maria owns the fix.",
    ),
    Workload(
        "nested objects",
        TICKET,
        "Open a high priority ticket for Jane Smith, jane.smith@example.com, who lives in "
        "Lyon, France; tag it billing and refund.",
    ),
)


def tools_for(target: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The target first, then ``n - 1`` fillers."""
    name = target["function"]["name"]
    fillers = workload.make_tools(n + 1)[1:]  # save_note first: leave out the target's name
    fillers = [t for t in fillers if t["function"]["name"] != name][: n - 1]
    return [target, *fillers]


def _request(llm: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    return llm.create_chat_completion(
        messages=messages, tools=tools, tool_choice="auto", temperature=0, max_tokens=MAX_TOKENS
    )


def _plain(llm: Any, prompt: list[int], n: int) -> float:
    """Seconds for plain ``create_completion`` of exactly ``n`` tokens on ``prompt``."""
    eos = {int(llm.token_eos()): -1e9}
    start = time.perf_counter()
    llm.create_completion(prompt, max_tokens=n, temperature=0, logit_bias=eos)
    return time.perf_counter() - start


def measure(llm: Any, handler: Any, w: Workload, n_tools: int, reps: int) -> dict[str, Any]:
    tools = tools_for(w.tool, n_tools)
    messages = [{"role": "user", "content": w.question}]
    _request(llm, messages, tools)  # warm: prompt decoded, grammar compiled
    ratios, rows = [], []
    for _ in range(reps):
        start = time.perf_counter()
        response = _request(llm, messages, tools)
        request_s = time.perf_counter() - start
        result = handler.last_result
        prompt = [int(t) for t in llm.input_ids[: result.prompt_tokens]]
        tokens = max(int(result.completion_tokens), 1)
        plain_s = _plain(llm, prompt, tokens)
        ratios.append(plain_s / request_s)
        stats = result.stats
        message = response["choices"][0]["message"]
        rows.append(
            {
                "request_s": round(request_s, 4),
                "plain_s": round(plain_s, 4),
                "tokens": tokens,
                "forced": int(stats.forced_tokens),
                "draft_proposed": int(stats.draft_proposed),
                "draft_accepted": sum(stats.draft_accepted),
                "calls": [
                    (c["function"]["name"], c["function"]["arguments"])
                    for c in message.get("tool_calls") or []
                ],
                "content": message.get("content"),
            }
        )
    first = rows[0]
    return {
        "workload": w.name,
        "tools": n_tools,
        "ratio": round(median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "tokens": first["tokens"],
        "forced_share": round(first["forced"] / first["tokens"], 3),
        "drafted_accepted": first["draft_accepted"],
        "draft_proposed": first["draft_proposed"],
        "called": [c[0] for c in first["calls"]],
        "rows": rows,
    }


def run(model: str, sizes: list[int], reps: int, *, layout: str | None = None) -> dict[str, Any]:
    from tooldialect.handler import ToolChatHandler

    options: dict[str, Any] = {} if layout is None else {"argument_layout": layout}
    handler = ToolChatHandler(**options)
    with quiet_stderr():
        llm = make_llama(model, "default", n_ctx=8192 if max(sizes) > 10 else 4096)
    llm.chat_handler = handler
    load = [round(os.getloadavg()[0], 2)]
    cells = []
    for n in sizes:
        for w in WORKLOADS:
            cells.append(measure(llm, handler, w, n, reps))
            load.append(round(os.getloadavg()[0], 2))
            c = cells[-1]
            print(
                f"# {model} {n:>2} tools  {c['workload']:<28} x{c['ratio']:.3f} {c['ratios']} "
                f"tokens={c['tokens']} forced={c['forced_share']} "
                f"drafts={c['drafted_accepted']}/{c['draft_proposed']} called={c['called']}",
                file=sys.stderr,
                flush=True,
            )
    return {
        "model": model,
        "argument_layout": layout or "default",
        "median_ratio": round(median([c["ratio"] for c in cells]), 3),
        "target": TARGET,
        "load_average_1min": load,
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--tools", nargs="+", type=int, default=[1, 10, 50])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--layout",
        choices=["free", "canonical", "natural"],
        help="argument_layout (default: the handler's)",
    )
    args = parser.parse_args(argv)
    out = run(args.model, args.tools, args.reps, layout=args.layout)
    print(f"# median over the spread: x{out['median_ratio']}", file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
