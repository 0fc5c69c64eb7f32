"""Fast-forward of forced text: call time against plain decoding, share of forced tokens.

    python bench/fastforward.py --models smollm2 qwen --tools 1 10 50 --choices named auto --reps 1

For each model / tool count / ``tool_choice``, on one Llama, interleaved in one run: the same
greedy request with ``ToolChatHandler(argument_layout=..., fast_forward=...)`` for the four
combinations of ``free`` / ``canonical`` and off / on, streamed; ratios are against
``free`` without fast-forward;
*call time* is the decoding of the reply, from the first decode (the warm prompt's last token,
as plain decoding has it too) to the end; the bench's question makes both models call at once,
so the reply is the call (``content_chars`` shows any text before it). The reference is plain
``create_completion`` on the same prompt tokens, timed the same way, decoding the same number
of tokens (it may stop earlier at an end token, so its per-token time is scaled).
Reported: speed-up of the call over plain decoding (target >= 1.3x with 1 tool, >= 1.15x with
10), forced share of the call's tokens, whether the parsed calls agree with and without.

    python bench/fastforward.py --mode auto --models qwen smollm2 --tools 1 10 --reps 3

``--mode auto`` (issue 20, section 4): ``tool_choice="auto"`` only, three variants interleaved
in each rep with plain decoding: the lazy grammar's lenient envelope throughout (``+lenient``),
its strict form after the trigger, and that with prompt-lookup drafts (``+drafts``, the
default); ratios are each call against plain decoding of as many tokens in the same rep. The
1-minute load average is recorded per rep.
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
from bench.common import first_decode, make_llama, median, quiet_stderr

QUESTION = "Save a note titled Lunch saying that we meet at noon, tagged food and team."
MAX_TOKENS = 96


def _choice(choice: str) -> Any:
    if choice == "named":
        return {"type": "function", "function": {"name": "save_note"}}
    return choice


def _call(
    handler: Any, llm: Any, tools: list[Any], choice: str, *, max_tokens: int = MAX_TOKENS
) -> dict[str, Any]:
    with first_decode(llm) as clock:
        start = time.perf_counter()
        opened: float | None = None
        calls: dict[int, dict[str, str]] = {}
        content = ""
        done = handler.complete(
            llama=llm,
            messages=[{"role": "user", "content": QUESTION}],
            tools=tools,
            tool_choice=_choice(choice),
            temperature=0,
            max_tokens=max_tokens,
            stream=True,
        )
        for chunk in done.response:
            delta = chunk["choices"][0]["delta"]
            now = time.perf_counter()
            if delta.get("tool_calls"):
                if opened is None:
                    opened = now
                for d in delta["tool_calls"]:
                    slot = calls.setdefault(d["index"], {"name": "", "arguments": ""})
                    fn = d.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
            content += delta.get("content") or ""
        end = time.perf_counter()
    res, stats = done.result, done.result.stats
    return {
        "wall_s": end - start,
        # decoding, from the first decode (the warm prompt's last token) to the end: the reply
        # is the call (the bench's question makes the models call at once, "content" shows it)
        "call_s": end - (clock.first or end),
        "from_first_delta_s": end - (opened if opened is not None else end),
        "tokens": int(res.completion_tokens),
        "forced": int(stats.forced_tokens),
        "parsed": (content, [calls[k] for k in sorted(calls)]),
        "prompt_tokens": int(res.prompt_tokens),
        "draft_proposed": int(stats.draft_proposed),
        "draft_accepted": list(stats.draft_accepted),
    }


def _plain(llm: Any, prompt: list[int], n: int) -> float:
    """Seconds per token of plain ``create_completion`` decoding (up to) ``n`` tokens, timed
    as the call is: from the first decode (the warm prompt's last token) to the end."""
    count = 0
    with first_decode(llm) as clock:
        for _ in llm.create_completion(prompt, max_tokens=n, temperature=0, stream=True):
            count += 1
        end = time.perf_counter()
    return (end - (clock.first or end)) / max(count, 1)


THREADS: list[int] = []
DRAFTS: list[bool] = []
"""``--drafts``: prompt-lookup drafts inside calls (``LlamaCppEngine(drafts=)``) for every
variant."""

Variant = tuple[str, bool, bool, bool]
"""(argument_layout, fast_forward, strict calls, drafts)."""


def set_threads(n: int) -> None:
    """Use ``n`` llama.cpp threads (spin-waiting threads on a shared machine distort timings)."""
    THREADS[:] = [n]


VARIANTS: list[Variant] = [
    ("free", False, True, False),
    ("free", True, True, False),
    ("canonical", False, True, False),
    ("canonical", True, True, False),
]
"""The first is the baseline the others are compared with (``--drafts``: all with drafts)."""
AUTO_VARIANTS: list[Variant] = [
    ("canonical", True, False, False),
    ("canonical", True, True, False),
    ("canonical", True, True, True),
]
"""``--mode auto``: an ``auto`` call with the lazy grammar's lenient envelope throughout
(``+lenient``), the strict form after the trigger, and that with prompt-lookup drafts
(``+drafts``, the default), all fast-forwarded."""
DEFAULT: Variant = ("canonical", True, True, True)
"""The handler's defaults: canonical layout, fast-forward, strict calls, drafts."""


def _name(layout: str, ff: bool, strict: bool = True, drafts: bool = False) -> str:
    flags = ("+ff" if ff else "") + ("" if strict else "+lenient") + ("+drafts" if drafts else "")
    return layout + flags


def measure(
    model: str,
    n_tools: int,
    choice: str,
    *,
    reps: int,
    variants: list[Variant] = VARIANTS,
) -> dict[str, Any]:
    from tooldialect.engine.in_process import LlamaCppEngine
    from tooldialect.engine.in_process.drafts import DraftOptions
    from tooldialect.handler import ToolChatHandler

    with quiet_stderr():
        # 50 tools make a 6k-token prompt
        llm = make_llama(model, "default", n_ctx=8192 if n_tools > 10 else 4096)
    if THREADS:
        import llama_cpp

        llama_cpp.llama_set_n_threads(llm._ctx.ctx, THREADS[0], THREADS[0])
    handlers = {
        v: ToolChatHandler(fast_forward=v[1], argument_layout=v[0])  # type: ignore[arg-type]
        for v in variants
    }
    for v, handler in handlers.items():  # each variant's engine on the one Llama
        handler.setup(
            llm,
            engine=LlamaCppEngine(
                llm,
                fast_forward=v[1],
                checkpoints=handler.checkpoints(llm),
                strict_calls=v[2],
                drafts=DraftOptions() if v[3] or DRAFTS else None,
            ),
        )

    def call(v: Variant, **kw: Any) -> dict[str, Any]:
        return _call(handlers[v], llm, tools, choice, **kw)

    tools = workload.make_tools(n_tools)
    names = {_name(*v) for v in variants}
    rows = []
    call(variants[0], max_tokens=1)  # prefill once: all are warm
    load = [round(os.getloadavg()[0], 2)]
    for _ in range(reps):
        # interleaved within one rep, so a change in machine load hits every variant alike
        runs = {v: call(v) for v in variants}
        base = runs[variants[0]]
        prompt = [int(t) for t in llm.input_ids[: base["prompt_tokens"]]]
        per_token = _plain(llm, prompt, max(base["tokens"], 2))
        row: dict[str, Any] = {"plain_s_per_token": round(per_token, 4)}
        for v, r in runs.items():
            plain_call = per_token * max(r["tokens"], 1)
            row[_name(*v)] = {
                "tokens": r["tokens"],
                "forced_share": round(r["forced"] / max(r["tokens"], 1), 3),
                "call_s": round(r["call_s"], 3),
                "request_s": round(r["wall_s"], 3),
                "speedup_vs_plain_same_tokens": round(plain_call / r["call_s"], 3)
                if r["call_s"]
                else None,
                "speedup_vs_baseline": round(base["call_s"] / r["call_s"], 3)
                if r["call_s"]
                else None,
                "agree_with_baseline": r["parsed"] == base["parsed"],
                "draft_proposed": r["draft_proposed"],
                "draft_accepted": r["draft_accepted"],
                "content_chars": len(r["parsed"][0]),
                "parsed": r["parsed"],
            }
        rows.append(row)
        load.append(round(os.getloadavg()[0], 2))
        ratios = {k: v["speedup_vs_plain_same_tokens"] for k, v in row.items() if k in names}
        print(f"# rep {len(rows)}: load {load[-1]} vs-plain {ratios}", file=sys.stderr, flush=True)
    summary = {}
    for v in variants:
        cells = [row[_name(*v)] for row in rows]
        summary[_name(*v)] = {
            "tokens": median([c["tokens"] for c in cells]),
            "forced_share": median([c["forced_share"] for c in cells]),
            "call_s": median([c["call_s"] for c in cells]),
            "speedup_vs_plain": median(
                [c["speedup_vs_plain_same_tokens"] for c in cells if c["call_s"]]
            ),
            "speedup_vs_baseline": median(
                [c["speedup_vs_baseline"] for c in cells if c["speedup_vs_baseline"]]
            ),
            "agree": all(c["agree_with_baseline"] for c in cells),
        }
    return {
        "model": model,
        "n_tools": n_tools,
        "tool_choice": choice,
        "baseline": _name(*variants[0]),
        "load_average_1min": load,
        "summary": summary,
        "rows": rows,
    }


AUTO_TARGET = 1.15
"""An ``auto`` call at least this many times as fast as plain decoding of as many tokens."""


def auto_run(*, quick: bool) -> list[dict[str, Any]]:
    """``--mode auto`` as ``bench/run.py`` takes it: quick, SmolLM2 with 1 tool and 2 reps; full,
    both models with 1 and 10 tools and 3 reps."""
    models, sizes, reps = (("smollm2",), (1,), 2) if quick else (("qwen", "smollm2"), (1, 10), 3)
    return [measure(m, n, "auto", reps=reps, variants=AUTO_VARIANTS) for m in models for n in sizes]


def auto_target_rows(result: Any) -> list[tuple[str, str, str, bool | None]]:
    """Issue 20 §4's rows of the target table: the default (strict) ``auto`` call against plain
    decoding; a speed-up counts only when its parsed call equals the lenient one's."""
    if not isinstance(result, list) or not result:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return [("10. auto call vs plain", f"not run: {why}", f">= {AUTO_TARGET}x", None)]
    strict = _name(*DEFAULT)
    rows: list[tuple[str, str, str, bool | None]] = []
    for r in result:
        cell = r["summary"][strict]
        speedup = cell["speedup_vs_plain"]
        rows.append(
            (
                f"10. auto call vs plain, {r['model']}, {r['n_tools']} tools",
                f"{speedup:.3f}x (forced {cell['forced_share']:.2f}, same call: {cell['agree']})",
                f">= {AUTO_TARGET}x, same call",
                None if speedup != speedup else bool(speedup >= AUTO_TARGET and cell["agree"]),
            )
        )
    return rows


def auto_doc_section(result: Any) -> str:
    """The markdown section ``bench/run.py`` appends to docs/benchmarks.md for ``auto`` calls."""
    md = [
        "",
        "## Calls under `auto`: measured by `bench/run.py` (issue 20, section 4)",
        "",
        "`bench/fastforward.py --mode auto`: per rep, interleaved on one warm prompt, the call "
        "with the lenient envelope throughout (`canonical+ff+lenient`), the strict form after "
        "the trigger (`canonical+ff`), that with prompt-lookup drafts (`canonical+ff+drafts`, "
        "the default) and plain `create_completion` of as many tokens. "
        f"Target: the default at >= {AUTO_TARGET}x plain with the same parsed call as the "
        "lenient one.",
        "",
    ]
    if not isinstance(result, list) or not result:
        why = result.get("error", "not run") if isinstance(result, dict) else "not run"
        return "\n".join([*md, f"not run: {why}", ""]) + "\n"
    md += [
        "| model | tools | variant | call tokens | forced share | vs plain | vs lenient | "
        "same call | met |",
        "|---|---:|---|---:|---:|---:|---:|---|---|",
    ]
    strict = _name(*DEFAULT)
    for r in result:
        for name, cell in r["summary"].items():
            speedup = cell["speedup_vs_plain"]
            ok = "-"
            if name == strict:
                ok = "met" if speedup >= AUTO_TARGET and cell["agree"] else "**not met**"
            md.append(
                f"| {r['model']} | {r['n_tools']} | `{name}` | {cell['tokens']} | "
                f"{cell['forced_share']:.2f} | {speedup:.3f}x | "
                f"{cell['speedup_vs_baseline']:.3f}x | {cell['agree']} | {ok} |"
            )
        md.append(f"| | | load average per rep: {r['load_average_1min']} | | | | | | |")
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2"])
    parser.add_argument("--tools", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--choices", nargs="+", default=["named", "auto"])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument(
        "--mode",
        choices=["layouts", "auto"],
        default="layouts",
        help="auto: tool_choice=auto, strict form after the trigger against the lenient one",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (1 on a loaded machine)"
    )
    parser.add_argument(
        "--drafts", action="store_true", help="prompt-lookup drafts inside calls (issue 20 §4)"
    )
    args = parser.parse_args(argv)
    if args.drafts:
        DRAFTS[:] = [True]
    if args.threads:
        set_threads(args.threads)
    out = []
    variants = AUTO_VARIANTS if args.mode == "auto" else VARIANTS
    choices = ["auto"] if args.mode == "auto" else args.choices
    for m in args.models:
        for n in args.tools:
            for c in choices:
                out.append(measure(m, n, c, reps=args.reps, variants=variants))
                for name, cell in out[-1]["summary"].items():  # as it goes: runs are long
                    print(
                        f"# {m} tools={n} {c} {name}: tokens={cell['tokens']} "
                        f"forced={cell['forced_share']} call_s={cell['call_s']} "
                        f"x{cell['speedup_vs_baseline']} vs-plain={cell['speedup_vs_plain']} "
                        f"agree={cell['agree']}",
                        file=sys.stderr,
                        flush=True,
                    )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
