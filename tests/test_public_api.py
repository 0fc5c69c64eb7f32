"""The curated public API: ``__all__`` is complete, sorted, importable, and model-free."""

from __future__ import annotations

import subprocess
import sys

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
    """Only the engine and the handler touch llama_cpp, and only when a model is used."""
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
