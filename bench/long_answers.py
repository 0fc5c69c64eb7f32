"""Long answers under an armed lazy grammar (issue 20, section 3).

The handler prepares the request (tools offered, ``tool_choice="auto"``, a prose question); the
bench then runs that ``GenerationRequest`` on the in-process engine twice per pair, armed (the
lazy grammar and its triggers) and plain (the same request without a grammar), alternating the
order, with the end-of-generation tokens biased away so both sides decode exactly ``length``
tokens. A pair whose armed side triggered (the grammar fired) is reported and left out of the
ratio. Per-token cost is reported by quarter of the answer: it must stay flat as the answer
grows, which a scan of the whole generated buffer after every token would not.

Run alone: ``python bench/long_answers.py --quick``.
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import dataclasses
import json
import time
from typing import Any

from bench import workload
from bench.common import make_llama, median, quiet_stderr

SEGMENTS = 4


def _request(llm: Any, *, n_tools: int, length: int) -> Any:
    """The ``GenerationRequest`` the handler builds for a prose question with tools armed."""
    engine = llm.chat_handler.setup(llm).engine
    seen: list[Any] = []
    original = engine.run

    def recording(request: Any) -> Any:
        seen.append(request)
        return original(request)

    engine.run = recording
    try:
        llm.create_chat_completion(
            messages=workload.PLAIN_MESSAGES,
            tools=workload.make_tools(n_tools),
            tool_choice="auto",
            temperature=0.0,
            max_tokens=1,
        )
    finally:
        del engine.run
    request = seen[-1]
    eog = [t for t in range(llm.n_vocab()) if engine._lib.llama_vocab_is_eog(engine.vocab, t)]
    sampling = dataclasses.replace(request.sampling, logit_bias={t: -1e9 for t in eog})
    return engine, dataclasses.replace(request, sampling=sampling, max_tokens=length, stop=())


def _timed_run(engine: Any, request: Any) -> dict[str, Any]:
    """Decode ``request``; per-segment seconds per token from each yielded piece's time."""
    generation = engine.run(request)
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    for _ in generation:
        marks.append((generation.result.completion_tokens, time.perf_counter()))
    total = time.perf_counter() - start
    n = generation.result.completion_tokens
    edges = [n * (i + 1) // SEGMENTS for i in range(SEGMENTS)]
    seg_ms: list[float] = []
    prev_n, prev_t = 0, start
    for edge in edges:
        at = next(((k, t) for k, t in marks if k >= edge), marks[-1] if marks else (n, start))
        if at[0] > prev_n:
            seg_ms.append(1000.0 * (at[1] - prev_t) / (at[0] - prev_n))
        prev_n, prev_t = at
    text = generation.result.text
    return {"tokens": n, "seconds": total, "segment_ms_per_token": seg_ms, "text": text}


def measure(
    model: str, *, lengths: tuple[int, ...], reps: int, n_tools: int
) -> list[dict[str, Any]]:
    """Interleaved armed/plain pairs at each answer length on ``model``."""
    with quiet_stderr():
        llm = make_llama(model, "tooldialect", n_ctx=max(lengths) + 1024)
    rows = []
    for length in lengths:
        engine, armed = _request(llm, n_tools=n_tools, length=length)
        plain = dataclasses.replace(armed, grammar=None)
        triggers = armed.triggers
        pairs = []
        for i in range(reps):
            order = [("armed", armed), ("plain", plain)]
            if i % 2:
                order.reverse()
            got = {name: _timed_run(engine, req) for name, req in order}
            a, b = got["armed"], got["plain"]
            fired = a["text"] != b["text"]
            pairs.append(
                {
                    "ratio": (b["seconds"] / a["seconds"]),
                    "armed_segments_ms": [round(x, 2) for x in a["segment_ms_per_token"]],
                    "plain_segments_ms": [round(x, 2) for x in b["segment_ms_per_token"]],
                    "tokens": a["tokens"],
                    "grammar_fired": fired,
                }
            )
        clean = [p for p in pairs if not p["grammar_fired"]]
        growth = [
            p["armed_segments_ms"][-1]
            / p["armed_segments_ms"][0]
            / (p["plain_segments_ms"][-1] / p["plain_segments_ms"][0])
            for p in clean
            if len(p["armed_segments_ms"]) == SEGMENTS and len(p["plain_segments_ms"]) == SEGMENTS
        ]
        rows.append(
            {
                "model": model,
                "length": length,
                "n_tools": n_tools,
                "trigger_words": list(triggers.words),
                "trigger_patterns": len(triggers.patterns) + len(triggers.word_patterns),
                "ratio": median([p["ratio"] for p in clean]),
                "ratios": [round(p["ratio"], 3) for p in clean],
                "last_over_first_segment_vs_plain": median(growth),
                "pairs": pairs,
            }
        )
    return rows


def run(*, quick: bool) -> dict[str, Any]:
    lengths = (256,) if quick else (512, 2048)
    reps = 2
    out: dict[str, Any] = {"note": "ratio = plain seconds / armed seconds (>= 0.97 is the target)"}
    for model in ("smollm2", "qwen"):
        out[model] = measure(model, lengths=lengths, reps=reps, n_tools=10)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", default=None)
    parser.add_argument("--lengths", default=None, help="comma-separated answer lengths")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    if args.model:
        lengths = tuple(int(x) for x in (args.lengths or "512").split(","))
        result: Any = measure(args.model, lengths=lengths, reps=args.reps, n_tools=10)
    else:
        result = run(quick=args.quick)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
