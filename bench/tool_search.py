"""Tool search against offering every tool (issue 31, section 2): 250 tools, an ``Agent``.

    python bench/tool_search.py --bfcl 4 --tools 250 --out bench/results/tool-search.json

One tool set of ``--tools`` tools: the functions of ``--bfcl`` BFCL ``multiple`` cases (an evenly
spread sample), the 34 tools of reference MCP servers (``bench/mcp_catalog.py``), and BFCL
functions of other cases as distractors, shuffled with a fixed seed. The cases: those BFCL
requests, and the four requests of ``MCP_CASES``. Each runs as a new conversation of one
``Agent`` over the whole set, on Qwen2.5-Coder-0.5B, temperature 0, twice:

* ``all``: ``tool_search=False``, every tool offered (a prompt of about 29k tokens);
* ``search``: ``tool_search=True``, the model offered ``tool_search`` and what it finds.

Each mode gets a fresh ``Llama``, so its first case is cold (nothing cached) and the later ones
find the tool prefix in the KV cache. Per case: the first step's time to first token (the prompt
decoded: the end of the ``llm.eval`` batch that completes the step's uncached prompt), the agent
time until the step that made a call other than a search ends (tools are stubs: the call is the
task), whether the right tool was called, and (BFCL) whether BFCL's AST checker accepts the
calls. ``break_even_tools``: the tool count below which offering every tool is the faster first
step, on a linear model of the measured per-tool prefill (see :func:`break_even`).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import random
import time
from typing import Any

from bench import bfcl_data, workload
from bench.bfcl_score import score
from bench.common import machine, make_llama, median, quiet_stderr, write_json
from bench.mcp_catalog import MCP_CASES, mcp_catalog

SYSTEM = "You are a helpful assistant. Use the tools to do what the user asks."


def tool_set(
    cases: list[bfcl_data.Case], n_tools: int, *, bfcl_distractors: int = 20, seed: int = 0
) -> list[dict[str, Any]]:
    """The cases' functions, the MCP catalog, ``bfcl_distractors`` BFCL functions of other
    cases, and ``bench.workload``'s record tools up to ``n_tools`` (BFCL's functions are about
    146 tokens each: 250 of them overflow Qwen2.5's 32k context; the record tools about 115)."""
    chosen: dict[str, dict[str, Any]] = {}
    for t in [*(t for c in cases for t in c.tools()), *mcp_catalog()]:
        chosen.setdefault(t["function"]["name"], t)
    ids = {c.id for c in cases}
    others = [
        t
        for category in ("multiple", "simple_python")
        for c in bfcl_data.load_category(category)
        if c.id not in ids
        for t in c.tools()
    ]
    random.Random(seed).shuffle(others)
    budget = len(chosen) + bfcl_distractors
    for t in [*others, *workload.make_tools(n_tools)]:
        if len(chosen) >= n_tools:
            break
        if len(chosen) < budget or t not in others:
            chosen.setdefault(t["function"]["name"], t)
    tools = list(chosen.values())
    random.Random(seed + 1).shuffle(tools)
    return tools


def stub_tools(defs: list[dict[str, Any]]) -> list[Any]:
    """``Tool`` s of these definitions that accept any arguments and report success."""
    from pydantic import ConfigDict, create_model

    from tooldialect import Tool
    from tooldialect.tool_defs import normalize_tools

    model = create_model("AnyArguments", __config__=ConfigDict(extra="allow"))

    def done(**_: Any) -> str:
        return '{"status": "done"}'

    return [Tool(done, d, model) for d in normalize_tools(defs)]


class EvalClock:
    """When each ``llm.eval`` batch ended and its size, from :meth:`start` on."""

    def __init__(self, llm: Any) -> None:
        self.batches: list[tuple[float, int]] = []
        original = llm.eval

        def timed(tokens: Any) -> Any:
            out = original(tokens)
            self.batches.append((time.perf_counter(), len(tokens)))
            return out

        llm.eval = timed

    def start(self) -> float:
        self.batches = []
        return time.perf_counter()

    def prompt_done(self, started: float, decoded: int) -> float | None:
        """Seconds from ``started`` to the end of the batch that decoded the first ``decoded``
        tokens (the first batch when the prompt was all cached)."""
        total = 0
        for end, size in self.batches:
            total += size
            if total >= decoded:
                return end - started
        return None


def run_case(
    llm: Any, clock: EvalClock, tools: list[Any], case: dict[str, Any], *, search: bool
) -> dict[str, Any]:
    from tooldialect import Agent, CallFinished, FinalAnswer, StepFinished
    from tooldialect.apps.tool_search import SEARCH_TOOL

    agent = Agent(
        llm,
        tools=tools,
        system=SYSTEM,
        tool_search=search,
        max_steps=4 if search else 2,
        temperature=0.0,
        max_tokens=192,
    )
    calls: list[tuple[str, str]] = []
    queries: list[str] = []
    first: dict[str, Any] = {}
    steps = 0
    started = clock.start()
    for event in agent.stream(case["messages"]):
        if isinstance(event, CallFinished):
            if event.name == SEARCH_TOOL:
                queries.append(event.arguments)
            else:
                calls.append((event.name, event.arguments))
        if isinstance(event, StepFinished):
            steps = event.step.number
            if steps == 1:
                first = {
                    "prompt_tokens": event.step.usage.get("prompt_tokens"),
                    "decoded": event.step.decoded_prompt_tokens,
                    "ttft_s": clock.prompt_done(started, event.step.decoded_prompt_tokens),
                }
            if calls:
                break
        if isinstance(event, FinalAnswer):
            break
    total = time.perf_counter() - started
    right = bool(calls) and calls[0][0] == case["expected"]
    out = {
        "id": case["id"],
        "expected": case["expected"],
        "calls": calls,
        "searches": queries,
        "steps": steps,
        "first_step": first,
        "total_s": round(total, 2),
        "right_tool": right,
    }
    if case.get("bfcl") is not None:
        c: bfcl_data.Case = case["bfcl"]
        verdict = score("multiple", c.functions, c.answer, calls, c.name_map())
        out["bfcl_valid"] = verdict.valid
    return out


def cases_of(bfcl: list[bfcl_data.Case]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in bfcl:
        (answer,) = c.answer
        expected = bfcl_data.sanitize_name(next(iter(answer)))
        out.append({"id": c.id, "messages": c.messages, "expected": expected, "bfcl": c})
    for i, (text, expected) in enumerate(MCP_CASES):
        messages = [{"role": "user", "content": text}]
        out.append({"id": f"mcp_{i}", "messages": messages, "expected": expected, "bfcl": None})
    return out


def run_mode(
    cases: list[dict[str, Any]], defs: list[dict[str, Any]], *, search: bool, n_ctx: int
) -> list[dict[str, Any]]:
    with quiet_stderr():
        llm = make_llama("qwen", "tooldialect", n_ctx=n_ctx)
        llm.create_completion("Hello", max_tokens=1)  # pages the weights in: not prefill time
    clock = EvalClock(llm)
    tools = stub_tools(defs)
    rows = []
    for case in cases:
        with quiet_stderr():
            row = run_case(llm, clock, tools, case, search=search)
        print(
            f"  {'search' if search else 'all':6} {row['id']:14} ttft "
            f"{row['first_step'].get('ttft_s')} s total {row['total_s']} s right "
            f"{row['right_tool']} calls {row['calls']} searches {row['searches']}",
            flush=True,
        )
        rows.append(row)
    del llm
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ttfts = [r["first_step"]["ttft_s"] for r in rows if r["first_step"].get("ttft_s")]
    bfcl = [r["bfcl_valid"] for r in rows if "bfcl_valid" in r]
    return {
        "cold_ttft_s": rows[0]["first_step"].get("ttft_s"),
        "cold_prompt_tokens": rows[0]["first_step"].get("prompt_tokens"),
        "warm_ttft_median_s": median(ttfts[1:]) if len(ttfts) > 1 else None,
        "cold_total_s": rows[0]["total_s"],
        "total_median_s": median([r["total_s"] for r in rows]),
        "total_sum_s": round(sum(r["total_s"] for r in rows), 1),
        "right_tool": f"{sum(r['right_tool'] for r in rows)}/{len(rows)}",
        "bfcl_ast": f"{sum(bfcl)}/{len(bfcl)}",
    }


def break_even(all_s: dict[str, Any], search_s: dict[str, Any], n_tools: int) -> float | None:
    """Tools at which the cold first call costs the same both ways, on a linear model: all-tools
    time grows by the measured prefill per tool; the search's does not grow with the tool count.
    Negative: search is faster at any count (prefill grows faster than linearly, so the average
    per-tool cost of a long prompt overstates a short one's: measure a small set to see)."""
    per_tool = float(all_s["cold_ttft_s"] - search_s["cold_ttft_s"]) / max(n_tools - 1, 1)
    if per_tool <= 0:
        return None
    fixed_all = all_s["cold_total_s"] - per_tool * n_tools  # the call itself, any tool count
    return round(float(search_s["total_median_s"] - fixed_all) / per_tool, 1)


def markdown(data: dict[str, Any]) -> str:
    """The table of docs/benchmarks.md's tool-search section."""
    modes = data["modes"]
    lines = [
        "| mode | first step, cold: prompt tokens | first token, cold | first token, warm "
        "(median) | agent time, cold | agent time (median) | right tool | BFCL AST |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, label in (("all", "every tool offered"), ("search", "tool search")):
        if mode not in modes:
            continue
        s = modes[mode]["summary"]
        warm = s["warm_ttft_median_s"]
        lines.append(
            f"| {label} | {s['cold_prompt_tokens']} | {s['cold_ttft_s']:.1f} s | "
            f"{warm:.1f} s | {s['cold_total_s']:.1f} s | {s['total_median_s']:.1f} s | "
            f"{s['right_tool']} | {s['bfcl_ast']} |"
        )
    rows = {m: {r["id"]: r for r in modes[m]["cases"]} for m in modes}
    lines += ["", "| case | expected | every tool offered | tool search |", "|---|---|---|---|"]
    for case in data["cases"]:
        got = [
            rows[m][case]["calls"][0][0] if rows[m][case]["calls"] else "(no call)"
            for m in ("all", "search")
            if m in rows
        ]
        expected = next(iter(rows.values()))[case]["expected"]
        lines.append(f"| {case} | {expected} | {' | '.join(got)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bfcl", type=int, default=4, help="BFCL multiple cases")
    parser.add_argument("--tools", type=int, default=250)
    parser.add_argument("--bfcl-distractors", type=int, default=20)
    parser.add_argument("--modes", nargs="+", default=["search", "all"])
    parser.add_argument("--n-ctx", type=int, default=32768)
    parser.add_argument("--out", type=Path, default=Path("bench/results/tool-search.json"))
    parser.add_argument("--markdown", type=Path, help="print the tables of this result file")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return
    bfcl = bfcl_data.sample(bfcl_data.load_category("multiple"), args.bfcl)
    defs = tool_set(bfcl, args.tools, bfcl_distractors=args.bfcl_distractors)
    cases = cases_of(bfcl)
    data: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "tools": len(defs),
        "cases": [c["id"] for c in cases],
        "modes": {},
    }
    started = time.perf_counter()
    for mode in args.modes:
        print(f"{mode}: {len(cases)} cases over {len(defs)} tools", flush=True)
        rows = run_mode(cases, defs, search=mode == "search", n_ctx=args.n_ctx)
        data["modes"][mode] = {"summary": summary(rows), "cases": rows}
        write_json(args.out, data)
    modes = data["modes"]
    if "all" in modes and "search" in modes:
        a, s = modes["all"]["summary"], modes["search"]["summary"]
        data["cold_ttft_ratio"] = round(s["cold_ttft_s"] / a["cold_ttft_s"], 4)
        data["break_even_tools"] = break_even(a, s, len(defs))
    data["seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, data)
    for mode, got in modes.items():
        print(mode, got["summary"])
    print(
        "cold ttft ratio", data.get("cold_ttft_ratio"), "break-even", data.get("break_even_tools")
    )


if __name__ == "__main__":
    main()
