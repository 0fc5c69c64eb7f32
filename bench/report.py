"""Turn benchmark results into the target table, docs/benchmarks.md and docs/benchmarks.png."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench import bfcl_data
from bench.agent_turns import loop_table, loop_targets
from bench.common import MODEL_LABELS, ROOT

DOC = ROOT / "docs" / "benchmarks.md"
CHART = ROOT / "docs" / "benchmarks.png"
NOTES = Path(__file__).parent / "notes.md"
SCHEMAS = Path(__file__).parent / "jsonschema.md"

Row = tuple[str, str, str, bool | None]


def _ok(value: float, good: bool) -> bool | None:
    return None if math.isnan(value) else good


def _err(section: Any) -> str | None:
    return section.get("error") if isinstance(section, dict) else None


def target_rows(speed: dict[str, Any], over: dict[str, Any], acc: dict[str, Any]) -> list[Row]:
    """(figure, measured, target, met) for every target of issue 4; met is None when not run."""
    rows: list[Row] = []
    armed = speed.get("armed")
    if _err(armed) or armed is None:
        rows.append(("1. tools armed, no call", f"not run: {_err(armed)}", ">= 0.97x", None))
    else:
        for r in armed:
            rows.append(
                (
                    f"1. tools armed, no call ({MODEL_LABELS[r['model']]}, 10 tools)",
                    f"{r['ratio']:.3f}x",
                    ">= 0.97x",
                    r["ratio"] >= 0.97,
                )
            )
    cons = speed.get("constrained")
    if _err(cons) or cons is None:
        rows.append(("2. inside a constrained call", f"not run: {_err(cons)}", ">= 0.85x", None))
    else:
        for r in cons:
            rows.append(
                (
                    f"2. inside a call ({MODEL_LABELS[r['model']]}, {r['n_tools']} tools)",
                    f"{r['ratio']:.3f}x",
                    ">= 0.85x",
                    r["ratio"] >= 0.85,
                )
            )
    turns = speed.get("multi_turn")
    if _err(turns) or turns is None:
        rows.append(("3. multi-turn KV reuse", f"not run: {_err(turns)}", "suffix + <= 5", None))
    else:
        ours = [t for t in turns["tooldialect"] if "excess" in t]
        worst = max((t["excess"] for t in ours if t["turn"] > 1), default=float("nan"))
        theirs = [t for t in turns["chatml-fc"] if "excess" in t]
        worst_theirs = max((t["excess"] for t in theirs if t["turn"] > 1), default=float("nan"))
        rows.append(
            (
                "3. multi-turn: worst excess over the new suffix, turns 2-6",
                f"{worst} tokens (chatml-function-calling: {worst_theirs})",
                "<= 5 tokens",
                _ok(worst, worst <= 5),
            )
        )
    if "agent_loop" in speed:
        rows += loop_targets(speed["agent_loop"])
    cached, cold = over.get("overhead_cached"), over.get("overhead_cold")
    if _err(cached) or cached is None:
        rows.append(("4. overhead, cached", f"not run: {_err(cached)}", "<= 2 ms (10 tools)", None))
    else:
        v = _get(cached, 10)["total"]
        rows.append(("4. overhead, cached, 10 tools", f"{v:.2f} ms", "<= 2 ms", v <= 2))
        wide = _get(cached, 250)
        if wide is not None:
            v = wide["total"]
            rows.append(("4. overhead, cached, 250 tools", f"{v:.2f} ms", "<= 15 ms", v <= 15))
    if _err(cold) or cold is None:
        rows.append(("4. overhead, cold", f"not run: {_err(cold)}", "<= 50 ms (50 tools)", None))
    else:
        v = _get(cold, 50)["total"]
        rows.append(("4. overhead, cold, 50 tools", f"{v:.1f} ms", "<= 50 ms", v <= 50))
    parser = over.get("parser")
    if _err(parser) or parser is None:
        rows.append(("5. streaming parser", f"not run: {_err(parser)}", ">= 10 MB/s", None))
    else:
        v = parser["stream_mb_s"]
        rows.append(
            ("5. streaming parser, token-sized chunks", f"{v:.1f} MB/s", ">= 10 MB/s", v >= 10)
        )
    mem = over.get("memory")
    if _err(mem) or mem is None:
        rows.append(("6. peak RSS vs plain", f"not run: {_err(mem)}", "< 1.05x", None))
    else:
        rows.append(
            (
                "6. peak RSS, handler vs plain",
                f"{mem['ratio']:.3f}x",
                "< 1.05x",
                mem["ratio"] < 1.05,
            )
        )
    rows += accuracy_rows(acc)
    return rows


def _get(table: dict[Any, Any], key: int) -> Any:
    return table.get(key, table.get(str(key)))


def accuracy_rows(acc: dict[str, Any]) -> list[Row]:
    if not acc or _err(acc):
        return [("accuracy", f"not run: {_err(acc)}", "", None)]
    v = acc["variants"]
    rows: list[Row] = []
    rows.append(
        (
            "A. (a) and (b) agree on every case",
            f"{acc['ab_agree']}/{acc['ab_compared']}",
            "all",
            acc["ab_agree"] == acc["ab_compared"],
        )
    )
    for key in ("a", "b"):
        if key in v:
            rows.append(
                (
                    f"A. unparseable arguments ({key})",
                    f"{v[key]['unparseable']}/{v[key]['calls']}",
                    "0",
                    v[key]["unparseable"] == 0,
                )
            )
            rows.append(
                (f"A. crashes ({key})", str(v[key]["crashes"]), "0", v[key]["crashes"] == 0)
            )
    if "a" in v:
        for cat in bfcl_data.CATEGORIES:
            ours = v["a"]["accuracy"][cat]
            others = {k: v[k]["accuracy"][cat] for k in ("c", "d") if k in v}
            shown = ", ".join(f"({k}) {100 * x:.0f}%" for k, x in others.items())
            rows.append(
                (
                    f"A. (a) beats (c) and (d): {cat}",
                    f"{100 * ours:.0f}% vs {shown}",
                    "strictly higher",
                    all(ours > x for x in others.values()),
                )
            )
    return rows


def format_targets(rows: list[Row]) -> str:
    out = ["| figure | measured | target | met |", "|---|---|---|---|"]
    for name, value, target, ok in rows:
        mark = "n/a" if ok is None else ("yes" if ok else "**no**")
        out.append(f"| {name} | {value} | {target} | {mark} |")
    return "\n".join(out)


def _speed_tables(speed: dict[str, Any]) -> list[str]:
    md: list[str] = []
    armed, cons = speed.get("armed"), speed.get("constrained")
    if isinstance(armed, list) and isinstance(cons, list):
        md += [
            "| measurement | model | tools | prompt tokens | tokens | handler tok/s | "
            "baseline tok/s | ratio (median of pairs) | pair ratios |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for label, rows in (("armed, no call", armed), ("inside a call", cons)):
            for r in rows:
                md.append(
                    f"| {label} | {MODEL_LABELS[r['model']]} | {r['n_tools']} | "
                    f"{r['prompt_tokens']} | {r['tokens']} | {r['a_tps']:.1f} | {r['b_tps']:.1f} | "
                    f"{r['ratio']:.3f} | {', '.join(f'{x:.2f}' for x in r['ratios'])} |"
                )
    turns = speed.get("multi_turn")
    if isinstance(turns, dict) and "tooldialect" in turns:
        md += [
            "",
            "Multi-turn agent (Qwen2.5-Coder-0.5B, 3 tools, 6 requests). *new suffix* is "
            "the prompt minus what the KV cache already held (previous prompt and reply); "
            "*decoded* is what was actually run through the model. The *tooldialect Agent* rows "
            "run the same turns through `tooldialect.Agent` with Python tools (a row is a model "
            "call; the agent makes at most 2 a user turn).",
            "",
            "| turn | set-up | prompt tokens | new suffix | decoded | excess | calls |",
            "|---|---|---|---|---|---|---|",
        ]
        for system, rows in turns.items():
            for t in rows:
                if "error" in t and "prompt_tokens" not in t:
                    md.append(f"| {t['turn']} | {system} | error: {t['error'][:80]} | | | | |")
                    continue
                md.append(
                    f"| {t['turn']} | {system} | {t['prompt_tokens']} | {t['new_suffix']} | "
                    f"{t['decoded']} | {t['excess']} | {', '.join(t['calls']) or '-'} |"
                )
    md += loop_table(speed.get("agent_loop"))
    return md


def _overhead_tables(over: dict[str, Any]) -> list[str]:
    md: list[str] = []
    cached, cold = over.get("overhead_cached"), over.get("overhead_cold")
    if isinstance(cached, dict) and not _err(cached) and isinstance(cold, dict) and not _err(cold):
        md += [
            "| MCP tools | cached request | cached render | cached detect | grammar build | "
            "grammar peak MB | cold compile | cold detect | cold render | cold grammar | "
            "cold total |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n in (10, 50, 250):
            c, k = _get(cached, n), _get(cold, n)
            if c is None or k is None:
                continue
            md.append(
                f"| {n} | {c['total']:.2f} | {c['render']:.2f} | {c['detect']:.2f} | "
                f"{c['grammar']:.2f} | {k.get('grammar_peak_mb', float('nan')):.2f} | "
                f"{k['compile']:.1f} | {k['detect']:.1f} | {k['render']:.1f} | "
                f"{k['grammar']:.1f} | {k['total']:.1f} |"
            )
        md.append(
            "\n(milliseconds; cached request = `prepare_request` with the model set up, median "
            "of 20 calls after a warm-up; cold = median of 5 fresh processes)"
        )
    parser = over.get("parser")
    if isinstance(parser, dict) and not _err(parser):
        md += [
            "",
            f"Parser on {parser['size_mb']} MB ({parser['calls']} calls, "
            f"{parser['chunks']} chunks): batch {parser['batch_mb_s']:.1f} MB/s, streaming "
            f"{parser['stream_mb_s']:.1f} MB/s; `json.loads` of the argument objects alone "
            f"{parser['json_loads_mb_s']:.1f} MB/s of JSON "
            f"({parser['json_loads_over_whole_text_mb_s']:.1f} MB/s counted over the whole "
            f"text). Calls found: {parser['calls_found']}.",
        ]
    mem = over.get("memory")
    if isinstance(mem, dict) and not _err(mem):
        md += [
            "",
            f"Peak RSS: handler {mem['handler_peak_mb']:.0f} MB, plain "
            f"{mem['plain_peak_mb']:.0f} MB (after load: {mem['handler_loaded_mb']:.0f} vs "
            f"{mem['plain_loaded_mb']:.0f} MB).",
        ]
    return md


def write_chart(speed: dict[str, Any], acc: dict[str, Any], path: Path = CHART) -> bool:
    """Speed ratios, accuracy per category and prompt tokens decoded per turn, in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    ax = axes[0]
    labels, values, colors = [], [], []
    for r in speed.get("armed") or [] if isinstance(speed.get("armed"), list) else []:
        labels.append(f"armed\n{MODEL_LABELS[r['model']].split('-')[0]}")
        values.append(r["ratio"])
        colors.append("tab:blue")
    for r in speed.get("constrained") or [] if isinstance(speed.get("constrained"), list) else []:
        labels.append(f"call {r['n_tools']}t\n{MODEL_LABELS[r['model']].split('-')[0]}")
        values.append(r["ratio"])
        colors.append("tab:orange")
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.axhline(0.97, color="tab:blue", ls="--", lw=1, label="target, armed (0.97)")
    ax.axhline(0.85, color="tab:orange", ls="--", lw=1, label="target, in call (0.85)")
    ax.set_ylim(0, 1.15)
    ax.set_title("Decode speed vs baseline (ratio)")
    ax.legend(fontsize=7, loc="lower right")

    ax = axes[1]
    variants = acc.get("variants", {}) if isinstance(acc, dict) else {}
    cats = bfcl_data.CATEGORIES
    width = 0.8 / max(len(variants), 1)
    for i, (key, v) in enumerate(variants.items()):
        xs = [j + i * width for j in range(len(cats))]
        ax.bar(xs, [100 * v["accuracy"][c] for c in cats], width, label=f"({key}) {v['label']}")
    ax.set_xticks(
        [j + 0.4 - width / 2 for j in range(len(cats))],
        [c.replace("_", "\n") for c in cats],
        fontsize=7,
    )
    ax.set_ylim(0, 105)
    ax.set_title("BFCL v4 accuracy, Qwen2.5-Coder-0.5B (%)")
    ax.legend(fontsize=7)

    ax = axes[2]
    turns = speed.get("multi_turn")
    if isinstance(turns, dict):
        for system, rows in turns.items():
            ok = [t for t in rows if "decoded" in t]
            ax.plot(
                [t["turn"] for t in ok], [t["decoded"] for t in ok], "o-", label=f"{system} decoded"
            )
            if system == "tooldialect":
                ax.plot(
                    [t["turn"] for t in ok],
                    [t["prompt_tokens"] for t in ok],
                    "k:",
                    label="prompt length",
                )
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    ax.set_title("Prompt tokens decoded per turn")
    ax.set_xlabel("request")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_doc(
    *,
    speed: dict[str, Any],
    over: dict[str, Any],
    acc: dict[str, Any],
    meta: dict[str, Any],
    path: Path = DOC,
    extra_rows: list[Row] | None = None,
    sections: list[str] | None = None,
) -> str:
    """docs/benchmarks.md; returns the target table. ``extra_rows`` join the target table,
    ``sections`` (markdown) follow the generated doc; what follows :data:`KEEP` in the file
    already there is written by hand and kept."""
    from bench.accuracy import format_table

    targets = format_targets(target_rows(speed, over, acc) + list(extra_rows or []))
    mode = "quick" if meta["quick"] else "full"
    md = [
        "# Benchmarks",
        "",
        "Two questions: does tooldialect slow the model down, and does it get the calls right. "
        "Every number below comes from `python bench/run.py"
        + (" --quick" if meta["quick"] else "")
        + "` on this machine; rerun it to reproduce (set-up: the README's install, then "
        "`python scripts/fetch_models.py`; BFCL data: `pip download --no-deps bfcl-eval`).",
        "",
        f"Run: **{mode}**, {meta['date']}, took {meta['seconds'] / 60:.1f} min. Machine: "
        f"{meta['machine']['cpu']}, {meta['machine']['cores']} cores, n_threads=2, Python "
        f"{meta['machine']['python']}, llama-cpp-python {meta['machine']['llama_cpp_python']}, "
        f"tooldialect {meta.get('tooldialect', '?')} ({meta.get('commit', '?')}).",
        "",
        "![benchmarks](benchmarks.png)",
        "",
        "## Targets",
        "",
        targets,
        "",
        "## Speed",
        "",
        "Ratios are measured within one process, alternating handler (A) and baseline (B), "
        f"{speed.get('reps', 5)} pairs after a warm-up pair ({speed.get('armed_reps', 5)} of "
        f"{speed.get('armed_max_tokens', speed.get('max_tokens', '?'))} tokens for *armed*), "
        "median of the per-pair ratios "
        "(other work on this 2-core machine makes absolute tok/s noisy; the ratio is what is "
        "compared). Decode time = wall time minus llama.cpp's prompt-batch time. Temperature 0. "
        "*Armed*: 10 tools, a prompt whose reply is plain text, against `create_completion` on "
        "the same prompt tokens with no grammar. *Inside a call*: `tool_choice` naming "
        "`save_note`, so the grammar is active from the first token, against unconstrained "
        "`create_completion` of as many tokens on the same prompt.",
        "",
        *_speed_tables(speed),
        "",
        "## Per-request overhead, parser, memory",
        "",
        *_overhead_tables(over),
        "",
        "## Accuracy (BFCL v4)",
        "",
        f'bfcl-eval {acc.get("bfcl_eval", "?")}, Qwen2.5-Coder-0.5B, `tool_choice="auto"`, '
        f"temperature 0, max_tokens {acc.get('max_tokens', '?')}, "
        + (
            "all cases"
            if acc.get("per_category") is None
            else f"{acc.get('per_category')} cases per category (an evenly spread fixed sample)"
        )
        + ". Scored with a port of BFCL's AST checker (`bench/bfcl_score.py`). (c) returns "
        "calls as content text and parses none, so it scores only where no call is expected; "
        "that is what a user of it gets.",
        "",
        format_table(acc) if acc.get("variants") else f"not run: {_err(acc)}",
        "",
        f"(a)/(b) agree on {acc.get('ab_agree', '?')}/{acc.get('ab_compared', '?')} cases"
        + (
            f"; they differ on {', '.join(acc['ab_disagreements'])}."
            if acc.get("ab_disagreements")
            else "."
        ),
        "",
        "Wall time per set-up (s): "
        + ", ".join(f"{k} {v}" for k, v in (acc.get("wall_seconds") or {}).items())
        + ". The full run (all 1,240 cases) takes about "
        + _full_estimate(acc)
        + ".",
        "",
    ]
    if NOTES.exists():
        md += ["## Notes on missed targets", "", NOTES.read_text(encoding="utf-8").strip(), ""]
    if SCHEMAS.exists():  # written by hand from bench/jsonschema_bench.py's output
        md += [SCHEMAS.read_text(encoding="utf-8").strip(), ""]
    md += [
        "## Reproduce",
        "",
        "```",
        "python bench/run.py --quick   # ~15 min",
        "python bench/run.py           # everything, all BFCL cases",
        "python bench/accuracy.py --per-category 20   # accuracy only, a bigger sample",
        "python bench/speed.py --only armed            # one speed figure",
        "python bench/many_tools.py --model smollm2 qwen --tools 100 250 --out "
        "bench/results/many-tools.json",
        "python bench/long_answers.py --models smollm2 qwen --lengths 512,2048,8192 --out "
        "bench/results/long-answers.json",
        "```",
        "",
        "Raw per-case records go to `bench/results/` (not committed); summaries "
        f"`bench/results/{mode}.json`.",
        "",
    ]
    md += list(sections or [])
    path.write_text("\n".join(md) + kept_tail(path), encoding="utf-8")
    return targets


KEEP = "<!-- written by hand from here on: bench/run.py keeps what follows -->"


def kept_tail(path: Path) -> str:
    """The hand-written end of the doc at ``path`` (from the :data:`KEEP` line on), else ``""``."""
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    at = text.find(KEEP)
    return "" if at < 0 else "\n" + text[at:]


def _full_estimate(acc: dict[str, Any]) -> str:
    seconds = sum((acc.get("wall_seconds") or {}).values())
    n = sum((acc.get("n_cases") or {}).values())
    if not n:
        return "? (not measured)"
    total = seconds / n * 1240
    return f"{total / 3600:.1f} h at the quick run's pace"
