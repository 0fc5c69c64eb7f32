"""Shared fixtures: where the test models and the vendored templates live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TEMPLATES = FIXTURES / "templates"


def models_dir() -> Path:
    env = os.environ.get("TOOLDIALECT_MODELS")
    return Path(env) if env else Path.home() / ".cache" / "tooldialect" / "models"


MODEL_FILES = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}


def model_path(key: str) -> Path:
    """Path of a test model, or skip with the command that fetches it."""
    path = models_dir() / MODEL_FILES[key]
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
def gemma3_path() -> Path:
    return model_path("gemma3")


def read_template(name: str) -> str:
    """A vendored template from tests/fixtures/templates (see its README for sources)."""
    return (TEMPLATES / name).read_text(encoding="utf-8")
