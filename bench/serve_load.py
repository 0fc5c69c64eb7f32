"""What one ``tooldialect serve`` instance sustains: sequential vs concurrent clients.

Starts ``python -m tooldialect.apps.serve`` on a free loopback port (or uses ``--url``), then
sends the same tool-call request (``tool_choice="required"``, greedy) with the official
``openai`` client:
``--requests`` one after another, then the same number spread over ``--clients`` threads, for
``--rounds`` interleaved rounds. Prints
and writes (``bench/results/serve-load.json``) requests/s, completion tokens/s and latency.

    python bench/serve_load.py --model qwen --requests 8 --clients 4
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import MODEL_LABELS, N_THREADS, RESULTS, ROOT, model_path

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CITIES = ["Paris", "London", "Rome", "Berlin", "Madrid", "Oslo", "Tokyo", "Cairo"]


def start_server(model: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tooldialect.apps.serve",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            str(N_THREADS),
            "--n_ctx",
            "4096",
            "--verbose",
            "false",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("server not ready")


def one_request(client: Any, i: int) -> tuple[float, int]:
    """Latency and completion tokens of one tool-call request."""
    t0 = time.perf_counter()
    r = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": f"Weather in {CITIES[i % len(CITIES)]}?"}],
        tools=[WEATHER],
        tool_choice="required",
        temperature=0,
        max_tokens=60,
    )
    assert r.choices[0].message.tool_calls, r
    return time.perf_counter() - t0, r.usage.completion_tokens


def measure(client: Any, requests: int, clients: int) -> dict[str, float]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        done = list(pool.map(lambda i: one_request(client, i), range(requests)))
    wall = time.perf_counter() - t0
    latencies = [d[0] for d in done]
    tokens = sum(d[1] for d in done)
    return {
        "clients": clients,
        "requests": requests,
        "wall_s": round(wall, 2),
        "requests_per_s": round(requests / wall, 3),
        "completion_tokens_per_s": round(tokens / wall, 2),
        "latency_mean_s": round(statistics.mean(latencies), 2),
        "latency_max_s": round(max(latencies), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen", choices=sorted(MODEL_LABELS))
    parser.add_argument("--url", help="an already running server's /v1 URL")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import openai

    proc, url = (None, args.url) if args.url else start_server(model_path(args.model))
    try:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=1200)
        one_request(client, 0)  # warm-up: setup, first grammar, KV for the system part
        rows = []
        for _ in range(args.rounds):  # interleaved, so a shared machine's load drifts into both
            rows.append(measure(client, args.requests, 1))
            rows.append(measure(client, args.requests, args.clients))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    load = os.getloadavg()
    summary = {
        str(n): {
            key: statistics.median(r[key] for r in rows if r["clients"] == n)
            for key in ("requests_per_s", "completion_tokens_per_s", "latency_mean_s")
        }
        for n in sorted({r["clients"] for r in rows})
    }
    report = {
        "model": MODEL_LABELS[args.model],
        "cpus": os.cpu_count(),
        "load_avg_1m_at_end": round(load[0], 2),
        "median_by_clients": summary,
        "rows": rows,
    }
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve-load.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
