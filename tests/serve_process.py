"""``tooldialect serve`` as a subprocess on a free loopback port, for the live tests (the chat,
Responses and Messages routes, and the snippets of docs/serve.md)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import tooldialect

READY_TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tail(log: Path) -> str:
    """The end of the server's output, for a failure message."""
    return log.read_text(errors="replace")[-3000:]


@contextmanager
def serving(model: Path, log: Path, *, threads: int = 2) -> Iterator[str]:
    """``python -m tooldialect.apps.serve`` of ``model`` (its output in ``log``) until the block
    ends, then killed; its address, ``http://127.0.0.1:PORT``."""
    port = free_port()
    src = str(Path(tooldialect.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    cmd = [
        *(sys.executable, "-m", "tooldialect.apps.serve", "--model", str(model)),
        *("--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads)),
        *("--n_ctx", "4096", "--verbose", "false"),
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{tail(log)}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server not ready in {READY_TIMEOUT_S}s:\n{tail(log)}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
