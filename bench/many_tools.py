"""Hundreds of tools (issue 20, section 2): armed decode, and the return to a tool set.

    python bench/many_tools.py --model smollm2 --tools 100 250 --pairs 3 --tokens 64 \\
        --out bench/results/many-tools-smollm2.json

For each tool count N, on one Llama with the default ``ToolChatHandler`` (tool-prefix
checkpoints on) and a context sized from the prompt:

1. *cold*: one request with N MCP-shaped tools (``bench/mcp_tools.py``) offered and a prose
   question, decoding one token. Its wall time is the cold figure; its prefill is what the
   rest reuses.
2. *armed*: ``--pairs`` interleaved armed/plain decodes of ``--tokens`` tokens from that same
   prompt (the handler's ``GenerationRequest`` with its lazy grammar, and the same request
   without it, as ``bench/long_answers.py`` does; end-of-generation biased away). The KV cache
   holds the prompt, so only the decode is timed. Ratio plain s / armed s, target >= 0.97;
   both sides must write the same text (else the grammar fired and the pair is left out).
3. *return*: a short chat without tools (the live KV no longer holds the tool prefix), then a
   second conversation with the same tools and another user message, timed against the cold
   request (target <= 0.05x). The checkpoints' bytes and the process RSS are reported.

The JSON is written again after each N (a long run can be cut and keep what it measured).

Sizes (rendered prompts, measured): 25 tools are about 7.0k tokens, 100 about 27.9k, 250 about
69.7k on both models (233 KB of JSON), past SmolLM2's 8k training context (llama.cpp decodes
on; the timing holds, the text is nonsense) and into Qwen2.5's 32k. A 250-tool prefix is about
1.6 GB of state on SmolLM2 (22.7 KB a token), more than the default 1 GiB checkpoint store: the
cold request then keeps none and the return decodes the prompt again, which is what a default
user gets; ``--checkpoint-mb 2048`` measures a store that holds it.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import resource
import time
from collections.abc import Callable
from typing import Any

from bench import workload
from bench.common import make_llama, median, quiet_stderr, write_json
from bench.long_answers import (
    armed_request,
    balanced_ratio,
    context_size,
    decode_pairs,
    met,
    prompt_tokens,
)
from bench.mcp_tools import mcp_tools

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
QUESTION = "Explain in detail how a lighthouse works, in several paragraphs."
RETURN_QUESTION = "Write a short poem about the sea at night."
ARMED_TARGET = 0.97
RETURN_TARGET = 0.05


def memory_mb() -> dict[str, float]:
    """The process's resident set now and at its peak, in MB (Linux /proc; peak from rusage)."""
    now = float("nan")
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                now = int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"rss_mb": round(now, 1), "peak_rss_mb": round(peak, 1)}


def make_tools(n: int, *, kind: str) -> list[dict[str, Any]]:
    """``mcp``: realistic MCP tools (about 280 prompt tokens each); ``filler``: the 2-4
    parameter tools of ``bench.workload`` (about 115 each), the shape of issue 20's first
    250-tool figure, which keeps 250 tools inside Qwen2.5's 32k context."""
    if kind == "filler":
        return workload.make_tools(n)
    if kind == "small":  # one string parameter each (~45 tokens): 250 of them prefill in minutes
        return [workload.NOTE_TOOL] + [
            {
                "type": "function",
                "function": {
                    "name": f"lookup_{i}",
                    "description": f"Look up record {i}.",
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string"}},
                        "required": ["query"],
                    },
                },
            }
            for i in range(n - 1)
        ]
    return mcp_tools(n)


def _chat(llm: Any, question: str, tools: list[dict[str, Any]] | None) -> float:
    """Wall seconds of a one-token request (its prefill, plus what the caches cost)."""
    start = time.perf_counter()
    llm.create_chat_completion(
        messages=[SYSTEM, {"role": "user", "content": question}],
        tools=tools,
        tool_choice="auto" if tools else None,
        temperature=0.0,
        max_tokens=1,
    )
    return time.perf_counter() - start


def measure(
    model: str,
    *,
    n_tools: int,
    pairs: int,
    tokens: int,
    checkpoint_bytes: int | None = None,
    kind: str = "mcp",
) -> dict[str, Any]:
    """Cold request, armed/plain decode pairs and the return, for ``n_tools`` tools.
    ``checkpoint_bytes``: the checkpoint store's capacity (``None``: the handler's default,
    1 GiB, which a 250-tool prefix on SmolLM2, about 1.6 GB of state, does not fit)."""
    from tooldialect.handler import ToolChatHandler

    tools = make_tools(n_tools, kind=kind)
    messages = [SYSTEM, {"role": "user", "content": QUESTION}]
    n_prompt = prompt_tokens(model, messages=messages, tools=tools)
    n_ctx = context_size(n_prompt, tokens)
    with quiet_stderr():
        llm = make_llama(model, "tooldialect", n_ctx=n_ctx)
    if checkpoint_bytes is not None:
        llm.chat_handler = ToolChatHandler(prefix_checkpoints=checkpoint_bytes)
    handler = llm.chat_handler
    engine, armed, cold_s = armed_request(llm, length=tokens, messages=messages, tools=tools)
    cold = handler.last_result
    rows = decode_pairs(engine, armed, reps=pairs)
    clean = [p for p in rows if not p["grammar_fired"]]
    _chat(llm, "Hello!", None)  # another conversation: the live KV loses the tool prefix
    return_s = _chat(llm, RETURN_QUESTION, tools)
    back = handler.last_result
    store = handler.checkpoints(llm)
    cache = getattr(llm, "cache", None)
    return {
        "model": model,
        "n_tools": n_tools,
        "tool_kind": kind,
        "tools_json_bytes": len(json.dumps(tools)),
        "prompt_tokens": int(cold.prompt_tokens),
        "prompt_tokens_estimated": n_prompt,
        "n_ctx": n_ctx,
        "tool_prefix_chars": len(armed.prefix),
        "trigger_words": list(armed.triggers.words),
        "trigger_patterns": len(armed.triggers.patterns) + len(armed.triggers.word_patterns),
        "cold_s": round(cold_s, 3),
        "cold_prompt_tokens_decoded": int(cold.last_prompt_eval_tokens),
        # "saved", or "" where the prefix's state did not fit the store (the return re-decodes)
        "cold_checkpoint": cold.stats.checkpoint,
        "armed": {
            "tokens": tokens,
            "ratio": balanced_ratio(rows),
            "ratio_median": median([p["ratio"] for p in clean]),
            "ratios": [round(p["ratio"], 3) for p in clean],
            "fired_pairs": len(rows) - len(clean),
            "pairs": rows,
            "target": f">= {ARMED_TARGET}",
        },
        "return": {
            "seconds": round(return_s, 3),
            "ratio_vs_cold": round(return_s / cold_s, 4),
            "prompt_tokens": int(back.prompt_tokens),
            "prompt_tokens_decoded": int(back.last_prompt_eval_tokens),
            "checkpoint": back.stats.checkpoint,
            "target": f"<= {RETURN_TARGET}",
        },
        "memory": {
            "checkpoint_capacity_bytes": store.capacity if store is not None else 0,
            "checkpoints_kept": len(store) if store is not None else 0,
            "checkpoint_bytes": store.size if store is not None else 0,
            "checkpoint_bytes_per_prompt_token": round(
                (store.size if store is not None else 0) / max(int(cold.prompt_tokens), 1)
            ),
            "prompt_cache_bytes": int(cache.cache_size) if cache is not None else 0,
            **memory_mb(),
        },
    }


def run(
    models: tuple[str, ...],
    *,
    sizes: tuple[int, ...],
    pairs: int,
    tokens: int,
    checkpoint_bytes: int | None = None,
    kind: str = "mcp",
    save: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """:func:`measure` for each model and size; ``save`` gets the result after each one. A
    size that fails is recorded with its error and the run goes on."""
    out: dict[str, Any] = {"pairs": pairs, "tokens": tokens, "tool_kind": kind, "runs": []}
    for model in models:
        for n in sizes:
            try:
                row = measure(
                    model,
                    n_tools=n,
                    pairs=pairs,
                    tokens=tokens,
                    checkpoint_bytes=checkpoint_bytes,
                    kind=kind,
                )
            except Exception as exc:  # one size failing must not lose the others
                row = {"model": model, "n_tools": n, "error": f"{type(exc).__name__}: {exc}"}
            row["load_average_1min"] = round(os.getloadavg()[0], 2)
            out["runs"].append(row)
            print(f"# many_tools {model} {n} tools: {_summary(row)}", file=sys.stderr, flush=True)
            if save is not None:
                save(out)
    return out


def bench_run(*, quick: bool) -> dict[str, Any]:
    """As ``bench/run.py`` takes it: quick, SmolLM2 with 25 tools, 2 pairs of 16 tokens; full,
    issue 20's sizes (both models, 100 and 250 tools, 3 pairs of 64 tokens)."""
    if quick:
        return run(("smollm2",), sizes=(25,), pairs=2, tokens=16)
    # 250 MCP tools are ~70k tokens, past Qwen2.5's 32k context: the full run uses the small
    # filler tools of issue 20's first 250-tool figure (250 of them are ~30k tokens)
    return run(("smollm2", "qwen"), sizes=(100, 250), pairs=3, tokens=64, kind="filler")


def _summary(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"error {row['error']}"
    return (
        f"{row['prompt_tokens']} prompt tokens, cold {row['cold_s']} s, armed "
        f"{row['armed']['ratio']:.3f}x, return {row['return']['ratio_vs_cold']:.3f}x cold"
    )


# ---- report ------------------------------------------------------------------------------------


def target_rows(result: Any) -> list[tuple[str, str, str, bool | None]]:
    """Issue 20 §2's rows of the target table (figure, measured, target, met)."""
    runs = result.get("runs") if isinstance(result, dict) else None
    if not runs:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return [("9. many tools: armed decode", f"not run: {why}", f">= {ARMED_TARGET}x", None)]
    rows: list[tuple[str, str, str, bool | None]] = []
    for r in runs:
        label = f"{r['model']}, {r['n_tools']} {r.get('tool_kind', 'mcp')} tools"
        if "error" in r:
            rows.append((f"9. many tools ({label})", f"error: {r['error']}", "", None))
            continue
        ratio, back = r["armed"]["ratio"], r["return"]["ratio_vs_cold"]
        rows.append(
            (
                f"9. armed decode, {label} ({r['prompt_tokens']} prompt tokens)",
                f"{ratio:.3f}x",
                f">= {ARMED_TARGET}x",
                None if ratio != ratio else ratio >= ARMED_TARGET,
            )
        )
        rows.append(
            (
                f"9. return to the tools, {label}",
                f"{back:.3f}x cold ({r['return']['seconds']} s vs {r['cold_s']} s)",
                f"<= {RETURN_TARGET}x",
                back <= RETURN_TARGET,
            )
        )
    return rows


def doc_section(result: Any) -> str:
    """The markdown section ``bench/run.py`` appends to docs/benchmarks.md."""
    md = [
        "",
        "## Hundreds of tools (issue 20, section 2)",
        "",
        "`bench/many_tools.py`. MCP-shaped tools (`bench/mcp_tools.py`: nested objects, `$ref`, "
        "`anyOf`, enums). *Cold*: the first request with the tools and a prose question (one "
        "token). *Armed*: the handler's request decoded with its lazy grammar against the same "
        "request without it, interleaved pairs from the prefilled prompt (plain s / armed s, "
        f"target >= {ARMED_TARGET}x; pairs where the grammar fired are left out; the ratio is "
        "the geometric mean of the armed-first and the plain-first pairs' medians, since the "
        "side that runs first was measured slower). *Return*: "
        "another conversation with the same tools after an unrelated chat, served from the "
        f"tool-prefix checkpoint (target <= {RETURN_TARGET}x the cold request).",
        "",
    ]
    runs = result.get("runs") if isinstance(result, dict) else None
    if not runs:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return "\n".join([*md, f"not run: {why}", ""]) + "\n"
    md += [
        "| model | tools | tools JSON KB | prompt tokens | cold s | armed ratio | pair ratios | "
        "armed met | return s | return / cold | decoded on return | return met | "
        "checkpoint MB (cold request) | RSS MB |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in runs:
        if "error" in r:
            md.append(f"| {r['model']} | {r['n_tools']} | error: {r['error'][:100]} |" + " |" * 11)
            continue
        a, b, mem = r["armed"], r["return"], r["memory"]
        md.append(
            f"| {r['model']} | {r['n_tools']} {r.get('tool_kind', 'mcp')} | "
            f"{r['tools_json_bytes'] / 1024:.0f} | "
            f"{r['prompt_tokens']} | {r['cold_s']:.1f} | {a['ratio']:.3f}x | "
            f"{', '.join(f'{x:.2f}' for x in a['ratios'])} | "
            f"{met(a['ratio'] >= ARMED_TARGET, a['ratio'])} | {b['seconds']:.2f} | "
            f"{b['ratio_vs_cold']:.3f}x | {b['prompt_tokens_decoded']} | "
            f"{met(b['ratio_vs_cold'] <= RETURN_TARGET, b['ratio_vs_cold'])} | "
            f"{mem['checkpoint_bytes'] / 2**20:.0f} ({r.get('cold_checkpoint') or 'none kept'}) | "
            f"{mem['rss_mb']:.0f} |"
        )
    md.append(
        f"\n({result.get('pairs', '?')} pairs of {result.get('tokens', '?')} tokens per size; "
        "RSS after the run, checkpoints included)"
    )
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", default=["smollm2"], help="one or more models")
    parser.add_argument("--tools", nargs="+", type=int, default=[100, 250])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument(
        "--out", type=Path, default=None, help="write the JSON here, again after each size"
    )
    parser.add_argument(
        "--checkpoint-mb",
        type=int,
        default=None,
        help="checkpoint store capacity in MB (default: the handler's, 1 GiB)",
    )
    parser.add_argument(
        "--tool-kind",
        choices=["mcp", "filler", "small"],
        default="mcp",
        help="mcp: realistic MCP schemas (250 ~70k tokens); filler: 2-4 parameters (250 ~30k); "
        "small: one string parameter",
    )
    args = parser.parse_args(argv)

    def save(data: dict[str, Any]) -> None:
        if args.out is not None:
            write_json(args.out, data)

    result = run(
        tuple(args.model),
        sizes=tuple(args.tools),
        pairs=args.pairs,
        tokens=args.tokens,
        checkpoint_bytes=args.checkpoint_mb * 2**20 if args.checkpoint_mb else None,
        kind=args.tool_kind,
        save=save,
    )
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
