"""The layering rule, checked on the source: imports point down the pipeline (or sideways inside a
package), no import cycle (at import time, nor one closed by an import inside a function or an
``if TYPE_CHECKING:`` block), no private name imported from another module.

Read with ``ast`` (nothing is imported). docs/architecture.md states the rule; this test is what
keeps it. The allow-lists below are debts with owners: each entry names why it is there, and an
entry that is no longer needed fails the test, so it is deleted when the debt is paid.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "tooldialect"

# The pipeline, bottom first. A module may import from its own stage or a lower one.
STAGES: dict[str, int] = {
    # foundations: no pipeline knowledge
    "errors": 0,
    "tool_defs": 0,
    "gguf": 0,
    "models": 0,
    "shapes": 0,
    "prompt": 1,
    "dialect": 2,
    "grammar": 3,
    "parse": 4,
    "engine": 5,
    "frontend": 6,
    # the check that a spec reads its template's own call: above parse and frontend.render; its
    # detect_dialect/derive_dialect pass it to dialect/'s (whose shapes are dialect.ports)
    "verify": 6,
    "conformance": 6,
    "handler": 7,
    "server_client": 7,
    "apps": 8,
}
TOP = max(STAGES.values()) + 1  # tooldialect/__init__.py, the public API, sits on everything

# Debts, each with its owner and reason; empty now. An entry added here fails once it is no longer
# needed, so the list only shrinks.
ALLOWED_UPWARD: set[tuple[str, str]] = set()
"""(importer, imported) pairs still pointing up."""
ALLOWED_CYCLE_EDGES: set[tuple[str, str]] = set()
"""Import-time edges allowed to close a cycle."""
ALLOWED_LAZY_CYCLE_EDGES: dict[tuple[str, str], str] = {}
"""Edges inside a function or under ``TYPE_CHECKING`` allowed to close a cycle, with why. A cycle
hidden so is still one: a reader of either module needs the other first, and the lazy import
only moves the failure from import time to the first call."""
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()
"""(importer, defining module, name) of private names still crossing a module."""


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    """The module the statement loads (``pkg.mod`` for ``from pkg import mod``)."""
    name: str | None
    """The name taken from ``target`` by ``from target import name``; None for a module."""
    at_import_time: bool
    """False inside a function body or an ``if TYPE_CHECKING:`` block."""
    line: int


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return TOP
    if parts[1] not in STAGES:
        raise AssertionError(
            f"{module}: a new top-level module or package; give it a stage in STAGES here and in "
            "docs/architecture.md"
        )
    return STAGES[parts[1]]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: Iterable[ast.stmt], runtime: bool) -> Iterator[tuple[ast.stmt, bool]]:
    for node in body:
        yield node, runtime
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _statements(node.body, False)
        elif isinstance(node, ast.If):
            yield from _statements(node.body, runtime and not _is_type_checking(node.test))
            yield from _statements(node.orelse, runtime)
        elif isinstance(node, (ast.ClassDef, ast.With)):
            yield from _statements(node.body, runtime)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _statements(block, runtime)
            for handler in node.handlers:
                yield from _statements(handler.body, runtime)


def imports_of(module: str, source: str, *, is_package: bool, known: set[str]) -> list[Import]:
    """Every import of a ``tooldialect`` module in ``source``."""
    out: list[Import] = []
    tree = ast.parse(source)
    for node, runtime in _statements(tree.body, True):
        if isinstance(node, ast.Import):
            out += [
                Import(module, a.name, None, runtime, node.lineno)
                for a in node.names
                if a.name.split(".")[0] == PACKAGE
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")[: None if is_package else -1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.append(Import(module, sub, None, runtime, node.lineno))
                else:
                    out.append(Import(module, base, a.name, runtime, node.lineno))
    return out


def scan(root: Path) -> list[Import]:
    paths = sorted(root.joinpath(PACKAGE).rglob("*.py"))
    known = {module_name(p, root) for p in paths}
    out: list[Import] = []
    for p in paths:
        out += imports_of(
            module_name(p, root),
            p.read_text(encoding="utf-8"),
            is_package=p.name == "__init__.py",
            known=known,
        )
    return out


def upward(imports: Iterable[Import]) -> set[tuple[str, str]]:
    return {(i.importer, i.target) for i in imports if stage(i.target) > stage(i.importer)}


def private(imports: Iterable[Import]) -> set[tuple[str, str, str]]:
    return {
        (i.importer, i.target, i.name)
        for i in imports
        if i.name is not None
        and i.name.startswith("_")
        and not i.name.startswith("__")
        and i.target != i.importer
    }


def cycles(
    imports: Iterable[Import], allowed: Iterable[tuple[str, str]], *, lazy: bool = False
) -> list[list[str]]:
    """Strongly connected components (more than one module) of the import-time graph; with
    ``lazy``, of the graph of every import, in functions and under ``TYPE_CHECKING`` too."""
    skip = set(allowed)
    graph: dict[str, set[str]] = {}
    for i in imports:
        if (
            (i.at_import_time or lazy)
            and (i.importer, i.target) not in skip
            and i.importer != i.target
        ):
            graph.setdefault(i.importer, set()).add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def src_imports() -> list[Import]:
    return scan(SRC)


def test_every_module_has_a_stage(src_imports: list[Import]) -> None:
    for i in src_imports:
        stage(i.importer)
        stage(i.target)


def test_imports_point_down_the_pipeline(src_imports: list[Import]) -> None:
    found = upward(src_imports)
    assert found - ALLOWED_UPWARD == set(), "upward imports (move the code, or invert the seam)"
    assert ALLOWED_UPWARD - found == set(), "fixed: delete these from ALLOWED_UPWARD"


def test_no_private_name_crosses_a_module(src_imports: list[Import]) -> None:
    found = private(src_imports)
    assert found - ALLOWED_PRIVATE == set(), "make the name public where it is defined, or move it"
    assert ALLOWED_PRIVATE - found == set(), "fixed: delete these from ALLOWED_PRIVATE"


def test_no_import_cycle(src_imports: list[Import]) -> None:
    assert cycles(src_imports, ALLOWED_CYCLE_EDGES) == []
    closing = {(i.importer, i.target) for i in src_imports if i.at_import_time}
    assert ALLOWED_CYCLE_EDGES - closing == set(), "fixed: delete these from ALLOWED_CYCLE_EDGES"
    if ALLOWED_CYCLE_EDGES:
        assert cycles(src_imports, set()), "no cycle left: empty ALLOWED_CYCLE_EDGES"


def test_no_import_cycle_closed_lazily(src_imports: list[Import]) -> None:
    """Nor one closed by an import in a function or under ``TYPE_CHECKING``: what both sides
    need moves down (a plan or types module), or one side is typed by a small Protocol."""
    assert cycles(src_imports, ALLOWED_LAZY_CYCLE_EDGES, lazy=True) == []
    edges = {(i.importer, i.target) for i in src_imports if not i.at_import_time}
    assert set(ALLOWED_LAZY_CYCLE_EDGES) - edges == set(), "fixed: delete from the allow-list"
    for edge in ALLOWED_LAZY_CYCLE_EDGES:
        others = set(ALLOWED_LAZY_CYCLE_EDGES) - {edge}
        assert cycles(src_imports, others, lazy=True), f"{edge} closes no cycle now: delete it"


def _fake_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_checks_catch_each_kind_of_violation(tmp_path: Path) -> None:
    """The scanner on a made-up tree: each rule fires, and what is exempt stays exempt."""
    root = _fake_tree(
        tmp_path,
        {
            "errors.py": "from . import tool_defs\n",
            "tool_defs.py": "from .errors import _secret\nfrom . import errors\n",
            "prompt/__init__.py": "",
            "prompt/render.py": (
                "from typing import TYPE_CHECKING\n"
                "from ..dialect.spec import DialectSpec\n"
                "if TYPE_CHECKING:\n    from ..parse import thing\n"
                "def later():\n    from ..engine import run\n"
            ),
            "dialect/__init__.py": "",
            "dialect/spec.py": (
                "from ..errors import Error\ndef render():\n    from ..prompt import render\n"
            ),
        },
    )
    imports = scan(root)
    assert upward(imports) == {
        ("tooldialect.prompt.render", "tooldialect.dialect.spec"),
        ("tooldialect.prompt.render", "tooldialect.parse"),
        ("tooldialect.prompt.render", "tooldialect.engine"),
    }
    assert private(imports) == {("tooldialect.tool_defs", "tooldialect.errors", "_secret")}
    assert cycles(imports, set()) == [["tooldialect.errors", "tooldialect.tool_defs"]]
    assert cycles(imports, {("tooldialect.errors", "tooldialect.tool_defs")}) == []
    # render -> spec at import time, spec -> render only in a function: a cycle all the same
    assert sorted(cycles(imports, set(), lazy=True)) == [
        ["tooldialect.dialect.spec", "tooldialect.prompt.render"],
        ["tooldialect.errors", "tooldialect.tool_defs"],
    ]
    lazy = {i.target: i.at_import_time for i in imports if i.importer.endswith("render")}
    assert lazy == {
        "tooldialect.dialect.spec": True,
        "tooldialect.parse": False,
        "tooldialect.engine": False,
    }
