"""The set-up scripts report progress on long waits."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_download_progress_prints_bytes_and_speed() -> None:
    out = io.StringIO()
    progress = load("fetch_models").Progress("qwen", every=0.0, out=out)
    for line in ["Collecting x\n", "Progress 0 of 2000000\n", "Progress 1000000 of 2000000\n"]:
        progress.feed(line)
    progress.feed("Progress 2000000 of 2000000\n")
    progress.feed("Progress 500000 of 1000000\n")  # the next part of a chunked model
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[1].startswith("  qwen: 1.0 MB of 2.0 MB (1.0 MB in ")
    assert lines[3].startswith("  qwen: 0.5 MB of 1.0 MB (2.5 MB in ")  # totals across parts
    assert all("MB/s)" in line for line in lines)


def test_heartbeat_logs_everything_and_beats(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    script = "import time\nfor i in range(3):\n print('compiling', i, flush=True); time.sleep(0.4)"
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) as producer:
        beat = subprocess.run(
            [sys.executable, str(SCRIPTS / "heartbeat.py"), str(log), "build", "--every", "0.5"],
            stdin=producer.stdout,
            capture_output=True,
            text=True,
            check=True,
        )
    assert log.read_text().splitlines() == ["compiling 0", "compiling 1", "compiling 2"]
    lines = beat.stdout.splitlines()
    assert any(line.startswith("  build: ") and "compiling" in line for line in lines[:-1])
    assert lines[-1].startswith("  build: finished in ")
