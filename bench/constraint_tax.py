"""The constraint tax (issue 31 s1): BFCL answered in four modes, on one model at a time.

Per case, four modes run back to back on one ``Llama`` (the prompt is the same, so the KV cache
reuses it and prefill is paid once per case):

* ``parse``: no grammar at all; the model decodes freely and the parser reads its calls
  (``LlamaCppEngine(constrain="off")``);
* ``lazy``: the default, a lazy grammar armed by the dialect's trigger under ``"auto"``;
* ``first``: the same grammar constraining from the first token, no trigger awaited
  (``LlamaCppEngine(constrain="first_token")``): the reply must be a call;
* ``required``: ``tool_choice="required"`` where the case expects a call (irrelevance and
  live_irrelevance keep ``"auto"``).

Greedy, ``max_tokens`` 256, ``n_ctx`` 8192, every case from an empty KV cache whose prompt is
decoded once first (``warm``), so the four modes start from the same logits. Recorded per case
and mode: the calls, content, finish reason, whether each call parses and matches its tool's JSON
Schema (validity), and BFCL's AST verdict (``bench.bfcl_score``). Raw records go to
``bench/results/constraint-tax-<model>.jsonl``, one line per case, appended as it goes: a killed
run continues where it stopped (a case that killed the process twice is recorded as a crash;
once may be the run being stopped, so it is tried again).

    python bench/constraint_tax.py --model smollm2 [--per-category 20]
    python bench/constraint_tax.py --table smollm2 qwen qwen15   # the Markdown table
    python bench/constraint_tax.py --model qwen15 --add-mode lazy_natural --redo  # after a
        # change that widened the grammar: again where the grammar acted
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from bench import bfcl_data, bfcl_score
from bench.accuracy import calls_of_message
from bench.common import RESULTS, quiet_stderr
from tooldialect.grammar.codec import ArgumentLayout

Constrain = Literal["request", "first_token", "off"]
"""``LlamaCppEngine(constrain=...)``."""

MODES = ("parse", "lazy", "first", "required")
EXTRA_MODES = ("lazy_free", "lazy_natural", "steered")
"""Modes run afterwards over the cases already done (``--add-mode``), kept in a file of their
own (``results_path(model, mode)``) so that a run in progress can go on appending."""
MODE_LABELS = {
    "parse": "parse only (no grammar)",
    "lazy": "lazy grammar, canonical layout (the default before)",
    "lazy_free": "lazy grammar, free whitespace",
    "lazy_natural": "lazy grammar, natural layout (the default before steering)",
    "steered": "**lazy grammar, natural layout, steered (the default)**",
    "first": "grammar from the first token",
    "required": 'tool_choice="required"',
}
CONSTRAIN: dict[str, Constrain] = {
    "parse": "off",
    "lazy": "request",
    "lazy_free": "request",
    "lazy_natural": "request",
    "steered": "request",
    "first": "first_token",
    "required": "request",
}
ROWS = ("parse", "steered", "lazy_natural", "lazy", "lazy_free", "first", "required")
"""The table's rows, in order."""
LAYOUT: dict[str, ArgumentLayout] = {
    "lazy_free": "free",
    "lazy_natural": "natural",
    "steered": "natural",
}
"""Argument layout per mode (``ToolChatHandler(argument_layout=...)``); the rest canonical, as
every run so far was made."""
CATEGORIES = bfcl_data.CATEGORIES + bfcl_data.LIVE_CATEGORIES
NO_CALL_EXPECTED = ("irrelevance", "live_irrelevance")
PER_CATEGORY = 20
MAX_TOKENS = 256
N_CTX = 8192
N_THREADS = 1
"""On a loaded machine llama.cpp's threads spin at each barrier: SmolLM2 decoded 30 tokens in
2.5 s with one thread and 33.7 s with two (load average 9 on 2 cores). Greedy output does not
depend on the thread count (each row of a product is one thread's)."""


def results_path(model: str, mode: str = "") -> Path:
    return RESULTS / f"constraint-tax-{model}{'-' + mode if mode else ''}.jsonl"


def select_cases(per_category: int) -> list[bfcl_data.Case]:
    """A fixed, evenly spread sample of every category (all of a smaller one), taken round
    robin over the categories, so that a run stopped early still covers each one alike."""
    samples = [bfcl_data.sample(bfcl_data.load_category(c), per_category) for c in CATEGORIES]
    longest = max(len(s) for s in samples)
    return [s[i] for i in range(longest) for s in samples if i < len(s)]


def call_validity(name: str, arguments: str, tools: list[dict[str, Any]]) -> dict[str, bool]:
    """Whether a call names an offered tool, its arguments parse as a JSON object, and they
    match the tool's JSON Schema (``parameters``)."""
    import jsonschema  # type: ignore[import-untyped]

    schema = next(
        (t["function"]["parameters"] for t in tools if t["function"]["name"] == name), None
    )
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"known": schema is not None, "parses": False, "schema": False}
    if not isinstance(args, dict) or schema is None:
        return {"known": schema is not None, "parses": isinstance(args, dict), "schema": False}
    try:
        ok = not any(True for _ in jsonschema.Draft202012Validator(schema).iter_errors(args))
    except jsonschema.SchemaError:
        ok = False
    return {"known": True, "parses": True, "schema": ok}


def answer(handler: Any, llm: Any, case: bfcl_data.Case, mode: str) -> dict[str, Any]:
    """One mode of one case: the reply's calls and content, validity and BFCL verdict."""
    tools = case.tools()
    choice = "required" if mode == "required" and case.category not in NO_CALL_EXPECTED else "auto"
    start = time.perf_counter()
    record: dict[str, Any] = {"tool_choice": choice}
    try:
        done = handler.complete(
            llama=llm,
            messages=case.messages,
            tools=tools,
            tool_choice=choice,
            temperature=0.0,
            max_tokens=MAX_TOKENS,
        )
        choice_out = done.response["choices"][0]
        message = choice_out["message"]
        calls = calls_of_message(message)
        record.update(
            content=message.get("content") or "",
            calls=calls,
            finish_reason=choice_out.get("finish_reason"),
            completion_tokens=done.result.completion_tokens,
            error=None,
        )
    except Exception as exc:  # a refusal or a crash is a result here: count it and go on
        calls = []
        record.update(
            content="", calls=[], finish_reason=None, error=f"{type(exc).__name__}: {exc}"
        )
    record["validity"] = [call_validity(n, a, tools) for n, a in calls]
    verdict = bfcl_score.score(case.category, case.functions, case.answer, calls, case.name_map())
    record.update(correct=verdict.valid, error_type=verdict.error_type)
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def handlers(llm: Any) -> dict[str, Any]:
    """One handler per engine set-up, all on ``llm``'s shared decoder, options alike but the
    grammar's application (no prefix checkpoints: each case starts from an empty cache)."""
    from tooldialect.engine.in_process import LlamaCppEngine
    from tooldialect.handler import ToolChatHandler

    made: dict[tuple[str, str, bool], Any] = {}
    keys = {m: (CONSTRAIN[m], LAYOUT.get(m, "canonical"), m == "steered") for m in CONSTRAIN}
    for key in keys.values():
        if key not in made:
            # steering only where the mode says so: the other rows stay as they were measured
            handler = ToolChatHandler(
                prefix_checkpoints=False, argument_layout=key[1], steer_calls=key[2]
            )
            handler.setup(llm, engine=LlamaCppEngine(llm, constrain=key[0]))
            made[key] = handler
    return {mode: made[key] for mode, key in keys.items()}


def warm(handler: Any, llm: Any, case: bfcl_data.Case) -> None:
    """Decode the case's prompt once before the four modes. Each mode then reuses it and
    decodes only its last token anew, so all four start from the same logits: a mode that
    decoded the whole prompt in one batch would see logits differing in the last bits and
    flip greedy near-ties (SmolLM2 on parallel_0 began its answer with another word)."""
    try:
        handler.complete(
            llama=llm, messages=case.messages, tools=case.tools(), temperature=0.0, max_tokens=1
        )
    except Exception:  # e.g. a prompt longer than the context: each mode records it
        return


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_model(model: str, *, threads: int) -> Any:
    """The bench's ``Llama`` for ``model`` (a ``tooldialect.model_path`` key)."""
    from llama_cpp import Llama

    from tooldialect import model_path

    with quiet_stderr():
        return Llama(
            model_path=str(model_path(model)),
            n_ctx=N_CTX,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
            seed=0,
        )


def run(model: str, per_category: int, *, threads: int = N_THREADS) -> None:
    """Answer every selected case not yet in the results file, appending as it goes."""
    bfcl_data.fetch()
    out = results_path(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = read_records(out)
    done = {r["id"] for r in lines if "modes" in r}
    started = Counter(r["start"] for r in lines if "start" in r and r["start"] not in done)
    cases = [c for c in select_cases(per_category) if c.id not in done]
    with out.open("a", encoding="utf-8") as fh:
        # Started twice and never finished: the case kills the process. Once is a stopped run.
        for dead in [case_id for case_id, starts in started.items() if starts >= 2]:
            case = next((c for c in cases if c.id == dead), None)
            if case is not None:
                crash = {"model": model, "id": dead, "category": case.category, "crashed": True}
                crash["modes"] = {m: _crash_record() for m in MODES}
                fh.write(json.dumps(crash) + "\n")
                cases.remove(case)
        fh.flush()
        llm = load_model(model, threads=threads)
        by_mode = handlers(llm)
        for index, case in enumerate(cases):
            fh.write(json.dumps({"start": case.id}) + "\n")
            fh.flush()
            llm.reset()  # every case from an empty cache: a resumed run decodes as a whole one
            warm(by_mode["parse"], llm, case)
            record: dict[str, Any] = {"model": model, "id": case.id, "category": case.category}
            record["modes"] = {mode: answer(by_mode[mode], llm, case, mode) for mode in MODES}
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            marks = "".join("+" if record["modes"][m]["correct"] else "." for m in MODES)
            print(
                f"{model} {index + 1}/{len(cases)} {case.id} {marks}", file=sys.stderr, flush=True
            )


def add_mode(
    model: str,
    mode: str,
    *,
    threads: int = N_THREADS,
    redo: bool = False,
    categories: Iterable[str] | None = None,
) -> None:
    """Run ``mode`` over every case the main run has done and this mode has not, each from the
    same warm start as the main run's modes, appending to ``results_path(model, mode)``.

    ``redo``: first drop this mode's records where the grammar acted (its answer differs from
    parse only's), so they run again, after a change that only widened what the grammar allows
    (greedy decoding: where the old grammar never masked the model's choice, a wider one does
    not either, and the answer stays parse only's)."""
    bfcl_data.fetch()
    main_records = [r for r in read_records(results_path(model)) if "modes" in r]
    done = {r["id"] for r in main_records}
    out = results_path(model, mode)
    if redo:
        drop_where_grammar_acted(out, {r["id"]: r["modes"]["parse"] for r in main_records})
    have = {r["id"] for r in read_records(out)}
    wanted = set(categories) if categories else None
    cases = [
        c
        for c in select_cases(10**6)
        if c.id in done and c.id not in have and (wanted is None or c.category in wanted)
    ]
    llm = load_model(model, threads=threads)
    by_mode = handlers(llm)
    with out.open("a", encoding="utf-8") as fh:
        for index, case in enumerate(cases):
            llm.reset()
            warm(by_mode["parse"], llm, case)
            record: dict[str, Any] = {"id": case.id, "category": case.category, "mode": mode}
            record["record"] = answer(by_mode[mode], llm, case, mode)
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            mark = "+" if record["record"]["correct"] else "."
            print(f"{model} {mode} {index + 1}/{len(cases)} {case.id} {mark}", file=sys.stderr)


def drop_where_grammar_acted(path: Path, parse: dict[str, dict[str, Any]]) -> None:
    def same(record: dict[str, Any]) -> bool:
        base = parse.get(record["id"], {})
        got = record["record"]
        return (got["calls"], got["content"]) == (base.get("calls"), base.get("content"))

    records = read_records(path)
    kept = [r for r in records if same(r)]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    print(f"{path.name}: {len(records) - len(kept)} records to redo", file=sys.stderr)


def merged_records(model: str) -> list[dict[str, Any]]:
    """The main run's records with each extra mode's answers folded into ``modes``."""
    records = read_records(results_path(model))
    for mode in EXTRA_MODES:
        extra = {r["id"]: r["record"] for r in read_records(results_path(model, mode))}
        for record in records:
            if "modes" in record and record["id"] in extra:
                record["modes"][mode] = extra[record["id"]]
    return records


def _crash_record() -> dict[str, Any]:
    return {
        "content": "",
        "calls": [],
        "finish_reason": None,
        "error": "process died",
        "validity": [],
        "correct": False,
        "error_type": "crash",
        "seconds": 0.0,
    }


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per category and mode; validity (calls that parse and match their schema)."""
    cases = [r for r in records if "modes" in r]
    out: dict[str, Any] = {
        "n": {},
        "accuracy": {},
        "validity": {},
        "calls": {},
        "cut_invalid": {},
        "errors": {},
    }
    for category in CATEGORIES:
        out["n"][category] = sum(1 for r in cases if r["category"] == category)
    out["cases"] = {}
    for mode in ROWS:
        mine = [r["modes"][mode] for r in cases if mode in r["modes"]]
        if not mine:
            continue
        out["cases"][mode] = len(mine)
        acc = {}
        for category in CATEGORIES:
            rs = [
                r["modes"][mode] for r in cases if r["category"] == category and mode in r["modes"]
            ]
            acc[category] = sum(r["correct"] for r in rs) / len(rs) if rs else None
        acc["overall"] = sum(r["correct"] for r in mine) / len(mine) if mine else None
        out["accuracy"][mode] = acc
        checks = [v for r in mine for v in r["validity"]]
        ok = sum(1 for v in checks if v["known"] and v["parses"] and v["schema"])
        out["calls"][mode] = len(checks)
        out["validity"][mode] = ok / len(checks) if checks else None
        # a reply cut by max_tokens may end in half a call: count those calls apart
        cut = [v for r in mine if r["finish_reason"] == "length" for v in r["validity"]]
        cut_bad = sum(1 for v in cut if not (v["known"] and v["parses"] and v["schema"]))
        out["cut_invalid"][mode] = cut_bad
        out["errors"][mode] = sum(1 for r in mine if r["error"])
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def format_table(model: str, summary: dict[str, Any]) -> str:
    """One Markdown table for ``model``: a row per mode, a column per category."""
    cats = [c for c in CATEGORIES if summary["n"][c]]
    short = {c: c.replace("parallel", "par").replace("multiple", "mult") for c in cats}
    head = "| mode | " + " | ".join(f"{short[c]} ({summary['n'][c]})" for c in cats)
    head += " | overall | valid calls | errors |"
    rows = [f"**{model}**", "", head, "|" + "---|" * (len(cats) + 4)]
    total = sum(summary["n"].values())
    for mode in summary["accuracy"]:
        acc = summary["accuracy"][mode]
        label = MODE_LABELS[mode]
        if summary["cases"][mode] < total:
            label += f" ({summary['cases'][mode]} of the {total} cases)"
        cells = " | ".join(_pct(acc[c]) for c in cats)
        valid = f"{_pct(summary['validity'][mode])} of {summary['calls'][mode]}"
        if summary["cut_invalid"][mode]:
            valid += f" ({summary['cut_invalid'][mode]} invalid cut by max_tokens)"
        rows.append(
            f"| {label} | {cells} | {_pct(acc['overall'])} | {valid} | {summary['errors'][mode]} |"
        )
    return "\n".join(rows)


def paired(records: list[dict[str, Any]]) -> str:
    """For each extra mode, the cases it ran on: its accuracy beside parse only's and the
    canonical lazy grammar's on those same cases, and how many verdicts differ from parse only."""
    lines = []
    for mode in EXTRA_MODES:
        both = [r["modes"] for r in records if mode in r.get("modes", {})]
        if not both:
            continue

        def acc(m: str, rows: list[dict[str, Any]] = both) -> str:
            return _pct(sum(r[m]["correct"] for r in rows) / len(rows))

        differ = [r for r in both if r[mode]["correct"] != r["parse"]["correct"]]
        valid = [r for r in differ if _all_valid(r["parse"])]
        won = sum(1 for r in differ if r[mode]["correct"])
        lines.append(
            f"On the {len(both)} cases {MODE_LABELS[mode].strip('*')} ran: {acc(mode)}, "
            f"parse only {acc('parse')}, canonical {acc('lazy')}; verdicts that differ from "
            f"parse only: {len(differ)} ({won} won, {len(differ) - won} lost; "
            f"{len(valid)} where parse only's calls were all valid)."
        )
    return "\n".join(lines)


def _all_valid(reply: dict[str, Any]) -> bool:
    return not reply["error"] and all(
        v["known"] and v["parses"] and v["schema"] for v in reply["validity"]
    )


def tables(models: list[str]) -> str:
    parts = []
    for model in models:
        records = merged_records(model)
        if any("modes" in r for r in records):
            parts.append(format_table(model, summarize(records)))
            extra = paired(records)
            if extra:
                parts.append(extra)
    return "\n\n".join(parts)


def verdict_changes(models: list[str], *, base: str, other: str) -> str:
    """The cases whose BFCL verdict differs between two modes, each with both replies: the
    list to read when one mode loses to another (``--changes parse lazy``)."""
    lines = []
    for model in models:
        for record in merged_records(model):
            modes = record.get("modes", {})
            if base not in modes or other not in modes:
                continue
            if modes[base]["correct"] == modes[other]["correct"]:
                continue
            winner = base if modes[base]["correct"] else other
            lines.append(f"{model} {record['id']}: {winner} right")
            for mode in (base, other):
                reply = modes[mode]
                shown = json.dumps(reply["calls"])[:300] or "[]"
                text = reply["content"][:200]
                lines.append(f"    {mode}: calls={shown} content={text!r} {reply['error_type']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a tooldialect.model_path key (smollm2, qwen, qwen15)")
    parser.add_argument("--per-category", type=int, default=PER_CATEGORY)
    parser.add_argument("--threads", type=int, default=N_THREADS)
    parser.add_argument("--table", nargs="*", help="print the table of these models' results")
    parser.add_argument(
        "--add-mode",
        choices=EXTRA_MODES,
        help="run this mode over the cases --model's main run has done (a file of its own)",
    )
    parser.add_argument(
        "--redo",
        action="store_true",
        help="with --add-mode: run again the cases where that mode's grammar acted",
    )
    parser.add_argument(
        "--categories",
        help="with --add-mode: only these categories (comma-separated), the rest left for later",
    )
    parser.add_argument(
        "--changes",
        nargs=2,
        metavar=("BASE", "OTHER"),
        help="list the cases whose verdict differs between two modes (e.g. parse lazy)",
    )
    args = parser.parse_args(argv)
    if args.changes:
        models = [args.model] if args.model else ["smollm2", "qwen", "qwen15"]
        print(verdict_changes(models, base=args.changes[0], other=args.changes[1]))
        return
    if args.table is not None:
        text = tables(args.table or ["smollm2", "qwen", "qwen15"])
        (RESULTS / "constraint-tax.md").write_text(text + "\n", encoding="utf-8")
        print(text)
        return
    if not args.model:
        parser.error("pass --model or --table")
    if args.add_mode:
        wanted = args.categories.split(",") if args.categories else None
        add_mode(args.model, args.add_mode, threads=args.threads, redo=args.redo, categories=wanted)
        return
    run(args.model, args.per_category, threads=args.threads)
    print(tables([args.model]))


if __name__ == "__main__":
    main()
