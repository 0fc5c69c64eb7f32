"""The curated public API: ``__all__`` is complete, sorted, importable, and model-free."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import tooldialect


def test_all_is_sorted_and_resolves() -> None:
    names = tooldialect.__all__
    assert names == sorted(names)
    missing = [n for n in names if not hasattr(tooldialect, n)]
    assert missing == []


def test_every_public_object_is_exported() -> None:
    public = {
        n
        for n, v in vars(tooldialect).items()
        if not n.startswith("_") and not isinstance(v, type(sys)) and n != "annotations"
    }
    assert public - set(tooldialect.__all__) == set()


def test_errors_share_one_root() -> None:
    errors = [getattr(tooldialect, n) for n in tooldialect.__all__ if n.endswith("Error")]
    assert errors and all(issubclass(e, tooldialect.ToolDialectError) for e in errors)


def test_import_does_not_load_llama_cpp() -> None:
    """``import tooldialect`` loads no llama_cpp (where it is imported: ``LLAMA_CPP_IMPORTS``)."""
    code = "import sys, tooldialect; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_version_is_the_one_in_pyproject() -> None:
    """``__version__`` is read from the installed metadata: pyproject.toml holds the one literal."""
    from importlib import metadata
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    assert tooldialect.__version__ == metadata.version("tooldialect") == declared


# Where llama_cpp is imported, and how. Importing tooldialect (and any module of it) loads no
# llama_cpp: `inspect`, detection, grammars and parsing run without a model, and only a model in
# use (the in-process engine, the handler registering itself) or llama-cpp-python's own server
# (`serve`, `chat`) loads it. "function": inside a function body, run when that is called;
# "type_checking": under `if TYPE_CHECKING:`, for annotations only. A module added here, or one
# that no longer imports it, fails the test until this table says so.
LLAMA_CPP_IMPORTS: dict[str, set[str]] = {
    "tooldialect.handler": {"function", "type_checking"},  # register(); the response types
    "tooldialect.engine.in_process.checkpoints": {"function"},
    "tooldialect.engine.in_process.drafts": {"function"},
    "tooldialect.engine.in_process.generate": {"function"},
    "tooldialect.engine.in_process.prompt_cache": {"function"},
    "tooldialect.engine.in_process.sampling": {"function"},
    "tooldialect.apps.asgi": {"function"},  # the served handler and model lock of its server
    "tooldialect.apps.chat": {"function"},  # Llama, when the chat starts
    "tooldialect.apps.serve": {"function", "type_checking"},  # the server, its settings and CLI
}


def _llama_cpp_imports(tree: ast.AST) -> set[str]:
    """How a module imports llama_cpp: "module" (at import time), "function", "type_checking"."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "function" if where == "module" else where
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, "type_checking" if where == "module" else where)
                for stmt in child.orelse:
                    visit_stmt(stmt, where)
                continue
            visit_stmt(child, inner)

    def visit_stmt(node: ast.AST, where: str) -> None:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n == "llama_cpp" or n.startswith("llama_cpp.") for n in names):
            found.add(where)
        visit(node, where)

    visit(tree, "module")
    return found


def test_llama_cpp_is_imported_only_where_listed_and_lazily() -> None:
    src = Path(tooldialect.__file__).resolve().parent
    seen: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        how = _llama_cpp_imports(ast.parse(path.read_text(encoding="utf-8")))
        if how:
            seen[name] = how
    assert seen == LLAMA_CPP_IMPORTS


def test_importing_every_module_does_not_load_llama_cpp() -> None:
    """What the table above says, run: every module imported, llama_cpp still not loaded."""
    code = (
        "import importlib, pkgutil, sys, tooldialect\n"
        "for m in pkgutil.walk_packages(tooldialect.__path__, 'tooldialect.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'llama_cpp'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
