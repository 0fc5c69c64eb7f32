"""The strict switch on llama-server: an ``auto`` call switched vs not, interleaved pairs.

    python bench/server_strict.py --tools 1 10 --reps 3

One llama-server (Qwen2.5-Coder-0.5B, ``-t 1``) and two ``ServerClient``s on it, one with
``strict_switch=True``; each rep sends the same greedy streamed ``tool_choice="auto"`` request
to both, in alternating order (the first of each pair warms nothing: the prompt is cached by
the warm-up). Reported per tool count: median wall time of each, the ratio unswitched/switched
(>1: the switch pays), whether both wrote the same text and token count, how many replies
switched, and the 1-minute load average per rep (the machine is shared: read the ratio).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import time
from typing import Any

from bench import workload
from bench.common import median, model_path
from tooldialect import ServerClient
from tooldialect.engine.llama_server import LlamaServer, find_llama_server

QUESTION = "Save a note titled Lunch saying that we meet at noon, tagged food and team."


def _call(client: ServerClient, tools: list[Any], max_tokens: int) -> tuple[float, str, int]:
    start = time.perf_counter()
    done = client.complete(
        messages=[{"role": "user", "content": QUESTION}],
        tools=tools,
        tool_choice="auto",
        temperature=0,
        max_tokens=max_tokens,
        stream=True,
    )
    for _ in done.response:
        pass
    res = done.result
    return time.perf_counter() - start, res.text, res.completion_tokens


def measure(server: LlamaServer, n_tools: int, reps: int, max_tokens: int) -> dict[str, Any]:
    tools = workload.make_tools(n_tools)
    plain = ServerClient(server.url)
    switched = ServerClient(server.url, strict_switch=True)
    _call(plain, tools, max_tokens)  # warm: the prompt is in the slot's cache
    times: dict[str, list[float]] = {"plain": [], "switched": []}
    same, loads = True, []
    for rep in range(reps):
        order = [("plain", plain), ("switched", switched)]
        out = {}
        for name, client in order if rep % 2 == 0 else order[::-1]:
            seconds, text, tokens = _call(client, tools, max_tokens)
            times[name].append(seconds)
            out[name] = (text, tokens)
        same = same and out["plain"] == out["switched"]
        loads.append(round(os.getloadavg()[0], 2))
    p, s = median(times["plain"]), median(times["switched"])
    return {
        "tools": n_tools,
        "plain_s": round(p, 3),
        "switched_s": round(s, 3),
        "plain_over_switched": round(p / s, 3),
        "same_text_and_tokens": same,
        "tokens": out["plain"][1],
        "switches": switched.engine.switches,
        "load_1m": loads,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    binary = find_llama_server()
    if binary is None:
        raise SystemExit("no llama-server binary (scripts/build_llama_server.sh)")
    server_args = ["-t", str(args.threads), "-c", "8192", "--parallel", "1"]
    with LlamaServer(model_path("qwen"), binary=binary, args=server_args) as server:
        for n in args.tools:
            print(json.dumps(measure(server, n, args.reps, args.max_tokens)), flush=True)


if __name__ == "__main__":
    main()
