"""Accuracy of argument layouts and fast-forward: BFCL cases under several handler variants
(``--variants``; the first is the baseline the others are compared with), on one Llama.

    python bench/layout_accuracy.py --per-category 3 --choices auto required --threads 1
    python bench/layout_accuracy.py --variants canonical canonical+ff  # fast-forward agreement

For each case and ``tool_choice`` the variants run back to back on the same prompt (the prompt
is prefilled once, untimed, and reused, so seconds are decode time and load changes hit both
alike). ``required`` skips the
irrelevance category (a forced call there is wrong by construction). Reported per variant:
BFCL-valid count, completion tokens, seconds, and how many cases both variants answer alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import functools
import json
import time
from collections.abc import Sequence
from typing import Any

from bench import bfcl_data, bfcl_score
from bench.accuracy import N_CTX, _same_answer, calls_of_message, select_cases
from bench.common import RESULTS, make_llama, one_token_evals, quiet_stderr

VARIANTS = {
    "free": ("free", False, True, False),
    "free+ff": ("free", True, True, False),
    "canonical": ("canonical", False, True, False),
    "canonical+ff": ("canonical", True, True, False),
    "canonical+ff+lenient": ("canonical", True, False, False),
    "canonical+ff+drafts": ("canonical", True, True, True),
}
"""name -> (argument_layout, fast_forward, strict calls, drafts). ``+lenient``: an ``auto`` call
keeps the lazy grammar's lenient envelope after its trigger
(``LlamaCppEngine(strict_calls=False)``). ``+drafts``: prompt-lookup drafts inside calls
(``LlamaCppEngine(drafts=DraftOptions())``); without it ``drafts=None``."""


def run(
    model: str,
    per_category: int,
    choices: list[str],
    threads: int | None,
    max_tokens: int,
    variants: list[str],
    *,
    explain: bool = False,
    only: Sequence[str] = (),
) -> dict[str, Any]:
    from tooldialect.handler import ToolChatHandler

    bfcl_data.fetch()
    cases = [c for c in select_cases(per_category) if not only or c.id in only]
    with quiet_stderr():
        llm = make_llama(model, "default", n_ctx=N_CTX)
    if threads:
        import llama_cpp

        llama_cpp.llama_set_n_threads(llm._ctx.ctx, threads, threads)
    from tooldialect.engine.in_process import LlamaCppEngine
    from tooldialect.engine.in_process.drafts import DraftOptions

    built = {
        name: ToolChatHandler(argument_layout=layout, fast_forward=ff)  # type: ignore[arg-type]
        for name, (layout, ff, _, _) in VARIANTS.items()
        if name in variants
    }
    engines: dict[str, LlamaCppEngine] = {}
    for name, handler in built.items():  # each variant's engine on the one Llama
        engine = handler.setup(llm).engine
        assert isinstance(engine, LlamaCppEngine)
        engine.strict_calls = VARIANTS[name][2]
        engines[name] = engine

    one_by_one = [False]

    def variant(name: str) -> Any:
        # decoded token by token, a verified draft is exactly what sampling one at a time
        # keeps, so the explaining rerun needs no drafts
        on = VARIANTS[name][3] and not one_by_one[0]
        engines[name].drafts = DraftOptions() if on else None
        return built[name]

    handlers = {
        name: functools.partial(lambda n, **kw: variant(n).complete(**kw), name) for name in built
    }
    base = variants[0]
    records = []
    for choice in choices:
        for case in cases:
            if choice == "required" and case.category == "irrelevance":
                continue
            row: dict[str, Any] = {"id": case.id, "category": case.category, "choice": choice}
            # prefill once, untimed: both variants then start from the same warm prompt
            handlers[base](
                llama=llm,
                messages=case.messages,
                tools=case.tools(),
                tool_choice=choice,
                temperature=0.0,
                max_tokens=1,
            )
            for name, handler in handlers.items():
                start = time.perf_counter()
                done = handler(
                    llama=llm,
                    messages=case.messages,
                    tools=case.tools(),
                    tool_choice=choice,
                    temperature=0.0,
                    max_tokens=max_tokens,
                )
                seconds = time.perf_counter() - start
                out, res = done.response, done.result
                message = out["choices"][0]["message"]
                calls = calls_of_message(message)
                verdict = bfcl_score.score(
                    case.category, case.functions, case.answer, calls, case.name_map()
                )
                stats = res.stats
                row[name] = {
                    "content": message.get("content") or "",
                    "calls": calls,
                    "valid": verdict.valid,
                    "tokens": int(res.completion_tokens),
                    "forced": int(stats.forced_tokens),
                    "drafted": int(stats.draft_proposed),
                    "draft_accepted": sum(stats.draft_accepted),
                    "seconds": round(seconds, 3),
                }
            row["agree"] = all(_same_answer(row[base], row[v]) for v in variants[1:])
            if explain and not row["agree"]:
                # the same fast-forwarded requests with every batch decoded token by token:
                # agreeing then shows the difference came from batched logits, not from the
                # forced tokens themselves
                row["agree_one_by_one"] = {}
                one_by_one[0] = True
                with one_token_evals(llm):
                    for name in variants[1:]:
                        out = handlers[name](
                            llama=llm,
                            messages=case.messages,
                            tools=case.tools(),
                            tool_choice=choice,
                            temperature=0.0,
                            max_tokens=max_tokens,
                        ).response
                        message = out["choices"][0]["message"]
                        again = {
                            "content": message.get("content") or "",
                            "calls": calls_of_message(message),
                        }
                        row["agree_one_by_one"][name] = _same_answer(row[base], again)
                        row.setdefault("one_by_one", {})[name] = again
                one_by_one[0] = False
            records.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    summary: dict[str, Any] = {"model": model, "per_category": per_category, "choices": {}}
    for choice in choices:
        rows = [r for r in records if r["choice"] == choice]
        summary["choices"][choice] = {
            "cases": len(rows),
            "agree": sum(r["agree"] for r in rows),
            "agree_when_decoded_one_by_one": sum(
                r["agree"] or all((r.get("agree_one_by_one") or {"": False}).values()) for r in rows
            ),
            **{
                name: {
                    "valid": sum(r[name]["valid"] for r in rows),
                    "tokens": sum(r[name]["tokens"] for r in rows),
                    "forced": sum(r[name]["forced"] for r in rows),
                    "drafted": sum(r[name]["drafted"] for r in rows),
                    "draft_accepted": sum(r[name]["draft_accepted"] for r in rows),
                    "seconds": round(sum(r[name]["seconds"] for r in rows), 1),
                }
                for name in variants
            },
        }
    return {"summary": summary, "records": records}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--choices", nargs="+", default=["auto", "required"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--variants", nargs="+", default=["free", "canonical+ff"], choices=list(VARIANTS)
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="rerun each disagreement decoding every batch token by token",
    )
    parser.add_argument("--cases", nargs="*", default=[], help="only these case ids")
    args = parser.parse_args(argv)
    result = run(
        args.model,
        args.per_category,
        args.choices,
        args.threads,
        args.max_tokens,
        args.variants,
        explain=args.explain,
        only=args.cases,
    )
    result["summary"]["variants"] = args.variants
    tag = "-".join(v.replace("+", "_") for v in args.variants) + ("-cases" if args.cases else "")
    out = RESULTS / f"layout-accuracy-{args.model}-{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
