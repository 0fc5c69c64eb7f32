"""JSONSchemaBench: our schema compiler against llama-cpp-python's converter on real schemas.

Reads the sample in ``../shared/jsonschemabench`` (``<Subset>.jsonl.gz``; its README says where it
comes from) and never copies it. For every schema, both compilers are run and their grammars
loaded by llama.cpp (the same ``llama_sampler_init_grammar`` check as ``tests/grammar_check.py``);
every test instance is then fed to each grammar as the canonical JSON layout (``json.dumps``:
``", "`` and ``": "``), once as written and once with object keys put in declared order (both
compilers write keys in the order ``properties`` lists them).

Reported per compiler: compile-and-load coverage, crashes (any exception other than a refusal,
or a dead worker process), refusal reasons, valid instances accepted, invalid instances rejected.
A valid instance that our grammar rejects and that has keys outside ``properties`` of an object
that does not declare ``additionalProperties`` is counted apart ("closed by choice": our objects
are closed by default, docs/structured-output.md). Invalid instances accepted are split by
whether our compiler claimed the schema exactly (no entry in ``SchemaConverter.loose``).

Schemas run in worker processes (``--jobs``, default 1), a chunk each, so a llama.cpp abort costs
one schema, reported as a crash, not the run::

    python bench/jsonschema_bench.py --limit 20            # the first 20 schemas of each subset
    python bench/jsonschema_bench.py --out bench/results/jsonschema.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "jsonschemabench"
if not DATA.exists():
    DATA = Path("/work/shared/jsonschemabench")
SUBSETS = (
    "Glaiveai2K",
    "Github_trivial",
    "Github_easy",
    "Github_medium",
    "Github_hard",
    "Github_ultra",
    "JsonSchemaStore",
    "Kubernetes",
    "Snowplow",
    "WashingtonPost",
)
CHUNK = 10
SCHEMA_TIMEOUT_S = 120


def load_rows(data: Path, subset: str) -> list[dict[str, Any]]:
    with gzip.open(data / f"{subset}.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# -- instance layout -------------------------------------------------------------------------


def _property_orders(schema: Any) -> list[list[str]]:
    """Every ``properties`` key list in the schema document, outermost first."""
    found: list[list[str]] = []
    stack = [schema]
    while stack:
        node = stack.pop(0)
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping) and props:
                found.append(list(props))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def declared_order(value: Any, orders: list[list[str]]) -> Any:
    """``value`` with each object's keys in the order of the ``properties`` list that covers
    most of them (keys it does not list keep their order, after the listed ones)."""
    if isinstance(value, list):
        return [declared_order(v, orders) for v in value]
    if not isinstance(value, dict):
        return value
    keys = set(value)
    best = max(orders, key=lambda o: len(keys & set(o)), default=[])
    rank = {k: i for i, k in enumerate(best)}
    ordered = sorted(value, key=lambda k: (rank.get(k, len(rank)), 0))
    return {k: declared_order(value[k], orders) for k in ordered}


def closed_schema(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` wherever ``properties`` or
    ``patternProperties`` is given without it: the objects our compiler closes by default."""
    if isinstance(schema, list):
        return [closed_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: closed_schema(v) for k, v in schema.items()}
    opens = "properties" in out or "patternProperties" in out
    if (
        opens
        and "additionalProperties" not in out
        and isinstance(out.get("properties", {}), Mapping)
    ):
        out["additionalProperties"] = False
    return out


def _fails_closed(schema: Any, instance: Any) -> bool:
    try:
        import jsonschema
    except ImportError:
        return False
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        return not cls(closed_schema(schema)).is_valid(instance)
    except Exception:
        return False


# -- compilers -------------------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    pointer = getattr(exc, "pointer", "") or ""
    msg = str(exc)
    parts = [p for p in pointer.split("/") if p and not p.isdigit()]
    last = parts[-1] if parts else ""
    if last == "pattern":
        m = re.search(r"uses (.+?), which", msg)
        return f"pattern: {m.group(1) if m else '?'}"[:60]
    if "conflict on" in msg:
        m = re.search(r"conflict on '([^']+)'", msg)
        return f"allOf conflict on {m.group(1) if m else '?'}"
    if "$ref" in msg:
        return "$ref: " + ("non-local" if "only local" in msg else "unresolved")
    if last in {"type"} and "unknown type" in msg:
        return "unknown type"
    return last or msg[:50]


def compile_ours(schema: Any) -> tuple[str, bool]:
    """Our grammar (canonical layout) and whether the compiler claims it exact."""
    from tooldialect.grammar.codec import codec_for
    from tooldialect.grammar.gbnf import GbnfBuilder
    from tooldialect.grammar.schema import SchemaConverter

    b = GbnfBuilder()
    root = b.name("root")
    conv = SchemaConverter(b, schema, codec=codec_for("json", "canonical"))
    b.define(root, conv.visit(schema, "", hint="value"))
    loose = getattr(conv, "loose", None)
    return b.render(root), loose is not None and not loose


def compile_llama(schema: Any) -> tuple[str, bool]:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return json_schema_to_gbnf(json.dumps(schema)), False


COMPILERS = {"ours": compile_ours, "llama_cpp": compile_llama}


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def measure(row: dict[str, Any], llama: Any, compilers: list[str]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from grammar_check import grammar_accepts, validate_grammar, vocab_of

    schema = row["schema"]
    orders = _property_orders(schema)
    out: dict[str, Any] = {"id": row["id"], "tests": len(row["tests"])}
    for name in compilers:
        res: dict[str, Any] = {}
        out[name] = res
        # the driver reads this if the process dies: the crash is this compiler's
        print(json.dumps({"running": name, "id": row["id"]}), flush=True)
        t0 = time.perf_counter()
        try:
            with _time_limit(SCHEMA_TIMEOUT_S):
                try:
                    gbnf, exact = COMPILERS[name](schema)
                except _Timeout:
                    raise
                except Exception as exc:
                    from tooldialect.errors import UnsupportedSchemaError

                    refused = isinstance(exc, UnsupportedSchemaError) or (
                        name == "llama_cpp" and not isinstance(exc, RecursionError)
                    )
                    res["status"] = "refused" if refused else "crash"
                    res["reason"] = (
                        _reason(exc) if refused else f"{type(exc).__name__}: {str(exc)[:80]}"
                    )
                    continue
                try:
                    validate_grammar(gbnf, vocab=vocab_of(llama))
                except Exception as exc:
                    res["status"] = "load-fail"
                    res["reason"] = str(exc).splitlines()[0][:80]
                    continue
                res["status"] = "ok"
                res["exact"] = exact
                counts = collections.Counter()
                for test in row["tests"]:
                    data = test["data"]
                    texts = dict.fromkeys(
                        json.dumps(v, ensure_ascii=False)
                        for v in (data, declared_order(data, orders))
                    )
                    accepted = [grammar_accepts(gbnf, t, llama=llama) for t in texts]
                    if test["valid"]:
                        counts["valid"] += 1
                        if accepted[0]:
                            counts["valid_as_written"] += 1
                        if any(accepted):
                            counts["valid_accepted"] += 1
                        elif _fails_closed(schema, data):
                            counts["valid_closed"] += 1
                    else:
                        counts["invalid"] += 1
                        if not any(accepted):
                            counts["invalid_rejected"] += 1
                res.update(counts)
        except _Timeout:
            res["status"] = "timeout"
        res["seconds"] = round(time.perf_counter() - t0, 3)
    return out


# -- driver ----------------------------------------------------------------------------------


def worker(data: Path, subset: str, start: int, end: int, compilers: list[str]) -> None:
    sys.setrecursionlimit(10_000)
    import llama_cpp

    from bench.common import model_path

    llama = llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)
    rows = load_rows(data, subset)[start:end]
    for row in rows:
        result = measure(row, llama, compilers)
        result["subset"] = subset
        print(json.dumps(result), flush=True)


def _run_chunk(
    data: Path, subset: str, ids: list[str], start: int, end: int, compilers: list[str]
) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    while start < end:
        cmd = [sys.executable, __file__, "--worker", subset, str(start), str(end)]
        cmd += ["--data", str(data), "--compilers", ",".join(compilers)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        parsed = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        lines = [x for x in parsed if "running" not in x]
        got += lines
        start += len(lines)
        if proc.returncode != 0 and start < end:
            # the process died on schema `start`, in the compiler it said it was running
            running = [x["running"] for x in parsed if "running" in x] or ["ours"]
            dead = {"status": "crash", "reason": f"process died (signal {-proc.returncode})"}
            row = {"id": ids[start], "subset": subset, "tests": 0, running[-1]: dead}
            got.append(row)
            start += 1
        elif proc.returncode != 0:
            break
    return got


def summarize(rows: list[dict[str, Any]], compilers: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name in compilers:
        s: dict[str, Any] = collections.Counter()
        reasons: collections.Counter[str] = collections.Counter()
        per_subset: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        for r in rows:
            res = r.get(name)
            if res is None:
                continue
            s["schemas"] += 1
            per_subset[r["subset"]]["schemas"] += 1
            s[res["status"]] += 1
            per_subset[r["subset"]][res["status"]] += 1
            if res["status"] in ("refused", "load-fail", "crash"):
                reasons[f"{res['status']}: {res.get('reason', '')}"] += 1
            if res["status"] == "ok":
                for k in (
                    "valid",
                    "valid_as_written",
                    "valid_accepted",
                    "valid_closed",
                    "invalid",
                    "invalid_rejected",
                ):
                    s[k] += res.get(k, 0)
                leaked = res.get("invalid", 0) - res.get("invalid_rejected", 0)
                s["invalid_accepted_exact" if res.get("exact") else "invalid_accepted_loose"] += (
                    leaked
                )
                s["exact_schemas"] += bool(res.get("exact"))
                if (
                    r["tests"]
                    and res.get("valid_accepted", 0) == res.get("valid", 0)
                    and (res.get("invalid_rejected", 0) == res.get("invalid", 0))
                ):
                    s["all_tests_pass"] += 1
                if r["tests"]:
                    s["ok_with_tests"] += 1
            if r["tests"]:
                s["with_tests"] += 1
        n = max(1, s["schemas"])
        excusable = s["valid"] - s["valid_closed"]
        summary[name] = {
            **dict(s),
            "coverage": round(s["ok"] / n, 4),
            "valid_accepted_rate": round(s["valid_accepted"] / max(1, s["valid"]), 4),
            "valid_accepted_rate_excl_closed": round(s["valid_accepted"] / max(1, excusable), 4),
            "invalid_rejected_rate": round(s["invalid_rejected"] / max(1, s["invalid"]), 4),
            "all_tests_pass_of_with_tests": round(s["all_tests_pass"] / max(1, s["with_tests"]), 4),
            "reasons": dict(reasons.most_common()),
            "per_subset": {k: dict(v) for k, v in sorted(per_subset.items())},
        }
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    for name, s in summary.items():
        print(f"== {name}")
        print(
            f"  coverage {s['coverage']:.1%} ({s.get('ok', 0)}/{s['schemas']}), "
            f"crashes {s.get('crash', 0)}, refused {s.get('refused', 0)}, "
            f"load-fail {s.get('load-fail', 0)}, timeout {s.get('timeout', 0)}"
        )
        print(
            f"  valid accepted {s['valid_accepted_rate']:.1%} of {s.get('valid', 0)} "
            f"(as written {s.get('valid_as_written', 0)}; rejected because closed by choice "
            f"{s.get('valid_closed', 0)}; "
            f"excluding those {s['valid_accepted_rate_excl_closed']:.1%})"
        )
        print(
            f"  invalid rejected {s['invalid_rejected_rate']:.1%} of {s.get('invalid', 0)} "
            f"(accepted where claimed exact: {s.get('invalid_accepted_exact', 0)}, "
            f"where loose: {s.get('invalid_accepted_loose', 0)})"
        )
        print(f"  all instance tests pass: {s['all_tests_pass_of_with_tests']:.1%} of schemas")
        for reason, count in list(s["reasons"].items())[:25]:
            print(f"    {count:4d}  {reason}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=None, help="schemas per subset")
    ap.add_argument("--subsets", default=",".join(SUBSETS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--compilers", default="ours,llama_cpp")
    ap.add_argument("--out", type=Path, default=None, help="write rows and summary as JSON")
    ap.add_argument(
        "--rows", type=Path, default=None, help="append each schema's row here as it finishes"
    )
    ap.add_argument(
        "--summarize", type=Path, nargs="+", default=None, help="summarize --rows files and exit"
    )
    ap.add_argument("--worker", nargs=3, metavar=("SUBSET", "START", "END"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    compilers = [c for c in args.compilers.split(",") if c]
    if args.summarize:
        rows = [json.loads(x) for f in args.summarize for x in f.read_text().splitlines() if x]
        print_summary(summarize(rows, compilers))
        print(f"({len(rows)} schemas)")
        return 0
    if args.worker:
        subset, start, end = args.worker
        worker(args.data, subset, int(start), int(end), compilers)
        return 0
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the JSONSchemaBench sample)")
        return 0
    tasks = []
    for subset in args.subsets.split(","):
        ids = [r["id"] for r in load_rows(args.data, subset)]
        n = len(ids) if args.limit is None else min(len(ids), args.limit)
        for start in range(0, n, CHUNK):
            tasks.append((subset, ids, start, min(n, start + CHUNK)))
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [
            pool.submit(_run_chunk, args.data, s, i, a, z, compilers) for s, i, a, z in tasks
        ]
        for fut in futures:
            chunk = fut.result()
            rows += chunk
            if args.rows:
                with args.rows.open("a", encoding="utf-8") as fh:
                    fh.writelines(json.dumps(r) + "\n" for r in chunk)
    summary = summarize(rows, compilers)
    print_summary(summary)
    print(f"({len(rows)} schemas in {time.perf_counter() - t0:.0f} s)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
