"""Prompt cache across conversations: the cost of returning to a tool set seen before.

    python bench/prompt_cache.py --models qwen smollm2 --tools 10 --reps 1

Per rep, on one Llama with ``ToolChatHandler(prompt_cache=True)``: request tool set A (cold:
nothing cached shares more than the chat template's first tokens), then tool set B, then A
again with another user message. Each request decodes one token, so its wall time is the
prefill plus what the cache costs (lookup, state restore, state save). Target: the return
costs <= 0.15x the cold request. A ``prompt_cache=False`` handler on the same Llama does the
same return right after, interleaved, as the reference. Reports the state size per entry.

    python bench/prompt_cache.py --checkpoints --models qwen --tools 50 --reps 1

measures the same return with the tool-prefix checkpoints alone (the default handler, no
prompt cache; target <= 0.05x the cold request) and the bytes the checkpoints hold.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import time
from typing import Any

from bench import workload
from bench.common import make_llama, median, quiet_stderr

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _tool_set(n: int, offset: int) -> list[dict[str, Any]]:
    """``n`` tools whose first differs per ``offset`` (distinct sets, same size)."""
    return [workload.filler_tool(1000 + offset), *workload.make_tools(n)[1:]]


def _request(handler: Any, llm: Any, tools: list[Any], question: str) -> tuple[float, int]:
    start = time.perf_counter()
    handler(
        llama=llm,
        messages=[SYSTEM, {"role": "user", "content": question}],
        tools=tools,
        temperature=0,
        max_tokens=1,
    )
    wall = time.perf_counter() - start
    return wall, int(handler.last_result.last_prompt_eval_tokens)


THREADS: list[int] = []


def set_threads(n: int) -> None:
    """Use ``n`` llama.cpp threads (spin-waiting threads on a shared machine distort timings)."""
    THREADS[:] = [n]


def measure(model: str, *, n_tools: int, reps: int) -> dict[str, Any]:
    from tooldialect.handler import ToolChatHandler

    # the tool-prefix checkpoints off: this measures the prompt cache alone
    cached = ToolChatHandler(prompt_cache=True, prefix_checkpoints=False)
    plain = ToolChatHandler(prompt_cache=False, prefix_checkpoints=False)
    with quiet_stderr():
        llm = make_llama(model, "default")
    if THREADS:
        import llama_cpp

        llama_cpp.llama_set_n_threads(llm._ctx.ctx, THREADS[0], THREADS[0])
    rows: list[dict[str, Any]] = []
    for rep in range(reps):
        a, b = _tool_set(n_tools, 2 * rep), _tool_set(n_tools, 2 * rep + 1)
        cold, cold_n = _request(cached, llm, a, "Hi!")
        _request(cached, llm, b, "Hello!")
        back, back_n = _request(cached, llm, a, "Save a note about lunch.")
        _request(cached, llm, b, "Hello again!")
        # reference: the same return without the cache (the live KV holds tool set B)
        uncached, uncached_n = _request(plain, llm, a, "Save a note about dinner.")
        rows.append(
            {
                "cold_s": round(cold, 3),
                "cold_prompt_tokens_decoded": cold_n,
                "return_cached_s": round(back, 3),
                "return_cached_tokens_decoded": back_n,
                "return_uncached_s": round(uncached, 3),
                "return_uncached_tokens_decoded": uncached_n,
                "ratio_cached_vs_cold": round(back / cold, 3),
            }
        )
    cache = cached._prompt_caches.for_llama(llm)
    sizes = [int(s.llama_state_size) for s in cache.cache_state.values()]
    tokens = [int(s.n_tokens) for s in cache.cache_state.values()]
    return {
        "model": model,
        "n_tools": n_tools,
        "rows": rows,
        "median_ratio_cached_vs_cold": median([r["ratio_cached_vs_cold"] for r in rows]),
        "state_bytes_per_entry": max(sizes),
        "state_bytes_per_token": round(max(sizes) / max(tokens)),
        "target": "<= 0.15",
    }


def measure_checkpoints(model: str, *, n_tools: int, reps: int) -> dict[str, Any]:
    """The same return to tool set A with the tool-prefix checkpoints alone (the default
    handler: no prompt cache). The return loads A's checkpoint and decodes the new user turn;
    the reference is the same return with checkpoints off. Target: <= 0.05x the cold request."""
    from tooldialect.handler import ToolChatHandler

    ours = ToolChatHandler(prompt_cache=False)
    plain = ToolChatHandler(prompt_cache=False, prefix_checkpoints=False)
    with quiet_stderr():
        llm = make_llama(model, "default")
    if THREADS:
        import llama_cpp

        llama_cpp.llama_set_n_threads(llm._ctx.ctx, THREADS[0], THREADS[0])
    rows: list[dict[str, Any]] = []
    for rep in range(reps):
        a, b = _tool_set(n_tools, 2 * rep), _tool_set(n_tools, 2 * rep + 1)
        cold, cold_n = _request(ours, llm, a, "Hi!")  # decodes A, saves its checkpoint
        _request(ours, llm, b, "Hello!")
        back, back_n = _request(ours, llm, a, "Save a note about lunch.")
        assert ours.last_result is not None
        loaded = ours.last_result.stats.checkpoint
        # reference: the same return without checkpoints (the live KV holds tool set B)
        _request(plain, llm, b, "Hello again!")
        uncached, uncached_n = _request(plain, llm, a, "Save a note about dinner.")
        rows.append(
            {
                "cold_s": round(cold, 3),
                "cold_prompt_tokens_decoded": cold_n,
                "return_checkpoint_s": round(back, 3),
                "return_checkpoint_tokens_decoded": back_n,
                "checkpoint": loaded,
                "return_uncached_s": round(uncached, 3),
                "return_uncached_tokens_decoded": uncached_n,
                "ratio_checkpoint_vs_cold": round(back / cold, 3),
            }
        )
    store = ours.checkpoints(llm)
    assert store is not None
    return {
        "model": model,
        "n_tools": n_tools,
        "rows": rows,
        "median_ratio_checkpoint_vs_cold": median([r["ratio_checkpoint_vs_cold"] for r in rows]),
        "checkpoints_kept": len(store),
        "checkpoint_bytes": store.size,
        "checkpoint_bytes_per_entry": round(store.size / max(len(store), 1)),
        "target": "<= 0.05",
    }


CACHE_TARGET = 0.15
CHECKPOINT_TARGET = 0.05


def run(*, quick: bool) -> dict[str, Any]:
    """Both returns as ``bench/run.py`` takes them: Qwen2.5 with 10 tools (1 rep quick, 2 full;
    full adds SmolLM2)."""
    models, reps = (("qwen",), 1) if quick else (("qwen", "smollm2"), 2)
    return {
        "prompt_cache": [measure(m, n_tools=10, reps=reps) for m in models],
        "checkpoints": [measure_checkpoints(m, n_tools=10, reps=reps) for m in models],
    }


def target_rows(result: Any) -> list[tuple[str, str, str, bool | None]]:
    """The prompt-cache rows of the target table: each return against its cold request."""
    if not isinstance(result, dict) or "error" in result or not result:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return [("11. return to a tool set", f"not run: {why}", f"<= {CACHE_TARGET}x", None)]
    rows: list[tuple[str, str, str, bool | None]] = []
    for r in result.get("prompt_cache", []):
        v = r["median_ratio_cached_vs_cold"]
        rows.append(
            (
                f"11. return via the prompt cache, {r['model']}, {r['n_tools']} tools",
                f"{v:.3f}x cold",
                f"<= {CACHE_TARGET}x",
                None if v != v else v <= CACHE_TARGET,
            )
        )
    for r in result.get("checkpoints", []):
        v = r["median_ratio_checkpoint_vs_cold"]
        rows.append(
            (
                f"11. return via the tool-prefix checkpoint, {r['model']}, {r['n_tools']} tools",
                f"{v:.3f}x cold",
                f"<= {CHECKPOINT_TARGET}x",
                None if v != v else v <= CHECKPOINT_TARGET,
            )
        )
    return rows


def doc_section(result: Any) -> str:
    """The markdown section ``bench/run.py`` appends to docs/benchmarks.md."""
    md = [
        "",
        "## Returning to a tool set (prompt cache and tool-prefix checkpoints)",
        "",
        "`bench/prompt_cache.py`: tool set A cold, then B, then A again with another user "
        "message (each request one token: its time is the prefill and the cache's costs). "
        f"Targets: the return <= {CACHE_TARGET}x the cold request through the prompt cache, "
        f"<= {CHECKPOINT_TARGET}x through the tool-prefix checkpoints (the default handler). "
        "*uncached* is the same return with the mechanism off; *MB held* is one cache entry's "
        "state for the prompt cache, all checkpoints kept for the checkpoints.",
        "",
    ]
    if not isinstance(result, dict) or "error" in result or not result:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return "\n".join([*md, f"not run: {why}", ""]) + "\n"
    md += [
        "| mechanism | model | tools | cold s | return s | uncached return s | decoded on "
        "return | return / cold | MB held | met |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    kinds = (
        ("prompt cache", "prompt_cache", "cached", CACHE_TARGET),
        ("checkpoints", "checkpoints", "checkpoint", CHECKPOINT_TARGET),
    )
    for label, key, tag, target in kinds:
        for r in result.get(key, []):
            ratio = r[f"median_ratio_{tag}_vs_cold"]
            held = r.get("state_bytes_per_entry", r.get("checkpoint_bytes", 0)) / 2**20
            for row in r["rows"]:
                md.append(
                    f"| {label} | {r['model']} | {r['n_tools']} | {row['cold_s']:.2f} | "
                    f"{row[f'return_{tag}_s']:.2f} | {row['return_uncached_s']:.2f} | "
                    f"{row[f'return_{tag}_tokens_decoded']} | "
                    f"{row[f'ratio_{tag}_vs_cold']:.3f}x | {held:.0f} | "
                    f"{'met' if ratio <= target else '**not met**'} |"
                )
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen"])
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (1 on a loaded machine)"
    )
    parser.add_argument(
        "--checkpoints",
        action="store_true",
        help="measure the tool-prefix checkpoints (no prompt cache) instead of the prompt cache",
    )
    args = parser.parse_args(argv)
    if args.threads:
        set_threads(args.threads)
    run = measure_checkpoints if args.checkpoints else measure
    out = [run(m, n_tools=args.tools, reps=args.reps) for m in args.models]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
