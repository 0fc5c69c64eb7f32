"""Per-request overhead, parser throughput and peak memory (targets 4-6 of issue 4).

* Overhead, for 10, 50 and 250 MCP-shaped tools (``bench.mcp_tools``: nested objects, ``$ref``,
  ``anyOf``, enums, descriptions). *Cached* is what a request pays once the handler has its
  model set up: ``prepare_request`` (messages checked, prompt rendered, grammar found in the
  cache), median of later calls in one process (wall time, and the process's CPU time as
  ``request_cpu``: on a loaded machine the wall time counts other processes too); its stages
  are reported alone as well (render,
  detection, an uncached grammar build). *Cold* is the first template compile + detection +
  render + grammar build in a fresh process (median of ``reps`` processes), with the grammar's
  build memory (tracemalloc peak) and size. ``--baseline`` measures the main checkout
  (``BASELINE_SRC``) in alternating child processes of the same run and reports main / new.
* Parser: a ~1 MB mixed output (prose and calls in Qwen's dialect) parsed in one batch, and fed
  to the stream parser in token-sized chunks, against plain ``json.loads`` of the same calls.
* Memory: peak RSS (``ru_maxrss``) of a fresh process that loads Qwen2.5-Coder-0.5B and answers
  one request with 10 tools, through the handler vs plain ``create_chat_completion``, alternated.

Run alone: ``python bench/overhead.py``.
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench import workload
from bench.common import make_llama, median, model_path, quiet_stderr

MESSAGES = workload.CALL_MESSAGES


def _template_and_spec(model: str = "qwen") -> tuple[Any, Any, Any]:
    """(ModelInfo, ChatTemplate, DialectSpec) of a model, read from its GGUF header."""
    import tooldialect

    info = tooldialect.read_gguf_metadata(model_path(model))
    template = tooldialect.ChatTemplate(
        info.chat_template, bos_token=info.bos_token, eos_token=info.eos_token
    )
    spec = tooldialect.detect_dialect(
        info.chat_template, bos_token=info.bos_token, eos_token=info.eos_token
    )
    return info, template, spec


def _build(spec: Any, tools: list[dict[str, Any]]) -> Any:
    from tooldialect.grammar import build_grammar

    return build_grammar(spec, tools, tool_choice="auto")


TOOL_COUNTS = (10, 50, 250)
BASELINE_SRC = "/work/main/src"
"""Sources measured side by side by default with ``--baseline`` (the main branch's checkout);
``--baseline PATH`` names others (e.g. ``git archive <old commit> src`` unpacked)."""


def _cached_child(n_tools: int, reps: int) -> dict[str, float]:
    """In one process, with the template and model setup kept as the handler keeps them: the
    median ms of ``prepare_request`` (what a request pays: messages, render, grammar lookup),
    and of its stages measured alone (render, detection, an uncached grammar build)."""
    import tooldialect
    from bench.mcp_tools import mcp_tools
    from tooldialect.frontend.pipeline import FrontEnd
    from tooldialect.frontend.render import render_prompt
    from tooldialect.frontend.request import ModelSetup

    info, template, spec = _template_and_spec()
    setup = ModelSetup(info=info, template=template, template_origin="gguf", spec=spec, engine=None)
    tools = mcp_tools(n_tools)
    stages: dict[str, list[float]] = {"request": [], "render": [], "detect": [], "grammar": []}
    cpu: list[float] = []
    front = FrontEnd(adapter="bench")
    for _ in range(reps + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        front.prepare_from(setup, MESSAGES, {"tools": tools, "tool_choice": "auto"}, where="bench")
        t1 = time.perf_counter()
        cpu.append((time.process_time() - c0) * 1000)
        render_prompt(template, spec, MESSAGES, tools=tools)
        t2 = time.perf_counter()
        tooldialect.detect_dialect(
            info.chat_template, bos_token=info.bos_token, eos_token=info.eos_token
        )
        t3 = time.perf_counter()
        _build(spec, tools)
        t4 = time.perf_counter()
        for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            stages[key].append(value * 1000)
    out = {k: median(v[1:]) for k, v in stages.items()}  # the first call warms the caches
    out["total"] = out["request"]
    # CPU time of the same calls: on a loaded machine the wall time also counts other processes
    out["request_cpu"] = median(cpu[1:])
    return out


def _cold_child(n_tools: int) -> dict[str, float]:
    """In a fresh process: the first template compile + detect + render + grammar build, and the
    grammar's build memory (tracemalloc peak, MB) and size."""
    import tracemalloc

    import tooldialect
    from bench.mcp_tools import mcp_tools
    from tooldialect.frontend.render import render_prompt

    info = tooldialect.read_gguf_metadata(model_path("qwen"))
    tools = mcp_tools(n_tools)
    wall = [time.perf_counter()]
    cpu = [time.process_time()]  # on a loaded machine the wall time counts other processes too

    def mark() -> None:
        wall.append(time.perf_counter())
        cpu.append(time.process_time())

    template = tooldialect.ChatTemplate(
        info.chat_template, bos_token=info.bos_token, eos_token=info.eos_token
    )
    mark()
    spec = tooldialect.detect_dialect(
        info.chat_template, bos_token=info.bos_token, eos_token=info.eos_token
    )
    mark()
    render_prompt(template, spec, MESSAGES, tools=tools)
    mark()
    _build(spec, tools)
    mark()
    out: dict[str, float] = {}
    names = ("compile", "detect", "render", "grammar")
    for suffix, marks in (("", wall), ("_cpu", cpu)):
        for name, a, b in zip(names, marks, marks[1:], strict=False):
            out[name + suffix] = 1000 * (b - a)
        out["total" + suffix] = 1000 * (marks[-1] - marks[0])
    tracemalloc.start()
    grammar = _build(spec, tools)
    out["grammar_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    out["grammar_kb"] = len(getattr(grammar, "gbnf", "")) / 1e3
    return out


def _sides(baseline: str | None) -> dict[str, str | None]:
    from pathlib import Path

    sides: dict[str, str | None] = {"new": None}
    if baseline and Path(baseline).is_dir():
        sides["main"] = baseline
    return sides


def request_pipeline(n_tools: int, *, reps: int, baseline: str | None = None) -> dict[str, Any]:
    """Cached timings (ms), in a child per side; with ``baseline`` the main checkout too,
    alternating, and the ratio main / new of each figure."""
    return _alternate(["--cached", str(n_tools), "--reps", str(reps)], 3, baseline)


def cold_pipeline(n_tools: int, *, reps: int, baseline: str | None = None) -> dict[str, Any]:
    """Median over ``reps`` fresh processes of the cold timings (ms): the first process that
    ever sees the template (an empty compiled-template cache, ``prompt/code_cache.py``), and
    under ``disk_warm`` a later process (the cache holds the compiled template)."""
    import tempfile

    with tempfile.TemporaryDirectory() as empty_root, tempfile.TemporaryDirectory() as warm:
        counter = iter(range(1_000_000))

        def empty() -> dict[str, str]:  # a new empty directory per process
            return {"TOOLDIALECT_CACHE_DIR": f"{empty_root}/{next(counter)}"}

        first = _alternate(["--cold", str(n_tools)], reps, baseline, extra_env=empty)
        _child(["--cold", str(n_tools)], env_extra={"TOOLDIALECT_CACHE_DIR": warm})
        first["disk_warm"] = _alternate(
            ["--cold", str(n_tools)], reps, None, extra_env=lambda: {"TOOLDIALECT_CACHE_DIR": warm}
        )
    return first


def _alternate(
    args: list[str],
    runs: int,
    baseline: str | None,
    *,
    extra_env: Callable[[], dict[str, str]] | None = None,
) -> dict[str, Any]:
    sides = _sides(baseline)
    rows: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(runs):
        for side, src in sides.items():
            env_extra = extra_env() if extra_env is not None else None
            rows[side].append(_child(args, src=src, env_extra=env_extra))
    out: dict[str, Any] = {k: median([r[k] for r in rows["new"]]) for k in rows["new"][0]}
    if "main" in rows:
        main = {k: median([r[k] for r in rows["main"]]) for k in rows["main"][0]}
        out["main"] = main
        out["main_over_new"] = {
            k: round(main[k] / out[k], 2) for k in out if k in main and isinstance(out[k], float)
        }
    return out


def parser_throughput(*, reps: int) -> dict[str, Any]:
    """MB/s of batch and streaming parsing of ~1 MB of mixed output, and of ``json.loads``."""
    from tooldialect.parse import StreamParser, parse_output

    _, _, spec = _template_and_spec()
    tools = workload.make_tools(1)
    text, arguments = workload.mixed_output(spec)
    chunks = workload.token_chunks(text)
    size_mb = len(text.encode("utf-8")) / 1e6
    n_calls = len(arguments)

    def batch() -> int:
        return len(parse_output(text, spec, tools=tools).tool_calls)

    def stream() -> int:
        parser = StreamParser(spec, tools=tools)
        starts = 0
        for chunk in [*chunks, None]:
            deltas = parser.feed(chunk) if chunk is not None else parser.close()
            for delta in deltas:
                starts += sum(1 for c in delta.get("tool_calls") or () if c.get("id"))
        return starts

    def loads() -> int:
        return len([json.loads(a) for a in arguments])

    timings: dict[str, list[float]] = {"batch": [], "stream": [], "json_loads": []}
    counts = {}
    for _ in range(reps):  # alternate the three
        for name, fn in (("batch", batch), ("stream", stream), ("json_loads", loads)):
            start = time.perf_counter()
            counts[name] = fn()
            timings[name].append(time.perf_counter() - start)
    json_mb = sum(len(a) for a in arguments) / 1e6
    return {
        "size_mb": round(size_mb, 3),
        "calls": n_calls,
        "chunks": len(chunks),
        "calls_found": counts,
        "batch_mb_s": size_mb / median(timings["batch"]),
        "stream_mb_s": size_mb / median(timings["stream"]),
        # json.loads reads only the argument bytes; MB/s is over those bytes
        "json_loads_mb_s": json_mb / median(timings["json_loads"]),
        "json_loads_over_whole_text_mb_s": size_mb / median(timings["json_loads"]),
    }


def _memory_child(variant: str) -> dict[str, float]:
    """Load Qwen, answer one request with 10 tools, report peak RSS in MB."""
    system = "tooldialect" if variant == "handler" else "default"
    with quiet_stderr():
        llm = make_llama("qwen", system, n_ctx=4096)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    llm.create_chat_completion(
        messages=MESSAGES,
        tools=workload.make_tools(10),
        tool_choice="auto",
        temperature=0.0,
        max_tokens=16,
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"loaded_mb": loaded, "peak_mb": peak}


def memory(*, reps: int) -> dict[str, Any]:
    """Peak RSS, handler vs plain, alternating fresh processes."""
    rows: dict[str, list[dict[str, float]]] = {"handler": [], "plain": []}
    for _ in range(reps):
        for variant in ("handler", "plain"):
            rows[variant].append(_child(["--memory", variant]))
    handler = median([r["peak_mb"] for r in rows["handler"]])
    plain = median([r["peak_mb"] for r in rows["plain"]])
    return {
        "handler_peak_mb": handler,
        "plain_peak_mb": plain,
        "ratio": handler / plain,
        "handler_loaded_mb": median([r["loaded_mb"] for r in rows["handler"]]),
        "plain_loaded_mb": median([r["loaded_mb"] for r in rows["plain"]]),
    }


def _child(
    args: list[str], *, src: str | None = None, env_extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """This file in a fresh process; ``src`` replaces the tooldialect sources on its path."""
    import os

    env = {**os.environ, **(env_extra or {})}
    if src is not None:
        env["PYTHONPATH"] = src
    proc = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args!r} failed: {proc.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run(*, reps: int = 5, memory_reps: int | None = None, baseline: bool = False) -> dict[str, Any]:
    """All four measurements; a failing one is reported, not fatal. ``baseline`` measures the
    main checkout's overhead side by side (``BASELINE_SRC``)."""
    results: dict[str, Any] = {"reps": reps, "memory_reps": memory_reps or reps}
    steps = [
        (
            "overhead_cached",
            lambda: {n: request_pipeline(n, reps=20, baseline=baseline) for n in TOOL_COUNTS},
        ),
        (
            "overhead_cold",
            lambda: {n: cold_pipeline(n, reps=reps, baseline=baseline) for n in TOOL_COUNTS},
        ),
        ("parser", lambda: parser_throughput(reps=reps)),
        ("memory", lambda: memory(reps=memory_reps or reps)),
    ]
    for name, step in steps:
        start = time.perf_counter()
        try:
            results[name] = step()
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        results[f"{name}_seconds"] = round(time.perf_counter() - start, 1)
        print(
            f"overhead: {name} done in {results[f'{name}_seconds']} s", file=sys.stderr, flush=True
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cached", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--only-overhead", action="store_true", help="skip parser and memory")
    parser.add_argument(
        "--baseline",
        nargs="?",
        const=BASELINE_SRC,
        default=None,
        help=f"also measure these tooldialect sources (default {BASELINE_SRC}), side by side",
    )
    parser.add_argument("--memory", choices=["handler", "plain"], help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    if args.cold is not None:
        print(json.dumps(_cold_child(args.cold)))
    elif args.cached is not None:
        print(json.dumps(_cached_child(args.cached, args.reps)))
    elif args.only_overhead:
        cached = {n: request_pipeline(n, reps=20, baseline=args.baseline) for n in TOOL_COUNTS}
        cold = {n: cold_pipeline(n, reps=args.reps, baseline=args.baseline) for n in TOOL_COUNTS}
        print(json.dumps({"overhead_cached": cached, "overhead_cold": cold}, indent=1))
    elif args.memory:
        print(json.dumps(_memory_child(args.memory)))
    else:
        print(json.dumps(run(reps=args.reps, baseline=args.baseline), indent=1))


if __name__ == "__main__":
    main()
