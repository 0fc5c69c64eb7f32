"""Accuracy on BFCL v4 (simple_python, multiple, parallel, parallel_multiple, irrelevance).

Four set-ups answer the same cases on Qwen2.5-Coder-0.5B with ``tool_choice="auto"``,
temperature 0:

* ``a`` tooldialect, non-streaming;
* ``b`` tooldialect, streaming, deltas reassembled;
* ``c`` llama-cpp-python's default handler (the GGUF's own template); it parses nothing, so only
  ``tool_calls`` it returns count, calls written as content text do not;
* ``d`` ``chat_format="chatml-function-calling"``.

Each set-up runs in its own process (one model in memory at a time, a segfault costs one case),
writing one JSON line per case, and is restarted after the case that killed it. Scoring uses
:mod:`bench.bfcl_score`. Run alone: ``python bench/accuracy.py --quick``.
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import bfcl_data, bfcl_score
from bench.common import RESULTS, make_llama, quiet_stderr

VARIANTS = {
    "a": "tooldialect",
    "b": "tooldialect, streaming",
    "c": "default template handler",
    "d": "chatml-function-calling",
}
SYSTEM_OF = {"a": "tooldialect", "b": "tooldialect", "c": "default", "d": "chatml-fc"}
QUICK_PER_CATEGORY = 3
MODEL = "qwen"
N_CTX = 8192  # some BFCL tool lists are long
MAX_TOKENS = 256


def calls_of_message(message: dict[str, Any]) -> list[tuple[str, str]]:
    """``(name, arguments)`` of a response message's ``tool_calls`` (arguments as JSON text)."""
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        arguments = fn.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append((str(fn.get("name", "")), arguments))
    return calls


def reassemble(chunks: Iterable[dict[str, Any]]) -> tuple[str, list[tuple[str, str]], str | None]:
    """Content, calls and finish reason from a stream of chat-completion chunks."""
    content: list[str] = []
    names: dict[int, str] = {}
    args: dict[int, list[str]] = defaultdict(list)
    finish: str | None = None
    for chunk in chunks:
        choice = chunk["choices"][0]
        delta = choice.get("delta") or {}
        if delta.get("content"):
            content.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            index = call.get("index", 0)
            fn = call.get("function") or {}
            if fn.get("name"):
                names[index] = names.get(index, "") + fn["name"]
            if fn.get("arguments"):
                args[index].append(fn["arguments"])
        finish = choice.get("finish_reason") or finish
    indices = sorted(set(names) | set(args))
    return "".join(content), [(names.get(i, ""), "".join(args[i])) for i in indices], finish


def answer(llm: Any, case: bfcl_data.Case, *, stream: bool, max_tokens: int) -> dict[str, Any]:
    """One case through ``llm``: content, calls, finish reason, seconds, or the exception."""
    start = time.perf_counter()
    record: dict[str, Any] = {"id": case.id, "category": case.category}
    # Every case starts from an empty KV cache: llama.cpp's logits differ in the last bits with
    # how the prompt was batched, and a warm cache for (b) after (a) could flip a greedy near-tie.
    llm.reset()
    try:
        response = llm.create_chat_completion(
            messages=case.messages,
            tools=case.tools(),
            tool_choice="auto",
            temperature=0.0,
            max_tokens=max_tokens,
            stream=stream,
        )
        if stream:
            content, calls, finish = reassemble(response)
        else:
            choice = response["choices"][0]
            content = choice["message"].get("content") or ""
            calls, finish = calls_of_message(choice["message"]), choice.get("finish_reason")
        record.update(content=content, calls=calls, finish_reason=finish, error=None)
    except Exception as exc:  # a crash is a result here: count it and go on
        record.update(
            content="", calls=[], finish_reason=None, error=f"{type(exc).__name__}: {exc}"
        )
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def run_worker(system: str, ids: list[str], out: Path, max_tokens: int) -> None:
    """Answer ``ids`` with one set-up, appending a JSON line per (variant, case) to ``out``."""
    cases = {c.id: c for cat in bfcl_data.CATEGORIES for c in bfcl_data.load_category(cat)}
    variants = [v for v, s in SYSTEM_OF.items() if s == system]
    try:
        with quiet_stderr():
            llm = make_llama(MODEL, system, n_ctx=N_CTX)
    except Exception as exc:  # e.g. the handler is not importable yet: every case is a crash
        with out.open("a", encoding="utf-8") as fh:
            for case_id in ids:
                for variant in variants:
                    fh.write(
                        json.dumps(_crash(cases[case_id], variant, f"set-up failed: {exc!r}"))
                        + "\n"
                    )
        return
    with out.open("a", encoding="utf-8") as fh:
        for case_id in ids:
            for variant in variants:
                # mark the case first: if the process dies, the parent sees which case did it
                fh.write(json.dumps({"start": case_id, "variant": variant}) + "\n")
                fh.flush()
                record = answer(llm, cases[case_id], stream=variant == "b", max_tokens=max_tokens)
                record["variant"] = variant
                fh.write(json.dumps(record) + "\n")
                fh.flush()


def _crash(case: bfcl_data.Case, variant: str, error: str) -> dict[str, Any]:
    return {
        "id": case.id,
        "category": case.category,
        "variant": variant,
        "content": "",
        "calls": [],
        "finish_reason": None,
        "error": error,
        "seconds": 0.0,
    }


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run_system(system: str, cases: list[bfcl_data.Case], out: Path, max_tokens: int) -> None:
    """Run one set-up in child processes until every case has a record (a death = a crash)."""
    out.unlink(missing_ok=True)
    variants = [v for v, s in SYSTEM_OF.items() if s == system]
    ids = [c.id for c in cases]
    for _attempt in range(len(ids) + 1):
        lines = _read_lines(out)
        done = {(r["variant"], r["id"]) for r in lines if "id" in r}
        todo = [i for i in ids if any((v, i) not in done for v in variants)]
        if not todo:
            return
        starts = [r for r in lines if "start" in r and (r["variant"], r["start"]) not in done]
        if starts:  # the previous child died inside this case
            dead = starts[-1]
            with out.open("a", encoding="utf-8") as fh:
                for v in variants:
                    if (v, dead["start"]) not in done:
                        case = next(c for c in cases if c.id == dead["start"])
                        fh.write(json.dumps(_crash(case, v, "process died")) + "\n")
            continue
        ids_file = out.with_suffix(".ids")
        ids_file.write_text("\n".join(todo), encoding="utf-8")
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            system,
            "--ids",
            str(ids_file),
            "--out",
            str(out),
            "--max-tokens",
            str(max_tokens),
        ]
        subprocess.run(cmd, check=False)
    raise RuntimeError(f"{system!r} did not finish: see {out}")


def select_cases(per_category: int | None) -> list[bfcl_data.Case]:
    cases = []
    for category in bfcl_data.CATEGORIES:
        cases += bfcl_data.sample(bfcl_data.load_category(category), per_category)
    return cases


def score_records(records: list[dict[str, Any]], cases: list[bfcl_data.Case]) -> dict[str, Any]:
    """Per variant: accuracy per category, unparseable-argument rate, crashes; and a/b agreement."""
    by_id = {c.id: c for c in cases}
    summary: dict[str, Any] = {"variants": {}, "n_cases": {}}
    for cat in bfcl_data.CATEGORIES:
        summary["n_cases"][cat] = sum(1 for c in cases if c.category == cat)
    results: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        if "id" not in record:
            continue
        case = by_id[record["id"]]
        calls = [tuple(c) for c in record["calls"]]
        verdict = bfcl_score.score(
            case.category, case.functions, case.answer, calls, case.name_map()
        )
        record["valid"], record["error_type"] = verdict.valid, verdict.error_type
        results[record["variant"]][record["id"]] = record
    for variant, recs in sorted(results.items()):
        per_cat = {}
        for cat in bfcl_data.CATEGORIES:
            rs = [r for r in recs.values() if r["category"] == cat]
            per_cat[cat] = sum(r["valid"] for r in rs) / len(rs) if rs else float("nan")
        n_calls = sum(len(r["calls"]) for r in recs.values())
        bad = sum(1 for r in recs.values() for _, a in r["calls"] if not _is_json_object(a))
        summary["variants"][variant] = {
            "label": VARIANTS[variant],
            "accuracy": per_cat,
            "overall": sum(r["valid"] for r in recs.values()) / max(len(recs), 1),
            "calls": n_calls,
            "unparseable": bad,
            "unparseable_rate": bad / n_calls if n_calls else 0.0,
            "crashes": sum(1 for r in recs.values() if r["error"]),
            "crash_examples": sorted({r["error"] for r in recs.values() if r["error"]})[:3],
            "seconds": round(sum(r["seconds"] for r in recs.values()), 1),
        }
    a, b = results.get("a", {}), results.get("b", {})
    disagree = [i for i in a if i in b and not _same_answer(a[i], b[i])]
    summary["ab_agree"] = len([i for i in a if i in b]) - len(disagree)
    summary["ab_compared"] = len([i for i in a if i in b])
    summary["ab_disagreements"] = disagree
    return summary


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (json.JSONDecodeError, TypeError):
        return False


def _canonical_calls(calls: list[Any]) -> list[tuple[str, Any]]:
    out = []
    for name, arguments in calls:
        try:
            out.append((name, json.loads(arguments)))
        except (json.JSONDecodeError, TypeError):
            out.append((name, arguments))
    return out


def _same_answer(x: dict[str, Any], y: dict[str, Any]) -> bool:
    same_calls = _canonical_calls(x["calls"]) == _canonical_calls(y["calls"])
    return same_calls and (x["content"] or "").strip() == (y["content"] or "").strip()


def run(
    *, per_category: int | None, max_tokens: int = MAX_TOKENS, tag: str = "quick"
) -> dict[str, Any]:
    """Run all four set-ups, score them, save raw records and the summary under bench/results/."""
    bfcl_data.fetch()
    cases = select_cases(per_category)
    records: list[dict[str, Any]] = []
    timings = {}
    for system in ("tooldialect", "default", "chatml-fc"):
        out = RESULTS / f"accuracy-{tag}-{system}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        run_system(system, cases, out, max_tokens)
        timings[system] = round(time.perf_counter() - start, 1)
        records += [r for r in _read_lines(out) if "id" in r]
        print(f"accuracy: {system} done in {timings[system]} s", file=sys.stderr, flush=True)
    summary = score_records(records, cases)
    summary.update(
        per_category=per_category,
        max_tokens=max_tokens,
        wall_seconds=timings,
        bfcl_eval=bfcl_data.wheel_version(),
        model=MODEL,
    )
    (RESULTS / f"accuracy-{tag}-records.json").write_text(json.dumps(records, indent=1) + "\n")
    return summary


def format_table(summary: dict[str, Any]) -> str:
    """A Markdown table: one row per set-up."""
    cats = bfcl_data.CATEGORIES
    head = "| set-up | " + " | ".join(f"{c} (n={summary['n_cases'][c]})" for c in cats)
    head += " | overall | unparseable args | crashes |"
    rows = [head, "|" + "---|" * (len(cats) + 4)]
    for variant, v in summary["variants"].items():
        accs = " | ".join(f"{100 * v['accuracy'][c]:.0f}%" for c in cats)
        rows.append(
            f"| ({variant}) {v['label']} | {accs} | {100 * v['overall']:.0f}% | "
            f"{v['unparseable']}/{v['calls']} | {v['crashes']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_PER_CATEGORY} cases a category"
    )
    parser.add_argument("--per-category", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--ids", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        ids = Path(args.ids).read_text(encoding="utf-8").split()
        run_worker(args.worker, ids, Path(args.out), args.max_tokens)
        return
    per_category = args.per_category or (QUICK_PER_CATEGORY if args.quick else None)
    tag = "quick" if args.quick else ("full" if per_category is None else f"n{per_category}")
    summary = run(per_category=per_category, max_tokens=args.max_tokens, tag=tag)
    (RESULTS / f"accuracy-{tag}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(format_table(summary))
    print(f"(a)/(b) agree on {summary['ab_agree']}/{summary['ab_compared']} cases")


if __name__ == "__main__":
    main()
