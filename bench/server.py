"""The server engine (``tooldialect.ServerClient`` on llama.cpp's ``llama-server``), measured.

    python bench/server.py --quick       # about 10 minutes on 2 quiet cores
    python bench/server.py --part accuracy --per-category 10

Three parts, written to ``bench/results/server-<tag>.json`` and printed as Markdown:

* ``throughput``: completion tokens/s for 1, 2, 4 and 8 concurrent agent conversations (each a
  fixed number of requests: user turn, tool call, tool result, answer) on Qwen2.5-Coder-0.5B, for
  the in-process handler (one ``Llama``; requests serialised by a lock), one llama-server with
  ``--parallel 4`` and two llama-servers with ``--parallel 2`` each. Every set-up gets the same
  two cores: one server with 2 threads, or two servers with 1 thread each.
* ``ttft``: time to the first streamed delta, cold (an unseen prompt) and warm (the same prompt
  again: a slot / the KV cache holds it), in-process and through the server engine.
* ``accuracy``: the BFCL slice of ``bench/accuracy.py`` through the server engine (streaming and
  not, with their agreement), in-process on the same cases, and llama-server ``--jinja``'s own
  ``/v1/chat/completions`` tool parsing.
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

from bench import accuracy, bfcl_data, bfcl_score, common, workload
from bench.common import RESULTS, make_llama, model_path, quiet_stderr

Complete = Callable[..., Any]
MODEL = "qwen"
THREADS = 2
"""Threads per set-up (each server of two gets half); 1 on a loaded machine (threads spin-wait)."""


def _servers(
    stack: ExitStack, count: int, *, parallel: int, extra: list[str] | None = None
) -> list[str]:
    from tooldialect.engine.llama_server import LlamaServer

    threads = str(max(1, THREADS // count))
    urls = []
    for _ in range(count):
        server = LlamaServer(
            model_path(MODEL),
            args=[
                "-t",
                threads,
                "-tb",
                threads,
                "-c",
                str(2048 * parallel),
                "--parallel",
                str(parallel),
                "--cont-batching",
                *(extra or []),
            ],
        )
        urls.append(stack.enter_context(server).url)
    return urls


def _conversation(complete: Complete, k: int, requests: int, max_tokens: int) -> int:
    """One agent conversation of ``requests`` requests; returns completion tokens."""
    turns = [f"(conversation {k}) {t}" for t in workload.AGENT_USER_TURNS]
    messages: list[dict[str, Any]] = [workload.AGENT_SYSTEM, {"role": "user", "content": turns[0]}]
    tokens = 0
    for i in range(requests):
        out = complete(
            messages=messages,
            tools=workload.AGENT_TOOLS,
            tool_choice="auto",
            temperature=0.0,
            max_tokens=max_tokens,
        )
        tokens += out["usage"]["completion_tokens"]
        message = out["choices"][0]["message"]
        messages.append(message)
        for call in message.get("tool_calls") or []:
            name = call["function"]["name"]
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": name,
                    "content": workload.tool_result(name),
                }
            )
        if not message.get("tool_calls"):
            messages.append({"role": "user", "content": turns[(i + 1) % len(turns)]})
    return tokens


def _run_concurrent(complete: Complete, n: int, requests: int, max_tokens: int) -> dict[str, float]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        counts = list(
            pool.map(lambda k: _conversation(complete, k, requests, max_tokens), range(n))
        )
    wall = time.perf_counter() - start
    return {"tokens": sum(counts), "seconds": round(wall, 2), "tok_s": round(sum(counts) / wall, 2)}


def throughput(ns: list[int], *, requests: int, max_tokens: int) -> dict[str, Any]:
    from tooldialect import ServerClient

    out: dict[str, Any] = {}
    with quiet_stderr():
        llm = make_llama(MODEL, "tooldialect", n_ctx=8192)
    lock = threading.Lock()

    def serial(**kw: Any) -> Any:
        with lock:  # llama-cpp-python is not thread-safe: one request at a time
            return llm.create_chat_completion(**kw)

    out["in-process"] = {n: _run_concurrent(serial, n, requests, max_tokens) for n in ns}
    llm.close()
    for label, count, parallel in (("1 server, --parallel 4", 1, 4), ("2 servers", 2, 2)):
        with ExitStack() as stack:
            client = ServerClient(_servers(stack, count, parallel=parallel))
            out[label] = {
                n: _run_concurrent(client.create_chat_completion, n, requests, max_tokens)
                for n in ns
            }
    return out


def _first_delta(complete: Complete, **kw: Any) -> float:
    """Seconds from the request to its first streamed delta (the server engine connects and
    waits for the first event inside the call, the in-process engine on the first ``next``)."""
    start = time.perf_counter()
    first = 0.0
    for chunk in complete(**kw):
        delta = chunk["choices"][0]["delta"]
        if not first and (delta.get("content") or delta.get("tool_calls")):
            first = time.perf_counter() - start
    return first


def ttft(*, reps: int) -> dict[str, Any]:
    from tooldialect import ServerClient

    def measure(complete: Complete) -> dict[str, float]:
        cold, warm = [], []
        for r in range(reps):
            messages = [
                {"role": "system", "content": f"Session {r}-{time.time()}. Use the tools."},
                {"role": "user", "content": workload.AGENT_USER_TURNS[0]},
            ]
            kw = {
                "messages": messages,
                "tools": workload.AGENT_TOOLS,
                "temperature": 0.0,
                "max_tokens": 8,
                "stream": True,
            }
            cold.append(_first_delta(complete, **kw))
            warm.append(_first_delta(complete, **kw))
        return {
            "cold_s": round(sorted(cold)[len(cold) // 2], 3),
            "warm_s": round(sorted(warm)[len(warm) // 2], 3),
        }

    with quiet_stderr():
        llm = make_llama(MODEL, "tooldialect", n_ctx=4096)
    result = {"in-process": measure(llm.create_chat_completion)}
    llm.close()
    with ExitStack() as stack:
        client = ServerClient(_servers(stack, 1, parallel=1))
        result["server engine"] = measure(client.create_chat_completion)
    return result


def _jinja_answer(url: str, case: bfcl_data.Case, max_tokens: int) -> dict[str, Any]:
    body = {
        "messages": case.messages,
        "tools": case.tools(),
        "tool_choice": "auto",
        "temperature": 0.0,
        "max_tokens": max_tokens,
    }
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            message = json.load(resp)["choices"][0]["message"]
        record = {
            "content": message.get("content") or "",
            "calls": accuracy.calls_of_message(message),
            "error": None,
        }
    except Exception as exc:  # an HTTP error is a result here
        record = {"content": "", "calls": [], "error": f"{type(exc).__name__}: {exc}"}
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _client_answer(
    client: Any, case: bfcl_data.Case, *, stream: bool, max_tokens: int
) -> dict[str, Any]:
    class _Shim:  # accuracy.answer drives a Llama-like object
        def reset(self) -> None:
            pass

        def create_chat_completion(self, **kw: Any) -> Any:
            return client.create_chat_completion(**kw)

    return accuracy.answer(_Shim(), case, stream=stream, max_tokens=max_tokens)


def bfcl(per_category: int, *, max_tokens: int) -> dict[str, Any]:
    from tooldialect import ServerClient

    bfcl_data.fetch()
    cases = accuracy.select_cases(per_category)
    records: dict[str, list[dict[str, Any]]] = {
        k: [] for k in ("server", "server-stream", "in-process", "jinja")
    }
    with ExitStack() as stack:
        (url,) = _servers(stack, 1, parallel=1, extra=["--jinja", "-c", "8192"])
        client = ServerClient(url)
        for case in cases:
            records["server"].append(
                _client_answer(client, case, stream=False, max_tokens=max_tokens)
            )
            records["server-stream"].append(
                _client_answer(client, case, stream=True, max_tokens=max_tokens)
            )
            records["jinja"].append(_jinja_answer(url, case, max_tokens))
    with quiet_stderr():
        llm = make_llama(MODEL, "tooldialect", n_ctx=8192)
    for case in cases:
        records["in-process"].append(
            accuracy.answer(llm, case, stream=False, max_tokens=max_tokens)
        )
    summary: dict[str, Any] = {"cases": len(cases), "per_category": per_category}
    for name, recs in records.items():
        valid = 0
        for case, rec in zip(cases, recs, strict=True):
            calls = [tuple(c) for c in rec["calls"]]
            verdict = bfcl_score.score(
                case.category, case.functions, case.answer, calls, case.name_map()
            )
            valid += verdict.valid
        summary[name] = {
            "valid": valid,
            "crashes": sum(1 for r in recs if r["error"]),
            "seconds": round(sum(r["seconds"] for r in recs), 1),
        }
    same = accuracy._same_answer
    summary["stream_agree"] = sum(
        same(x, y) for x, y in zip(records["server"], records["server-stream"], strict=True)
    )
    summary["inprocess_agree"] = sum(
        same(x, y) for x, y in zip(records["server"], records["in-process"], strict=True)
    )
    return summary


def format_markdown(result: dict[str, Any]) -> str:
    lines = []
    if "throughput" in result:
        tp = result["throughput"]
        ns = list(next(iter(tp.values())).keys())
        lines += [
            "| set-up | " + " | ".join(f"{n} conv. tok/s" for n in ns) + " |",
            "|---|" + "---|" * len(ns),
        ]
        lines += [
            f"| {k} | " + " | ".join(f"{v[n]['tok_s']}" for n in ns) + " |" for k, v in tp.items()
        ]
        lines.append("")
    if "ttft" in result:
        lines += ["| engine | TTFT cold (s) | TTFT warm (s) |", "|---|---|---|"]
        lines += [f"| {k} | {v['cold_s']} | {v['warm_s']} |" for k, v in result["ttft"].items()]
        lines.append("")
    if "accuracy" in result:
        acc = result["accuracy"]
        n = acc["cases"]
        lines += ["| BFCL slice | valid | crashes | seconds |", "|---|---|---|---|"]
        for k in ("in-process", "server", "server-stream", "jinja"):
            lines.append(
                f"| {k} | {acc[k]['valid']}/{n} | {acc[k]['crashes']} | {acc[k]['seconds']} |"
            )
        lines.append(
            f"\nserver stream/non-stream agree {acc['stream_agree']}/{n}; "
            f"server/in-process agree {acc['inprocess_agree']}/{n}"
        )
    return "\n".join(lines)


def set_threads(n: int) -> None:
    """Threads for every set-up: the servers' -t and the in-process Llama's n_threads."""
    global THREADS
    THREADS = n
    common.N_THREADS = n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--part", action="append", choices=["throughput", "ttft", "accuracy"])
    parser.add_argument("--per-category", type=int, default=None)
    parser.add_argument("--threads", type=int, default=THREADS)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    parts = args.part or ["throughput", "ttft", "accuracy"]
    quick = args.quick
    result: dict[str, Any] = {}
    if "throughput" in parts:
        result["throughput"] = throughput(
            [1, 2, 4, 8], requests=2 if quick else 4, max_tokens=48 if quick else 96
        )
    if "ttft" in parts:
        result["ttft"] = ttft(reps=3 if quick else 7)
    if "accuracy" in parts:
        per_cat = args.per_category or (3 if quick else 10)
        result["accuracy"] = bfcl(per_cat, max_tokens=accuracy.MAX_TOKENS)
    tag = "quick" if quick else "full"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"server-{tag}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(format_markdown(result))


if __name__ == "__main__":
    main()
