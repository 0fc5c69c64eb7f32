"""Shared pieces of the benchmarks: model paths, Llama factories, perf counters, statistics."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
N_THREADS = 2  # the machine has 2 cores; Llama's default would use one

MODEL_LABELS = {"smollm2": "SmolLM2-135M", "qwen": "Qwen2.5-Coder-0.5B", "gemma3": "Gemma-3-270M"}


def model_path(key: str) -> Path:
    """Path of a test model; raises with the fetch command when it is missing."""
    from scripts.fetch_models import model_file  # the one table of test-model files

    path = model_file(key)
    if not path.exists():
        raise FileNotFoundError(
            f"model {key!r} missing at {path}; run `python scripts/fetch_models.py {key}`"
        )
    return path


def ensure_importable() -> None:
    """Make ``bench`` importable when a script is run as ``python bench/x.py``."""
    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


SYSTEMS = ("tooldialect", "default", "chatml-fc")
"""Llama set-ups compared: our handler, the GGUF template handler, chatml-function-calling."""


def make_llama(model: str, system: str, *, n_ctx: int = 4096) -> Any:
    """A quiet Llama on ``model`` wired for ``system`` (see :data:`SYSTEMS`)."""
    from llama_cpp import Llama

    kwargs: dict[str, Any] = {
        "model_path": str(model_path(model)),
        "n_ctx": n_ctx,
        "n_threads": N_THREADS,
        "n_threads_batch": N_THREADS,
        "verbose": False,
        "seed": 0,
    }
    if system == "tooldialect":
        from tooldialect.handler import ToolChatHandler

        kwargs["chat_handler"] = ToolChatHandler()
    elif system == "chatml-fc":
        kwargs["chat_format"] = "chatml-function-calling"
    elif system != "default":
        raise ValueError(f"unknown system {system!r}; choose one of {SYSTEMS}")
    return Llama(**kwargs)


@dataclass(frozen=True)
class Perf:
    """llama.cpp context counters: prompt-batch and single-token decode time and tokens."""

    t_p_eval_ms: float
    t_eval_ms: float
    n_p_eval: int
    n_eval: int

    def __sub__(self, other: Perf) -> Perf:
        return Perf(
            self.t_p_eval_ms - other.t_p_eval_ms,
            self.t_eval_ms - other.t_eval_ms,
            self.n_p_eval - other.n_p_eval,
            self.n_eval - other.n_eval,
        )


def read_perf(llm: Any) -> Perf:
    """Cumulative counters of ``llm``'s context (batches of more than one token count as prompt)."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(llm._ctx.ctx)
    return Perf(data.t_p_eval_ms, data.t_eval_ms, data.n_p_eval, data.n_eval)


def capture_generations(llm: Any) -> list[Any]:
    """Record every ``Generation`` the tooldialect handler's engine starts for ``llm``.

    ``Generation.result.last_prompt_eval_tokens`` is the number of prompt tokens the engine
    actually decoded (the rest came from the KV cache).
    """
    engine = llm.chat_handler.setup(llm).engine
    generations: list[Any] = []
    original = engine.run

    def recording(request: Any) -> Any:
        generation = original(request)
        generations.append(generation)
        return generation

    engine.run = recording
    return generations


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    import llama_cpp

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "llama_cpp_python": llama_cpp.__version__,
        "n_threads": str(N_THREADS),
    }


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence llama.cpp's C-level logging for the block (file descriptor 2)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass
class DecodeClock:
    """When a request's first decode (``llm.eval``) started; ``None`` until it has."""

    first: float | None = None


@contextlib.contextmanager
def first_decode(llm: Any) -> Iterator[DecodeClock]:
    """Note when the block's first ``llm.eval`` starts (the warm prompt's tail, then the reply):
    llama.cpp books every multi-token batch as prompt time, fast-forwarded ones included, so
    decode time is measured from there instead."""
    import time

    clock = DecodeClock()
    original = llm.eval

    def timed(tokens: Any) -> Any:
        if clock.first is None:
            clock.first = time.perf_counter()
        return original(tokens)

    llm.eval = timed
    try:
        yield clock
    finally:
        del llm.eval  # back to the class's method


@contextlib.contextmanager
def one_token_evals(llm: Any, *, prompt_over: int = 64) -> Iterator[None]:
    """Decode every batch one token at a time, except prompts (batches over ``prompt_over``
    tokens): tells batched-logits effects from the forced tokens themselves."""
    batched = llm.eval

    def one_by_one(tokens: Any) -> None:
        if len(tokens) > prompt_over:
            batched(tokens)
            return
        for t in tokens:
            batched([t])

    llm.eval = one_by_one
    try:
        yield
    finally:
        del llm.eval
