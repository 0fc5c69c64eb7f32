"""Streaming-parser throughput probe (not a test: pytest does not collect ``_``-files).

Run: ``.venv/bin/python -m tests.parse._perf_probe [--profile] [--qwen]``

Builds ~1 MB of mixed model output in the hermes dialect (prose, a few reasoning blocks, hundreds
of calls with JSON arguments, unicode) and reports MB/s of ``parse_output`` and of ``StreamParser``
fed 4-character chunks, random token-sized chunks (1-6 characters) and, with ``--qwen``, the pieces
the Qwen2.5 tokenizer cuts (vocab only, via llama-cpp-python).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import pstats
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output

_WORDS = [
    "the",
    "keeper",
    "climbed",
    "stairs",
    "lamp",
    "storm",
    "light",
    "ship",
    "rocks",
    "night",
    "Zürich",
    "東京",
    "naïve",
    "café",
    "☀️",
    "emoji 🚀",
    "{braces}",
    "a < b",
    "x>y",
    "[list]",
]
QWEN = Path.home() / ".cache/tooldialect/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def mixed_output(spec: DialectSpec, size: int = 1_000_000, *, seed: int = 0) -> tuple[str, int]:
    """About ``size`` characters: prose, reasoning now and then, calls; returns (text, calls)."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = calls = 0

    def words(lo: int, hi: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))

    while total < size:
        piece = ""
        if rng.random() < 0.1:
            piece += "<think>\n" + words(20, 80) + ".\n</think>\n"
        piece += words(40, 200) + ".\n"
        for _ in range(rng.choice((0, 0, 1, 2))):
            args = {
                "title": words(2, 5),
                "body": words(10, 60) + ' "quoted" \\ back\nline',
                "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 3))],
                "n": rng.randint(-5, 10_000),
                "pinned": rng.random() < 0.5,
                "meta": {"x": 1.5, "y": None, "z": [1, {"k": "v"}]},
            }
            piece += spec.render_call("save_note", args) + "\n"
            calls += 1
        parts.append(piece)
        total += len(piece)
    return "".join(parts), calls


def fixed_chunks(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)]


def token_chunks(text: str, *, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    i = 0
    while i < len(text):
        n = rng.choice((1, 2, 3, 4, 4, 5, 6))
        out.append(text[i : i + n])
        i += n
    return out


def qwen_chunks(text: str) -> list[str]:
    """``text`` cut where the Qwen2.5 tokenizer cuts it (pieces of multibyte characters are
    carried to the next token, as a detokenizing server would)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(QWEN), vocab_only=True, verbose=False)
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    out: list[str] = []
    pending = b""
    for t in tokens:
        pending += llm.detokenize([t], special=True)
        try:
            piece = pending.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append(piece)
        pending = b""
    assert "".join(out) == text, "detokenized pieces do not rebuild the text"
    return out


def stream(spec: DialectSpec, chunks: list[str]) -> int:
    parser = StreamParser(spec)
    n = 0
    for c in chunks:
        for d in parser.feed(c):
            n += len(d)
    parser.close()
    return len(parser.result.tool_calls)


def noop(chunks: list[str]) -> int:
    n = 0
    for c in chunks:
        for d in [{"content": c}]:
            n += len(d)
    return n


def best(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true", help="cProfile the 4-char stream")
    ap.add_argument("--qwen", action="store_true", help="also chunk with the Qwen tokenizer")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    spec = DialectSpec.builtin("hermes")
    text, calls = mixed_output(spec)
    mb = len(text.encode("utf-8")) / 1e6
    batch = parse_output(text, spec)
    assert len(batch.tool_calls) == calls, (len(batch.tool_calls), calls)
    print(f"text {mb:.2f} MB, {calls} calls")
    runs: dict[str, list[str]] = {"4-char": fixed_chunks(text, 4), "token 1-6": token_chunks(text)}
    if args.qwen and QWEN.exists():
        runs["qwen tokens"] = qwen_chunks(text)
    print(f"{'batch':>12}: {mb / best(lambda: parse_output(text, spec), args.reps):6.1f} MB/s")
    for name, chunks in runs.items():
        assert stream(spec, chunks) == calls
        secs = best(functools.partial(stream, spec, chunks), args.reps)
        base = best(functools.partial(noop, chunks), args.reps)
        print(
            f"{name:>12}: {mb / secs:6.1f} MB/s  ({len(chunks)} chunks, "
            f"{secs / len(chunks) * 1e6:.2f} us/feed; no-op feed {mb / base:.1f} MB/s)"
        )
    if args.profile:
        chunks = runs["4-char"]
        prof = cProfile.Profile()
        prof.runcall(stream, spec, chunks)
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()
