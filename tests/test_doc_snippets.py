"""Every Python snippet of README.md and docs/*.md runs, on the test models (issue 29 s2).

The blocks of one file run in order in one namespace, as a reader copies them, in a scratch
directory where ``examples/`` is the repository's (a snippet may write files, such as an
``mcp.json``). For the files in ``SERVED`` a ``tooldialect serve`` of the test model is started
first, and the snippets' ``localhost:8000`` is pointed at it (a free port). A block that cannot
run here (it needs a network or llama-server) is marked just above its fence with
``<!-- snippet: not run (why) -->``; the reason is required and such blocks stay few.
"""

from __future__ import annotations

import os
import re
from contextlib import nullcontext
from pathlib import Path

import pytest

from serve_process import serving

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- snippet: (?P<skip>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
MAX_NOT_RUN = 8
SERVED = {"serve.md"}  # their snippets talk to `tooldialect serve --port 8000`
SERVED_AT = "localhost:8000"


def snippets(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, why not run)`` of each python block."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in BLOCK.finditer(text):
        skip = m.group("skip")
        if skip is not None and not re.fullmatch(r"not run \(.+\)", skip):
            raise AssertionError(f"{path.name}: a snippet marker needs a reason: {skip!r}")
        found.append((text.count("\n", 0, m.start("code")) + 1, m.group("code"), skip))
    return found


def test_few_snippets_are_not_run_and_each_says_why() -> None:
    skipped = [(p.name, line) for p in FILES for line, _, why in snippets(p) if why]
    assert len(skipped) <= MAX_NOT_RUN, skipped


@pytest.mark.model
@pytest.mark.parametrize("path", [p for p in FILES if snippets(p)], ids=lambda p: p.name)
def test_the_snippets_run(
    path: Path, qwen_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLDIALECT_MODELS", str(qwen_path.parent))
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # snippets name examples/ relatively
    monkeypatch.chdir(tmp_path)  # what a snippet writes stays out of the working tree
    namespace: dict[str, object] = {"__name__": "__snippet__"}
    served = path.name in SERVED
    with serving(qwen_path, tmp_path / "serve.log") if served else nullcontext(SERVED_AT) as at:
        for line, code, why in snippets(path):
            if why:
                continue
            try:
                code = code.replace(SERVED_AT, at.removeprefix("http://"))
                exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{path.name}, the snippet at line {line}: {exc!r}") from exc
    assert os.environ["TOOLDIALECT_MODELS"] == str(qwen_path.parent)
