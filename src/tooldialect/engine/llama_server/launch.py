"""Finding and starting a ``llama-server`` binary (for tests, benchmarks and scripts).

The binary should match the in-process llama.cpp version for version: build it with
``scripts/build_llama_server.sh``, which caches it next to the test models.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from ...errors import ServerError
from .http import HttpStatusError, Unreachable, get_json

__all__ = ["LlamaServer", "find_llama_server"]

BUILD_HINT = "bash scripts/build_llama_server.sh"


def _cache_dir() -> Path:
    env = os.environ.get("TOOLDIALECT_MODELS")
    models = Path(env) if env else Path.home() / ".cache" / "tooldialect" / "models"
    return models / "bin"


def find_llama_server() -> Path | None:
    """``$TOOLDIALECT_LLAMA_SERVER``, the copy cached by the build script, or one on ``PATH``."""
    env = os.environ.get("TOOLDIALECT_LLAMA_SERVER")
    candidates = [Path(env)] if env else []
    candidates.append(_cache_dir() / "llama-server")
    found = shutil.which("llama-server")
    if found:
        candidates.append(Path(found))
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """A ``llama-server`` subprocess on a loopback port; a context manager that stops it.

    ``args`` are extra command-line options (``["--parallel", "4"]``).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        binary: str | os.PathLike[str] | None = None,
        port: int | None = None,
        args: list[str] | None = None,
        ready_timeout: float = 120.0,
    ) -> None:
        found = Path(binary) if binary is not None else find_llama_server()
        if found is None:
            raise ServerError(f"no llama-server binary found; build one with `{BUILD_HINT}`")
        self.binary = found
        self.model = str(model)
        self.port = port or free_port()
        self.args = list(args or [])
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LlamaServer:
        """Start the process and wait until ``/health`` says it is ready."""
        cmd = [str(self.binary), "-m", self.model, "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*cmd, *self.args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                stderr = self.process.stderr
                err = stderr.read().decode("utf-8", "replace") if stderr else ""
                code = self.process.returncode
                raise ServerError(f"llama-server exited with {code}: {err[-800:]}")
            try:
                get_json(self.url, "/health", timeout=1.0)
                return self
            except (Unreachable, HttpStatusError, ValueError):
                time.sleep(0.2)
        self.stop()
        raise ServerError(
            f"llama-server on port {self.port} not ready after {self.ready_timeout} s"
        )

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def kill(self) -> None:
        """Kill the process at once (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
