"""Real MCP servers for the tests: the scripts next to this file, started over stdio or HTTP.

Imported by the test modules (a conftest.py here would clash with tests/conftest.py for mypy).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
HINT = "the MCP tests need the official SDK: pip install 'tooldialect[mcp]' (mcp>=2,<3)"


def require_sdk() -> None:
    """Skip the calling module, with the install hint, when the SDK is absent."""
    pytest.importorskip("mcp", reason=HINT)


def stdio_entry(script: str, **extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs ``script`` with this Python."""
    return {"command": sys.executable, "args": [str(HERE / script)], **extra}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def wait_gone(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


@contextmanager
def serve_http(script: str) -> Iterator[str]:
    """``script`` serving streamable HTTP on a free loopback port; yields its URL."""
    require_sdk()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / script), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the HTTP MCP server did not come up on port {port}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
