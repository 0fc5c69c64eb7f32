"""Every Python snippet of README.md and docs/*.md runs, on the test models (issue 29 s2), and
README's shell lines run as pasted in a fresh shell (issue 40 s5).

The blocks of one file run in order in one namespace, as a reader copies them, in a scratch
directory where ``examples/`` is the repository's (a snippet may write files, such as an
``mcp.json``). For the files in ``SERVED`` a ``tooldialect serve`` of the test model is started
first, and the snippets' ``localhost:8000`` is pointed at it (a free port). A block that cannot
run here (it needs a network or llama-server) is marked just above its fence with
``<!-- snippet: not run (why) -->``; the reason is required and such blocks stay few.

A reader pastes one block, not the page: a block that uses a name an earlier block defined says
so on its first line (``# continues the first block (llm)``), and a block that needs neither an
earlier block nor a model runs alone in a fresh interpreter. README's shell lines come after
it says to activate ``.venv`` (or name ``.venv/bin/``), the commands and scripts they name
exist and answer ``--help``, and the model-free ones run in a fresh ``bash`` as written.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import shlex
import subprocess
import sys
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


# ---- each block as pasted alone -----------------------------------------------------------------

CONTINUES = re.compile(r"# continues the first block \((?P<names>[\w, ]+)\)")
NEEDS_A_MODEL = re.compile(r"model_path|Llama\(|localhost")
"""What marks a block that loads a test model or talks to a served one."""


def names(code: str) -> tuple[set[str], set[str]]:
    """``(bound, free)``: the names ``code`` binds (assigns, imports, defines), and those it reads
    that it neither binds nor gets from builtins, which an earlier block must define (scopes are
    not told apart: a name bound anywhere in the block counts)."""
    bound: set[str] = set()
    read: set[str] = set()
    local: set[str] = set()  # parameters and ``except ... as`` names
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
    return bound, read - bound - local - set(dir(builtins))


def free_names(code: str) -> set[str]:
    return names(code)[1]


def test_free_names_are_what_an_earlier_block_must_define() -> None:
    code = "import json\nfrom x import y as z\ndef f(a):\n    return a + b\nprint(json, z, f, llm)"
    assert free_names(code) == {"b", "llm"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_block_that_needs_an_earlier_one_says_so_on_its_first_line(path: Path) -> None:
    defined: set[str] = set()  # what the blocks before this one bind
    for line, code, _ in snippets(path):
        bound, needed = names(code)
        if needed:
            marker = CONTINUES.fullmatch(code.splitlines()[0])
            where = f"{path.name}, the snippet at line {line}"
            assert marker, f"{where} uses {sorted(needed)}: say `# continues the first block (...)`"
            named = {n.strip() for n in marker.group("names").split(",")}
            assert needed <= named, f"{where}: its first line does not name {needed - named}"
            assert named <= defined, f"{where}: no earlier block defines {named - defined}"
        defined |= bound


def test_no_placeholder_is_python() -> None:
    """``{...}`` pasted is a set holding ``Ellipsis``, not "fill this in": write the value."""
    found = [(p.name, line) for p in FILES for line, code, _ in snippets(p) if "{...}" in code]
    assert not found, found


def alone() -> list[object]:
    """The blocks that need no earlier block and no model: ``(file, line, code)``."""
    return [
        pytest.param(p.name, line, code, id=f"{p.name}:{line}")
        for p in FILES
        if p.name not in SERVED
        for line, code, why in snippets(p)
        if not why and not free_names(code) and not NEEDS_A_MODEL.search(code)
    ]


@pytest.mark.parametrize(("name", "line", "code"), alone())
def test_a_block_that_needs_no_model_runs_alone_in_a_fresh_interpreter(
    name: str, line: int, code: str, tmp_path: Path
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{name}, the snippet at line {line}:\n{done.stderr[-2000:]}"


@pytest.mark.model
def test_readmes_self_contained_blocks_run_alone_in_a_fresh_interpreter(
    qwen_path: Path, tmp_path: Path
) -> None:
    """README's first block (it loads the test model) as a reader pastes it into a new Python."""
    blocks = [(line, code) for line, code, why in snippets(README) if not why]
    first = [(line, code) for line, code in blocks if not free_names(code)]
    assert first and first[0] == blocks[0]
    env = {**os.environ, "TOOLDIALECT_MODELS": str(qwen_path.parent)}
    for line, code in first:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"README, the snippet at line {line}:\n{done.stderr[-2000:]}"


# ---- README's shell lines -----------------------------------------------------------------------

README = ROOT / "README.md"
FENCE = re.compile(r"```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
SHELLS = {"bash", "sh", "console"}
ACTIVATE = "source .venv/bin/activate"
PROGRAMS = {"python", "tooldialect", "pip"}
"""Commands a fresh shell finds only in the activated ``.venv`` (or not at all)."""


def shell_lines(path: Path) -> list[tuple[int, str]]:
    """``(offset, command)`` of each shell command the file shows: the lines of ``bash`` blocks,
    the ``$ `` lines of ``console`` blocks, and inline code that starts with a command."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for m in FENCE.finditer(text):
        if m.group("lang") not in SHELLS:
            continue
        for i, raw in enumerate(m.group("body").splitlines()):
            line = raw.strip()
            if m.group("lang") == "console":
                if not line.startswith("$ "):
                    continue  # the output a console block shows
                line = line[2:]
            line = re.sub(r"\s+#.*$", "", line)  # a trailing comment
            if line and not line.startswith("#"):
                found.append((m.start("body") + i, line))
    prose = FENCE.sub(lambda m: " " * len(m.group(0)), text)  # offsets kept
    for m in re.finditer(r"`([^`\n]+)`", prose):
        words = m.group(1).split()
        if words[0] in PROGRAMS | {"make", "bash", "source"} and len(words) > 1:
            found.append((m.start(), m.group(1)))
    return sorted(found)


def program(command: str) -> str:
    return command.split()[0]


def test_readme_activates_the_venv_before_a_bare_python_or_tooldialect() -> None:
    text = README.read_text(encoding="utf-8")
    activated = text.find(ACTIVATE)
    bare = [
        command
        for offset, command in shell_lines(README)
        if (program(command) in PROGRAMS or "$(python" in command) and not (0 <= activated < offset)
    ]
    assert not bare, f"README runs these before it says `{ACTIVATE}`: {bare}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_line_asks_pypi_for_tooldialect(path: Path) -> None:
    """tooldialect is not on PyPI: an extra is installed from the clone (``pip install -e``)."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"pip install \S*tooldialect", text), path.name


def test_readme_shell_lines_are_found() -> None:
    commands = [c for _, c in shell_lines(README)]
    for expected in ("make demo", ACTIVATE, "tooldialect models", "python bench/run.py --quick"):
        assert expected in commands
    assert not any(c.startswith("$") or c.startswith("dialect:") for c in commands)


def readme_subcommands() -> list[str]:
    """The ``tooldialect`` subcommands README's shell lines use."""
    return sorted({c.split()[1] for _, c in shell_lines(README) if program(c) == "tooldialect"})


@pytest.mark.parametrize("sub", readme_subcommands())
def test_each_tooldialect_command_readme_uses_answers_help(sub: str) -> None:
    if sub == "serve":
        pytest.importorskip("llama_cpp.server.app")
    script = Path(sys.executable).parent / "tooldialect"  # the installed entry point
    done = subprocess.run([str(script), sub, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"usage: tooldialect {sub}" in done.stdout


def readme_scripts() -> list[str]:
    """The files README's shell lines run with ``python`` or ``bash``."""
    found = set()
    for _, command in shell_lines(README):
        words = shlex.split(command)
        if words[0] in ("python", "bash") and len(words) > 1 and "/" in words[1]:
            found.add(f"{words[0]} {words[1]}")
    return sorted(found)


def test_readme_scripts_are_found() -> None:
    assert {"python scripts/fetch_models.py", "bash scripts/build_llama_server.sh"} <= set(
        readme_scripts()
    )


@pytest.mark.parametrize("run", readme_scripts())
def test_each_script_readme_runs_exists_and_answers_help(run: str, tmp_path: Path) -> None:
    runner, script = run.split()
    assert (ROOT / script).is_file(), f"README runs {script}, which does not exist"
    if runner == "python":  # from a scratch directory, as a fresh shell of the clone runs it
        done = subprocess.run(
            [sys.executable, str(ROOT / script), "--help"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{script} --help:\n{done.stderr[-2000:]}"


def test_each_make_target_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"(?m)^([\w-]+):", makefile))
    named = {c.split()[1] for _, c in shell_lines(README) if program(c) == "make"}
    assert named and named <= targets, named - targets


def fresh_shell(
    command: str, *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` in a new ``bash`` at the clone's root, after README's activation line (the
    ``.venv`` of this interpreter)."""
    venv = Path(sys.executable).parent.parent
    script = f"source {shlex.quote(str(venv / 'bin' / 'activate'))} && {command}"
    return subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.model
def test_readmes_console_lines_run_as_pasted(qwen_path: Path) -> None:
    """The ``console`` block under Dialects, each ``$`` line in a fresh shell, its output checked
    against the lines README shows."""
    text = README.read_text(encoding="utf-8")
    (block,) = [
        m.group("body") for m in FENCE.finditer(text) if "$ tooldialect inspect" in m.group(0)
    ]
    env = {**os.environ, "TOOLDIALECT_MODELS": str(qwen_path.parent)}
    shown = [line for line in block.splitlines() if not line.startswith(("$", "..."))]
    out = ""
    for line in block.splitlines():
        if line.startswith("$ "):
            done = fresh_shell(re.sub(r"\s+#.*$", "", line[2:]), env=env)
            assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
            out += done.stdout
    assert shown and all(s in out for s in shown), (shown, out)


def test_the_docs_index_lists_every_document_once_with_a_line() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    entries = re.findall(r"(?m)^- \[(?P<name>[\w.-]+)\]\((?P=name)\): \S.*$", index)
    documents = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    assert sorted(entries) == documents
    assert "docs/README.md" in README.read_text(encoding="utf-8")  # README points to it
