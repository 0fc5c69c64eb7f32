"""``tooldialect serve`` under bad requests (issue 29 section 1), measured on a real model.

Starts ``python -m tooldialect.apps.serve`` on a free loopback port (or uses ``--url`` with
``--log``), then sends each bad request of the issue to ``/v1/chat/completions``,
``/v1/responses`` and ``/v1/messages``, batch and streamed, and checks every answer: a 4xx, a
JSON error in the endpoint's shape (OpenAI's ``error.message/type/param``, Anthropic's
``{"type": "error", "error": {...}}``) naming the field, and no server path in the body. Then it
counts the server log's lines for them (one ``refused`` line each, no traceback) and sends one
good request per endpoint, batch and streamed, whose ``model`` must be the file name, not the
path (``/v1/messages`` echoes the request's, as Anthropic's API does). Prints a table
and writes ``bench/results/serve-bad-requests.json``; exits 1 when a check fails.

    python bench/serve_bad_requests.py --model qwen
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import MODEL_LABELS, N_THREADS, RESULTS, ROOT, model_path

CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
CYCLE = {
    "type": "object",
    "properties": {"x": {"$ref": "#/$defs/a"}},
    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
}
BASE: dict[str, dict[str, Any]] = {
    CHAT: {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
    RESPONSES: {"input": "hi", "max_output_tokens": 8},
    MESSAGES: {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
}
NAMELESS = {
    CHAT: {"type": "function", "function": {"parameters": {"type": "object"}}},
    RESPONSES: {"type": "function", "parameters": {"type": "object"}},
    MESSAGES: {"input_schema": {"type": "object"}},
}
LOOP = {
    CHAT: {"type": "function", "function": {"name": "loop", "parameters": CYCLE}},
    RESPONSES: {"type": "function", "name": "loop", "parameters": CYCLE},
    MESSAGES: {"name": "loop", "input_schema": CYCLE},
}
SURROGATE = {
    CHAT: {"messages": [{"role": "user", "content": "\udcff"}]},
    RESPONSES: {"input": "\udcff"},
    MESSAGES: {"messages": [{"role": "user", "content": "\udcff"}]},
}
LIMIT = {CHAT: "max_tokens", RESPONSES: "max_output_tokens", MESSAGES: "max_tokens"}
NOT_UTF8 = {
    CHAT: b'{"messages": [{"role": "user", "content": "\xff"}]}',
    RESPONSES: b'{"input": "\xff"}',
    MESSAGES: b'{"max_tokens": 8, "messages": [{"role": "user", "content": "\xff"}]}',
}


def cases(path: str) -> list[tuple[str, bytes, str | None]]:
    """``(name, body, field the error must name)`` of each bad request on ``path``."""

    def body(**fields: Any) -> bytes:
        return json.dumps({**BASE[path], **fields}).encode()

    limit = LIMIT[path]
    listed: list[tuple[str, bytes, str | None]] = [
        ("tool without name", body(tools=[NAMELESS[path]]), "tools"),
        ("$ref cycle schema", body(tools=[LOOP[path]]), "tools"),
        ("not JSON", b'{"messages": [', None),
        ("not UTF-8", NOT_UTF8[path], None),
        ("lone surrogate", body(**SURROGATE[path]), next(iter(SURROGATE[path]))),
        (f"{limit} -5", body(**{limit: -5 if path != RESPONSES else -3}), limit),
        (f"{limit} 0", body(**{limit: 0}), limit),
        ("temperature -1", body(temperature=-1), "temperature"),
        ("temperature NaN", body(temperature=float("nan")), "temperature"),  # a bare NaN
        ("top_p 5", body(top_p=5), "top_p"),
        ("tool_choise", body(tool_choise="auto"), "tool_choise"),
        ("temprature", body(temprature=0.5), "temprature"),
        ("paralel_tool_calls", body(paralel_tool_calls=False), "paralel_tool_calls"),
    ]
    if path == RESPONSES:
        listed[5] = ("max_output_tokens -3", listed[5][1], limit)
    return listed


def streamed(raw: bytes) -> bytes:
    """``raw`` with ``"stream": true`` (a body that is no JSON object stays as it is)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    return raw.rstrip()[:-1] + b', "stream": true}' if isinstance(parsed, dict) else raw


def post(url: str, path: str, raw: bytes, *, timeout: float = 120) -> tuple[int, bytes]:
    """(status, whole body) of one POST (a stream is read to its end)."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json", "anthropic-version": "2023-06-01"}
        conn.request("POST", path, body=raw, headers=headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def judge(path: str, status: int, raw: bytes, field: str | None, secret: str) -> list[str]:
    """What is wrong with one answer (empty: it is right)."""
    wrong: list[str] = []
    if not 400 <= status < 500:
        wrong.append(f"status {status}")
    try:
        parsed = json.loads(raw)
    except ValueError:
        return [*wrong, f"body not JSON: {raw[:120]!r}"]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return [*wrong, f"no error object: {raw[:160]!r}"]
    if path == MESSAGES:
        if parsed.get("type") != "error" or "type" not in error:
            wrong.append("not Anthropic's error shape")
        named = field is None or field in error["message"]
    else:
        if not {"message", "type", "param"} <= set(error):
            wrong.append("not OpenAI's error shape")
        named = field is None or error.get("param") == field or field in error["message"]
    if not named:
        wrong.append(f"{field!r} not named: {error['message'][:160]}")
    text = raw.decode("utf-8", "replace")
    if secret in text or "site-packages" in text or 'File "' in text:
        wrong.append("a server path in the body")
    return wrong


def good_models(url: str, secret: str) -> dict[str, str]:
    """The ``model`` each endpoint's good reply names (and ``/v1/models``' first id); a streamed
    reply that names the server's model folder is named by its status and ``path!``."""
    named: dict[str, str] = {}
    for path in (CHAT, RESPONSES, MESSAGES):
        status, raw = post(url, path, json.dumps(BASE[path]).encode())
        named[path] = json.loads(raw).get("model", "") if status == 200 else f"status {status}"
        status, raw = post(url, path, streamed(json.dumps(BASE[path]).encode()))
        if status != 200 or secret.encode() in raw:
            named[f"{path} stream"] = f"status {status}{' path!' if secret.encode() in raw else ''}"
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=30)
    conn.request("GET", "/v1/models")
    named["/v1/models"] = json.loads(conn.getresponse().read())["data"][0]["id"]
    conn.close()
    return named


def start_server(model: Path, log: Path, *, n_ctx: int) -> tuple[subprocess.Popen[bytes], str]:
    """``tooldialect serve`` of ``model`` on a free port, its output in ``log``, once ready."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "tooldialect.apps.serve", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    command += ["--n_threads", str(N_THREADS)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text(errors='replace')[-2000:]}")


def measure(url: str, log: Path, secret: str) -> dict[str, Any]:
    """Send every bad request; judge the answers and the log lines they added."""
    before = log.read_text(errors="replace")
    per_path: dict[str, Any] = {}
    failures: list[str] = []
    total = 0
    for path in (CHAT, RESPONSES, MESSAGES):
        passed = sent = 0
        for name, raw, field in cases(path):
            for stream in (False, True):
                status, body = post(url, path, streamed(raw) if stream else raw)
                wrong = judge(path, status, body, field, secret)
                sent += 1
                passed += not wrong
                if wrong:
                    failures.append(f"{path} {name}{' stream' if stream else ''}: {wrong}")
        per_path[path] = {"four_xx_right": passed, "sent": sent}
        total += sent
    time.sleep(0.5)  # the last log lines
    added = log.read_text(errors="replace")[len(before) :].splitlines()
    refused = sum("refused" in line for line in added)
    tracebacks = sum("Traceback" in line for line in added)
    return {
        "per_endpoint": per_path,
        "requests": total,
        "refused_log_lines": refused,
        "traceback_lines": tracebacks,
        "failures": failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen", help="a test model's key or a GGUF path")
    parser.add_argument("--url", help="a running server (then --log is its output file)")
    parser.add_argument("--log", type=Path, help="the running server's log file")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--out", type=Path, default=RESULTS / "serve-bad-requests.json")
    args = parser.parse_args()
    model = Path(args.model) if Path(args.model).exists() else model_path(args.model)
    proc = None
    log = args.log or Path(tempfile.mkdtemp()) / "serve.log"
    url = args.url
    if url is None:
        proc, url = start_server(model, log, n_ctx=args.n_ctx)
    try:
        result = measure(url, log, str(model.parent))
        result["models_named"] = good_models(url, str(model.parent))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    label = MODEL_LABELS.get(args.model, model.name)
    result["model"] = label
    ok = not result["failures"] and result["traceback_lines"] == 0
    ok = ok and result["refused_log_lines"] == result["requests"]
    # Anthropic's replies echo the model the request names ("m"); the others name the file
    expected = {path: model.name for path in result["models_named"]} | {MESSAGES: "m"}
    ok = ok and result["models_named"] == expected
    for path, row in result["per_endpoint"].items():
        print(f"{path:24} {row['four_xx_right']:3d} of {row['sent']} right 4xx")
    print(f"log: {result['refused_log_lines']} 'refused' lines for {result['requests']} requests,")
    print(f"     {result['traceback_lines']} tracebacks")
    print(f"model named: {result['models_named']}")
    for failure in result["failures"]:
        print("FAIL", failure)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{label}: {'all checks pass' if ok else 'checks FAIL'}; wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
