"""Run every benchmark, print the target table, write docs/benchmarks.md and docs/benchmarks.png.

    python bench/run.py --quick     # about 15 minutes on 2 cores (issue 20's parts at small sizes)
    python bench/run.py             # all BFCL cases, longer decodes (hours; see the doc)

Model processes run one at a time. Sections that cannot run (a missing model, an API not there)
are reported as "not run" with the reason instead of stopping the run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import datetime
import json
import subprocess
import time
from typing import Any

from bench import accuracy, overhead, report, speed
from bench.common import RESULTS, ROOT, machine, write_json
from bench.scale import ISSUE_20, write_doc


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small samples, short decodes")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=["speed", "overhead", "accuracy", *ISSUE_20],
        help="leave a part out",
    )
    parser.add_argument(
        "--per-category",
        type=int,
        default=None,
        help="BFCL cases per category (default: quick sample or all)",
    )
    parser.add_argument(
        "--from-results",
        type=Path,
        default=None,
        help="rewrite the doc and chart from a saved bench/results/*.json",
    )
    args = parser.parse_args(argv)
    if args.from_results:
        return _rewrite(json.loads(args.from_results.read_text(encoding="utf-8")))
    mode = "quick" if args.quick else "full"
    start = time.perf_counter()
    results: dict[str, Any] = {}
    if "overhead" not in args.skip:
        # peak RSS barely varies; each sample is a fresh model load, so quick takes 3
        results["overhead"] = overhead.run(reps=5, memory_reps=3 if args.quick else 5)
    if "speed" not in args.skip:
        results["speed"] = speed.run(quick=args.quick)
    for name, (run_part, _, _) in ISSUE_20.items():
        if name in args.skip:
            continue
        part_start = time.perf_counter()
        try:
            results[name] = run_part(args.quick)
        except Exception as exc:  # a part that cannot run is reported, not fatal
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        results[f"{name}_seconds"] = round(time.perf_counter() - part_start, 1)
        print(f"{name} done in {results[f'{name}_seconds']} s", file=sys.stderr, flush=True)
        write_json(RESULTS / f"{mode}-partial.json", results)  # a cut run keeps what it had
    if "accuracy" not in args.skip:
        per_category = args.per_category or (accuracy.QUICK_PER_CATEGORY if args.quick else None)
        try:
            results["accuracy"] = accuracy.run(per_category=per_category, tag=mode)
        except Exception as exc:
            results["accuracy"] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        import tooldialect

        version = tooldialect.__version__
    except Exception:
        version = "?"
    meta = {
        "quick": args.quick,
        "date": datetime.date.today().isoformat(),
        "seconds": time.perf_counter() - start,
        "machine": machine(),
        "tooldialect": version,
        "commit": _commit(),
    }
    results["meta"] = meta
    write_json(RESULTS / f"{mode}.json", results)
    speed_r, acc_r = (results.get(k, {}) for k in ("speed", "accuracy"))
    try:
        report.write_chart(speed_r, acc_r)
    except Exception as exc:  # a chart problem must not hide the numbers
        print(f"chart failed: {exc!r}", file=sys.stderr)
    targets = write_doc(results)
    print(targets)
    if acc_r.get("variants"):
        print()
        print(accuracy.format_table(acc_r))
    print(
        f"\n{mode} run took {meta['seconds'] / 60:.1f} min; wrote {report.DOC} and {report.CHART}"
    )
    return 0


def _rewrite(results: dict[str, Any]) -> int:
    speed_r, acc_r = (results.get(k, {}) for k in ("speed", "accuracy"))
    report.write_chart(speed_r, acc_r)
    print(write_doc(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
