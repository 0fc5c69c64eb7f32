"""Structured output speed: decode tok/s of a JSON-schema answer through ``ToolChatHandler``
(``response_format``) against llama-cpp-python's own schema path (its ``LlamaGrammar`` applied
over the full vocabulary, as its handlers do for ``{"type": "json_object", "schema": ...}``) and
against unconstrained decoding; plus the cost of ``logprobs=True, top_logprobs=5``.

Every variant decodes the same prompt tokens in the same process, interleaved round by round in
a rotating order, so each figure is a median of per-round ratios against unconstrained decoding
(target: >= 0.95x). Decode time is wall time minus llama.cpp's prompt-batch time.

    python bench/structured.py --quick
"""

from __future__ import annotations

if __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import datetime
import json
from collections.abc import Callable
from typing import Any

from bench.common import RESULTS, machine, make_llama, median, quiet_stderr, write_json
from bench.speed import _timed

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "email": {"type": "string"},
        "city": {"type": "string"},
        "skills": {"type": "array", "items": {"type": "string"}},
        "level": {"type": "string", "enum": ["junior", "mid", "senior"]},
    },
    "required": ["name", "age", "email", "city", "skills", "level"],
}
MESSAGES = [
    {
        "role": "user",
        "content": "Invent a software engineer and describe them as JSON with name, age, email, "
        "city, a list of five skills and a level.",
    }
]
VARIANTS = ("handler", "llama-cpp-python", "handler+logprobs")


def run_model(model: str, *, rounds: int, max_tokens: int) -> dict[str, Any]:
    from llama_cpp import LlamaGrammar

    with quiet_stderr():
        llm = make_llama(model, "tooldialect", n_ctx=2048)
        own_grammar = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    fmt = {"type": "json_schema", "json_schema": {"name": "Engineer", "schema": SCHEMA}}

    def handler(**extra: Any) -> dict[str, Any]:
        return llm.create_chat_completion(
            messages=MESSAGES, response_format=fmt, temperature=0.0, max_tokens=max_tokens, **extra
        )

    first = handler()  # warm-up; its prompt is every variant's prompt
    n_prompt = first["usage"]["prompt_tokens"]
    prompt = [int(t) for t in llm.input_ids[:n_prompt]]

    def plain(**extra: Any) -> dict[str, Any]:
        return llm.create_completion(prompt=prompt, temperature=0.0, max_tokens=max_tokens, **extra)

    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "handler": handler,
        "llama-cpp-python": lambda: plain(grammar=own_grammar),
        "handler+logprobs": lambda: handler(logprobs=True, top_logprobs=5),
        "unconstrained": plain,
    }
    for fn in runs.values():
        fn()  # warm-up
    names = list(runs)
    per_round: list[dict[str, float]] = []
    texts: dict[str, str] = {}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        tps: dict[str, float] = {}
        for name in order:
            out, wall, prompt_s = _timed(llm, runs[name])
            n = out["usage"]["completion_tokens"]
            tps[name] = n / max(wall - prompt_s, 1e-9)
            choice = out["choices"][0]
            texts[name] = choice.get("text") or choice.get("message", {}).get("content") or ""
        per_round.append(tps)
    base = [row["unconstrained"] for row in per_round]
    result: dict[str, Any] = {
        "model": model,
        "prompt_tokens": n_prompt,
        "tps": {n: median([row[n] for row in per_round]) for n in names},
        "ratio_vs_unconstrained": {
            n: median([row[n] / b for row, b in zip(per_round, base, strict=True)])
            for n in VARIANTS
        },
        "logprobs_overhead": median(
            [row["handler+logprobs"] / row["handler"] for row in per_round]
        ),
        "handler_valid_json": _valid(texts.get("handler", "")),
        "samples": {n: t[:160] for n, t in texts.items()},
    }
    llm.close()
    return result


def _valid(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(SCHEMA["required"]) <= set(value)


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | handler | llama-cpp-python's grammar | handler + logprobs(5) | "
        "logprobs cost | unconstrained tok/s |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        r = row["ratio_vs_unconstrained"]
        lines.append(
            f"| {row['model']} | {r['handler']:.2f}x | {r['llama-cpp-python']:.2f}x | "
            f"{r['handler+logprobs']:.2f}x | {row['logprobs_overhead']:.2f}x | "
            f"{row['tps']['unconstrained']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 64 tokens")
    parser.add_argument("--models", nargs="+", default=["smollm2", "qwen"])
    args = parser.parse_args(argv)
    rounds, max_tokens = (3, 64) if args.quick else (9, 160)
    rows = []
    for m in args.models:
        rows.append(run_model(m, rounds=rounds, max_tokens=max_tokens))
        print(json.dumps(rows[-1]), flush=True)  # each model as it finishes
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    write_json(
        RESULTS / f"structured-{stamp}.json",
        {"machine": machine(), "rounds": rounds, "max_tokens": max_tokens, "rows": rows},
    )
    print(format_table(rows))


if __name__ == "__main__":
    main()
