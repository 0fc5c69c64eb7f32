"""Every Python snippet of README.md and docs/*.md runs, on the test models (issue 29 s2).

The blocks of one file run in order in one namespace, as a reader copies them. A block that
cannot run here (it needs a server or a network) is marked just above its fence with
``<!-- snippet: not run (why) -->``; the reason is required and such blocks stay few.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- snippet: (?P<skip>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
MAX_NOT_RUN = 8


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
def test_the_snippets_run(path: Path, qwen_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLDIALECT_MODELS", str(qwen_path.parent))
    monkeypatch.chdir(ROOT)  # snippets name examples/ relative to the repository
    namespace: dict[str, object] = {"__name__": "__snippet__"}
    for line, code, why in snippets(path):
        if why:
            continue
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{path.name}, the snippet at line {line}: {exc!r}") from exc
    assert os.environ["TOOLDIALECT_MODELS"] == str(qwen_path.parent)
