"""BFCL ``multi_turn_base`` (issue 38 §7): multi-turn tool use against BFCL's executable backends.

Each case is a conversation of user turns over stateful backends (a file system, a trading bot,
a travel agency, a car, ...). The cases, ground truth, function docs, backends and checker come
from the ``bfcl-eval`` wheel that ``bench/bfcl_data.py`` fetches into ``bench/.cache/bfcl``:
the backends (``eval_checker/multi_turn_eval/func_source_code``) and BFCL's own checker
(``multi_turn_checker.py``, ``multi_turn_utils.py``) are imported from the unzipped wheel by
putting it on ``sys.path`` (``MathAPI`` needs ``mpmath``: ``pip install mpmath``).

A case runs as BFCL runs a function-calling model (``base_handler.inference_multi_turn_FC``):
per user turn the user message is appended, then the model is asked (``tool_choice="auto"``,
greedy) until it replies without calls; each reply's calls become BFCL's python call strings
(``convert_to_function_call``: ``name(k=repr(v),...)``), run against the case's backend
instances, and their results go back as ``role: tool`` messages. A turn whose model is still
calling after ``--max-steps`` steps ends the case, as BFCL's 20-step limit does
(``force_terminated``; 8 by default here, a CPU's budget: a small model that calls 8 times in
one turn is looping). A reply whose arguments do not decode ends the turn (BFCL does the same).
The calls per turn are then scored by BFCL's ``multi_turn_checker`` against the ground truth:
the state of every backend and the execution results, after every turn.

Beyond BFCL: a call to a function the case does not offer, or with a key that is not a Python
name, is not ``eval``-ed (BFCL would ``eval`` it); it runs as ``refused_call()``, which fails
with a ``NameError`` as an unknown name does under BFCL. Each case has a time budget, checked
before each model call (``--case-cpu-seconds``: the process's CPU time, the model's threads
included, not wall time: on a shared machine a process may be paused or starved by others, and
a case must not fail for that); a case over it, or one that raises, is recorded as such
(``bench:timeout``, ``bench:exception``), never ending the run.

The slice: ``SLICE_SIZE`` cases spread evenly over the 200 (every tenth id: 0, 10, ..., 190),
fixed before any model output was seen. It covers all eight backends. The cases run grouped by
their backends (``run_order``: 0, 20, 30, 10, 40, 50, 70, 60, ...), so the tools' prefix of the
prompt, 3,000-7,000 tokens, is decoded once per group; a partial run covers the same cases in
the same order whatever the library.

    .venv/bin/python bench/bfcl_multi_turn.py --model qwen15 --mode steered --label after
    PYTHONPATH=/tmp/roundstart/src .venv/bin/python bench/bfcl_multi_turn.py --model qwen15 \\
        --label before      # another checkout's library (the JSON records which was imported)
    .venv/bin/python bench/bfcl_multi_turn.py --table A.json B.json   # the Markdown tables

Results: ``bench/results/bfcl-multi-turn-<model>-<label>.json``, rewritten after every case
(``--resume`` goes on from the cases there).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import importlib
import json
import os
import re
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bench import bfcl_data
from bench.common import RESULTS, machine, model_path, quiet_stderr, write_json

CATEGORY = "multi_turn_base"
SLICE_SIZE = 20
N_CTX = 16384
"""Two backends' docs are 20-28 KB of JSON (about 7,000 tokens); the results add up."""
MAX_STEPS = 8
MAX_TOKENS = 512
CASE_CPU_SECONDS = 7200.0
"""About an hour of both cores; each case is also bounded by turns x max_steps x max_tokens."""
REFUSED = "refused_call()"
"""What runs instead of a call that must not reach ``eval`` (see the module docstring)."""
MODES = ("steered", "unsteered")
MODEL_LABELS = {
    "smollm2": "SmolLM2-135M",
    "qwen": "Qwen2.5-Coder-0.5B",
    "qwen15": "Qwen2.5-Coder-1.5B",
}
UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
BACKENDS = "bfcl_eval.constants.executable_backend_config"

Message = dict[str, Any]
Reply = Callable[[list[Message], list[dict[str, Any]]], Message]
"""A model: (messages, tools) -> the assistant message (``finish_reason`` may be added)."""


# ---- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MultiTurnCase:
    """One BFCL multi-turn case: user turns over stateful backends, and the calls that answer."""

    id: str
    turns: list[list[Message]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    functions: list[dict[str, Any]]
    """BFCL function docs of the involved classes, in their order (as BFCL populates them)."""
    ground_truth: list[list[str]]

    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tools, converted as ``bfcl_data`` converts single-turn functions."""
        return [bfcl_data.to_openai_tool(f) for f in self.functions]

    def entry(self) -> dict[str, Any]:
        """The test entry BFCL's checker reads."""
        return {
            "id": self.id,
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
        }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def data_file(folder: Path) -> Path:
    pattern = re.compile(rf"BFCL_v\d+_{CATEGORY}\.json")
    matches = sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name))
    if not matches:
        raise FileNotFoundError(f"no BFCL file for {CATEGORY!r} in {folder}")
    return matches[-1]


def bfcl_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """BFCL's multi-turn execution helpers, checker and backend table, from the unzipped wheel."""
    root = str(bfcl_data.fetch().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return (
        importlib.import_module(UTILS),
        importlib.import_module(CHECKER),
        importlib.import_module(BACKENDS),
    )


def load_cases(data: Path | None = None) -> list[MultiTurnCase]:
    """All ``multi_turn_base`` cases, in the data file's order, with their ground truth."""
    data = data or bfcl_data.fetch()
    doc_files: dict[str, str] = bfcl_modules()[2].MULTI_TURN_FUNC_DOC_FILE_MAPPING
    answers = {a["id"]: a["ground_truth"] for a in read_jsonl(data_file(data / "possible_answer"))}
    cases = []
    for entry in read_jsonl(data_file(data)):
        functions = []
        for name in entry["involved_classes"]:
            functions.extend(read_jsonl(data / "multi_turn_func_doc" / doc_files[name]))
        cases.append(
            MultiTurnCase(
                id=entry["id"],
                turns=entry["question"],
                initial_config=entry.get("initial_config", {}),
                involved_classes=entry["involved_classes"],
                functions=functions,
                ground_truth=answers[entry["id"]],
            )
        )
    return cases


def select(cases: list[MultiTurnCase], n: int = SLICE_SIZE) -> list[MultiTurnCase]:
    """The fixed slice: ``n`` cases spread evenly over all (every tenth of 200 for 20)."""
    step = len(cases) / n if n < len(cases) else 1
    return [cases[int(i * step)] for i in range(min(n, len(cases)))]


def run_order(cases: list[MultiTurnCase]) -> list[MultiTurnCase]:
    """Cases with the same backends together (first appearance first, ids in order within):
    their prompts share the tools' prefix, which the KV cache then decodes once, not per case."""
    groups: dict[tuple[str, ...], list[MultiTurnCase]] = {}
    for case in cases:
        groups.setdefault(tuple(case.involved_classes), []).append(case)
    return [case for group in groups.values() for case in group]


# ---- calls --------------------------------------------------------------------------------------


class DecodeError(ValueError):
    """A call's arguments are not a JSON object: BFCL's decoding fails the same way."""


@dataclass(frozen=True)
class PythonCall:
    """One OpenAI tool call as BFCL's python call string, and what is run for it."""

    text: str
    """``convert_to_function_call``'s string: ``name(k=repr(v),...)``."""
    runnable: str
    """``text``, or ``REFUSED`` where ``eval`` must not see it."""


def python_call(name: str, arguments: str | dict[str, Any], *, known: set[str]) -> PythonCall:
    """BFCL's ``convert_to_function_call`` for one call (``arguments`` a JSON string or dict)."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise DecodeError(f"{name}: arguments are not JSON: {exc}") from exc
    if not isinstance(args, dict):
        raise DecodeError(f"{name}: arguments are not an object: {args!r}")
    text = f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"
    # values are repr()s of JSON data, so literals; only a name or key could inject code
    safe = name in known and all(k.isidentifier() for k in args)
    return PythonCall(text=text, runnable=text if safe else REFUSED)


def python_calls(message: Message, known: set[str]) -> list[PythonCall]:
    """The calls of an assistant message, as BFCL's decoded execution list."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(
            python_call(str(function.get("name")), function.get("arguments") or "{}", known=known)
        )
    return calls


# ---- backends -----------------------------------------------------------------------------------


class Backends:
    """A case's backend instances, as BFCL keeps them: in ``multi_turn_utils``' globals, under
    a name made of the model name and case id. A fresh token per run keeps runs apart; ``close``
    removes every instance the run and its scoring made."""

    def __init__(self, case: MultiTurnCase) -> None:
        self.case = case
        self.token = f"tdbench_{uuid.uuid4().hex[:12]}"
        self.utils = bfcl_modules()[0]

    def execute(self, calls: list[str]) -> list[str]:
        """Run calls on this run's instances (created on first use from the initial config)."""
        results, _ = self.utils.execute_multi_turn_func_call(
            calls, self.case.initial_config, self.case.involved_classes, self.token, self.case.id
        )
        return [str(r) for r in results]

    def score(self, decoded: list[list[list[str]]]) -> dict[str, Any]:
        """BFCL's ``multi_turn_checker`` verdict on the calls per turn and step."""
        checker = bfcl_modules()[1]
        result = checker.multi_turn_checker(
            decoded, self.case.ground_truth, self.case.entry(), CATEGORY, self.token
        )
        return dict(result)

    def close(self) -> None:
        namespace = vars(self.utils)
        for name in [n for n in namespace if n.startswith(self.token)]:
            del namespace[name]


# ---- one case -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    max_steps: int = MAX_STEPS
    case_cpu_seconds: float = CASE_CPU_SECONDS


@dataclass
class CaseRun:
    """What a case's run produced: per turn, its steps; how it stopped."""

    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    model_calls: int = 0
    stop: str = ""
    """'' when every turn ran; else ``force_terminated``, ``timeout`` or ``exception``."""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


def assistant_history(message: Message) -> Message:
    """The reply as it goes back into the conversation."""
    kept: Message = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        kept["tool_calls"] = message["tool_calls"]
    return kept


def take_step(
    run: CaseRun, reply: Reply, messages: list[Message], tools: list[dict[str, Any]], env: Backends
) -> bool:
    """One model call of a turn and its calls' execution; True when the turn goes on."""
    message = reply(messages, tools)
    run.model_calls += 1
    usage = message.get("usage") or {}
    run.prompt_tokens = max(run.prompt_tokens, int(usage.get("prompt_tokens", 0)))
    run.completion_tokens += int(usage.get("completion_tokens", 0))
    messages.append(assistant_history(message))
    step: dict[str, Any] = {"finish_reason": message.get("finish_reason")}
    run.turns[-1].append(step)
    if not message.get("tool_calls"):
        step["text"] = message.get("content") or ""
        return False
    try:
        calls = python_calls(message, {f["name"] for f in env.case.functions})
    except DecodeError as exc:
        step["undecodable"] = str(exc)
        return False
    step["calls"] = [c.text for c in calls]
    runnable = [c.runnable for c in calls]
    if runnable != step["calls"]:
        step["executed"] = runnable
    step["results"] = env.execute(runnable)
    for call, result in zip(message["tool_calls"], step["results"], strict=True):
        messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
    return True


def play(case: MultiTurnCase, reply: Reply, env: Backends, limits: Limits) -> CaseRun:
    """Every turn of ``case``, as BFCL's inference loop runs them."""
    run = CaseRun()
    messages: list[Message] = []
    tools = case.tools()
    started = time.process_time()
    try:
        for turn in case.turns:
            messages.extend(turn)
            run.turns.append([])
            while True:
                if time.process_time() - started > limits.case_cpu_seconds:
                    run.stop = "timeout"
                    return run
                if not take_step(run, reply, messages, tools, env):
                    break
                if sum("calls" in s for s in run.turns[-1]) >= limits.max_steps:
                    run.stop = "force_terminated"
                    return run
    except Exception as exc:  # a case's failure is its record, never the run's end
        run.stop, run.error = "exception", f"{type(exc).__name__}: {exc}"
    return run


def decoded_turns(run: CaseRun) -> list[list[list[str]]]:
    """Per turn, per step with calls, what was executed: the checker's decoded model result."""
    return [
        [step.get("executed", step["calls"]) for step in steps if step.get("calls")]
        for steps in run.turns
    ]


def verdict(case: MultiTurnCase, run: CaseRun, env: Backends) -> tuple[bool, str, str]:
    """(correct, error type, message): BFCL's eval of one multi-turn entry."""
    if run.stop in ("timeout", "exception"):
        return False, f"bench:{run.stop}", run.error
    if len(run.turns) != len(case.ground_truth):
        return False, "multi_turn:force_terminated", f"stopped in turn {len(run.turns) - 1}"
    try:
        result = env.score(decoded_turns(run))
    except Exception as exc:  # BFCL's checker asserts on some states
        return False, "bench:checker_exception", f"{type(exc).__name__}: {exc}"
    message = str(result.get("error_message", ""))
    details = result.get("details") or {}
    if "differences" in details:  # the attributes whose state differs, with both values
        message += f" differences: {json.dumps(details['differences'], default=str)}"
    elif "missing_items" in details:
        message += f" missing: {json.dumps(details['missing_items'], default=str)}"
    return bool(result["valid"]), str(result.get("error_type", "")), message


def run_case(case: MultiTurnCase, reply: Reply, *, limits: Limits = Limits()) -> dict[str, Any]:
    """Play and score one case; the record the results file keeps."""
    started, cpu = time.perf_counter(), time.process_time()
    env = Backends(case)
    try:
        run = play(case, reply, env, limits)
        correct, error_type, error = verdict(case, run, env)
    finally:
        env.close()
    return {
        "id": case.id,
        "classes": case.involved_classes,
        "turns": len(case.turns),
        "correct": correct,
        "error_type": error_type,
        "error": error[:1000],
        "stop": run.stop,
        "calls": [[c for s in steps for c in s.get("calls", [])] for steps in run.turns],
        "steps": run.turns,
        "model_calls": run.model_calls,
        "prompt_tokens_max": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }


# ---- the model ----------------------------------------------------------------------------------


def has_steering_option() -> bool:
    """Whether the imported ``ToolChatHandler`` takes ``steer_calls`` (the round start does not)."""
    from tooldialect import ToolChatHandler

    try:
        ToolChatHandler(steer_calls=True)  # type: ignore[call-arg, unused-ignore]
    except TypeError:
        return False
    return True


def make_handler(mode: str) -> Any:
    """``steered``: the handler's defaults, whatever the library; ``unsteered``: no steering."""
    from tooldialect import ToolChatHandler

    if mode == "steered":
        return ToolChatHandler()
    if not has_steering_option():
        raise SystemExit("this tooldialect has no steer_calls option: use --mode steered")
    return ToolChatHandler(steer_calls=False)  # type: ignore[call-arg, unused-ignore]


def load_model(model: str, mode: str, *, n_ctx: int, threads: int) -> Any:
    from llama_cpp import Llama

    with quiet_stderr():
        return Llama(
            model_path=str(model_path(model)),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
            seed=0,
            chat_handler=make_handler(mode),
        )


def llama_reply(llm: Any, *, max_tokens: int, progress: bool = False) -> Reply:
    """A ``Reply`` on a ``Llama``: greedy, ``tool_choice="auto"``, as BFCL asks an FC model."""

    def reply(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        started = time.perf_counter()
        out = llm.create_chat_completion(
            messages=[dict(m) for m in messages],
            tools=tools,
            tool_choice="auto",
            temperature=0.0,
            max_tokens=max_tokens,
        )
        choice = out["choices"][0]
        if progress:
            usage = out.get("usage") or {}
            print(
                f"  reply {len(messages)} messages: {usage.get('prompt_tokens')} prompt, "
                f"{usage.get('completion_tokens')} completion tokens, "
                f"{len(choice['message'].get('tool_calls') or [])} calls, "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
        return {
            **choice["message"],
            "finish_reason": choice.get("finish_reason"),
            "usage": out.get("usage"),
        }

    return reply


# ---- the run ------------------------------------------------------------------------------------


def git_commit(path: Path) -> dict[str, Any]:
    """The commit of the checkout holding ``path`` ('' for a snapshot outside git)."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=False
        )
        return out.stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "src_changed": bool(git("status", "--porcelain"))}


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "cases": len(records),
        "correct": sum(r["correct"] for r in records),
        "error_types": dict(Counter(r["error_type"] for r in records if not r["correct"])),
        "model_calls": sum(r["model_calls"] for r in records),
        "seconds": round(sum(r["seconds"] for r in records), 1),
    }


def run(args: argparse.Namespace) -> None:
    import tooldialect

    library = Path(tooldialect.__file__).resolve().parent
    print(f"tooldialect: {library}", flush=True)
    out = args.out or RESULTS / f"bfcl-multi-turn-{args.model}-{args.label}.json"
    records: list[dict[str, Any]] = []
    if args.resume and out.exists():
        records = json.loads(out.read_text(encoding="utf-8"))["cases"]
    every = load_cases()
    wanted = set(args.ids.split(",")) if args.ids else set()
    cases = [c for c in every if c.id in wanted] if wanted else select(every, args.cases)
    cases = run_order(cases)
    done = {r["id"] for r in records}
    llm = load_model(args.model, args.mode, n_ctx=args.n_ctx, threads=args.threads)
    reply = llama_reply(llm, max_tokens=args.max_tokens, progress=args.progress)
    limits = Limits(max_steps=args.max_steps, case_cpu_seconds=args.case_cpu_seconds)
    meta = {
        "model": args.model,
        "model_label": MODEL_LABELS[args.model],
        "label": args.label,
        "mode": args.mode,
        "steer_calls_option": has_steering_option(),
        "library": {"path": str(library), **git_commit(library), "note": args.library_note},
        "bfcl_eval": bfcl_data.wheel_version(),
        "machine": machine(),
        "settings": {
            "n_ctx": args.n_ctx,
            "max_tokens": args.max_tokens,
            "max_steps": args.max_steps,
            "case_cpu_seconds": args.case_cpu_seconds,
            "temperature": 0.0,
            "tool_choice": "auto",
        },
    }
    for case in cases:
        if case.id in done:
            continue
        record = run_case(case, reply, limits=limits)
        records.append(record)
        print(
            f"{case.id}: {'correct' if record['correct'] else 'wrong'} {record['error_type']} "
            f"{record['model_calls']} model calls, {record['seconds']} s",
            flush=True,
        )
        data = {**meta, "load_average": os.getloadavg(), "summary": summarize(records)}
        write_json(out, {**data, "cases": records})
    print()
    print(markdown([json.loads(out.read_text(encoding="utf-8"))]))
    print(f"\nwrote {out}")


# ---- tables -------------------------------------------------------------------------------------


def cell(record: dict[str, Any] | None) -> str:
    if record is None:
        return "-"
    if record["correct"]:
        return "**correct**"
    return str(record["error_type"]).replace("multi_turn:", "")


def summary_rows(results: list[dict[str, Any]]) -> Iterator[str]:
    yield "| run | library | cases | correct | model calls | seconds |"
    yield "|---|---|---:|---:|---:|---:|"
    for data in results:
        s = summarize(data["cases"])
        library = data["library"]
        commit = library.get("note") or library.get("commit", "")[:7] or library["path"]
        yield (
            f"| {data['label']} ({data['mode']}) | {commit} | {s['cases']} | {s['correct']} "
            f"| {s['model_calls']} | {s['seconds']:.0f} |"
        )


def markdown(results: list[dict[str, Any]]) -> str:
    """A summary table, then one row per case with each run's verdict and model calls."""
    lines = list(summary_rows(results))
    by_run = [{r["id"]: r for r in data["cases"]} for data in results]
    ids = list(dict.fromkeys(i for runs in by_run for i in runs))
    labels = [data["label"] for data in results]
    lines += ["", "| case | backends | turns | " + " | ".join(labels) + " | model calls |"]
    lines.append("|---|---|---:|" + "---|" * len(labels) + "---|")
    for case_id in ids:
        records = [runs.get(case_id) for runs in by_run]
        first = next(r for r in records if r is not None)
        calls = " / ".join(str(r["model_calls"]) if r else "-" for r in records)
        lines.append(
            f"| {case_id.replace('multi_turn_base_', '')} | {', '.join(first['classes'])} "
            f"| {first['turns']} | " + " | ".join(cell(r) for r in records) + f" | {calls} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="issue 38 §7: BFCL multi_turn_base")
    parser.add_argument("--model", choices=sorted(MODEL_LABELS), default="qwen15")
    parser.add_argument("--mode", choices=MODES, default="steered")
    parser.add_argument("--label", default="run")
    parser.add_argument("--cases", type=int, default=SLICE_SIZE, help="size of the even slice")
    parser.add_argument("--ids", default="", help="comma-separated case ids instead of the slice")
    parser.add_argument("--max-steps", type=int, default=MAX_STEPS)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--case-cpu-seconds", type=float, default=CASE_CPU_SECONDS)
    parser.add_argument("--n-ctx", type=int, default=N_CTX)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--resume", action="store_true", help="skip cases already in --out")
    parser.add_argument("--progress", action="store_true", help="print each model call")
    parser.add_argument(
        "--library-note", default="", help="recorded as is: which commit a snapshot's src is"
    )
    parser.add_argument("--table", type=Path, nargs="+", help="print results files' tables")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown([json.loads(p.read_text(encoding="utf-8")) for p in args.table]))
        return
    run(args)


if __name__ == "__main__":
    main()
