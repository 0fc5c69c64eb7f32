"""Shared fixtures: where the test models and the vendored templates live."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the repository root: `bench` and `scripts` import from it

from scripts.fetch_models import model_file  # noqa: E402  (the one table of test-model files)

FIXTURES = Path(__file__).parent / "fixtures"
TEMPLATES = FIXTURES / "templates"


def pytest_unconfigure() -> None:
    """Close the two /dev/null files llama-cpp-python opens at import (``llama_cpp._utils``, for
    its ``suppress_stdout_stderr``, used only while a ``Llama`` loads): left open, the interpreter
    reports one as unclosed at exit, after pytest's filters are gone, and no filter catches a
    warning of interpreter finalisation. No test loads a model after the session ends."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        held = getattr(utils, name, None)
        if held is not None:
            held.close()


def model_path(key: str) -> Path:
    """Path of a test model, or skip with the command that fetches it."""
    path = model_file(key)
    if not path.exists():
        pytest.skip(f"model {key!r} missing at {path}; run `python scripts/fetch_models.py {key}`")
    return path


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    return model_path("smollm2")


@pytest.fixture(scope="session")
def qwen_path() -> Path:
    return model_path("qwen")


@pytest.fixture(scope="session")
def smollm2_vocab(smollm2_path: Path) -> Any:
    """SmolLM2's vocabulary alone: what llama.cpp's grammar checks (``grammar_check``) need."""
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(smollm2_path), vocab_only=True, verbose=False, n_threads=2)


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    return model_path("gemma3")


def read_template(name: str) -> str:
    """A vendored template from tests/fixtures/templates (see its README for sources)."""
    return (TEMPLATES / name).read_text(encoding="utf-8")
