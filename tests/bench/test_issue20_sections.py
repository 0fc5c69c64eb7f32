"""Issue 20's doc sections and target rows (bench/many_tools.py, long_answers.py,
fastforward.py, prompt_cache.py, scale.py) from saved result dicts, model-free."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import fastforward, long_answers, many_tools, prompt_cache, report, scale


def tools_run(n: int, *, ratio: float, back: float) -> dict[str, Any]:
    """One size of ``many_tools.run``'s result, in the shape ``measure`` writes."""
    return {
        "model": "smollm2",
        "n_tools": n,
        "tools_json_bytes": 700 * n,
        "prompt_tokens": 280 * n,
        "cold_s": 100.0,
        "armed": {"tokens": 16, "ratio": ratio, "ratios": [ratio, ratio], "pairs": []},
        "return": {"seconds": 100.0 * back, "ratio_vs_cold": back, "prompt_tokens_decoded": 12},
        "memory": {"checkpoint_bytes": 3 * 2**20, "rss_mb": 300.0},
    }


def test_many_tools_rows_say_met_only_when_each_target_is() -> None:
    result = {
        "pairs": 2,
        "tokens": 16,
        "runs": [
            tools_run(100, ratio=0.99, back=0.01),
            tools_run(250, ratio=0.90, back=0.20),
            {"model": "qwen", "n_tools": 250, "error": "ContextError: too long"},
        ],
    }
    rows = many_tools.target_rows(result)
    assert [ok for *_, ok in rows] == [True, True, False, False, None]
    assert "28000 prompt tokens" in rows[0][0]
    section = many_tools.doc_section(result)
    lines = [line for line in section.splitlines() if line.startswith("| smollm2")]
    assert len(lines) == 2
    assert lines[0].count("| met |") == 2 and "not met" not in lines[0]
    assert lines[1].count("**not met**") == 2
    assert "error: ContextError: too long" in section


def test_many_tools_not_run_is_said() -> None:
    assert many_tools.target_rows({"error": "no model"})[0][1] == "not run: no model"
    assert "not run: no model" in many_tools.doc_section({"error": "no model"})


def test_context_fits_prompt_decode_and_a_second_conversation() -> None:
    for n_prompt, tokens in ((1480, 4), (20000, 64), (255, 1)):
        n_ctx = long_answers.context_size(n_prompt, tokens)
        assert n_ctx % 256 == 0 and n_ctx >= n_prompt + tokens + 512


def decode_row(model: str, length: int, ratio: float, grow: float) -> dict[str, Any]:
    return {
        "model": model,
        "length": length,
        "trigger_words": ["<tool_call>"],
        "trigger_patterns": 3,
        "ratio": ratio,
        "ratios": [ratio],
        "last_over_first_segment_vs_plain": grow,
        "pairs": [{"grammar_fired": False}, {"grammar_fired": True}],
    }


def test_long_answer_rows_need_the_ratio_and_a_flat_cost() -> None:
    result = {
        "note": "x",
        "sampler_scan": [],
        "qwen": [decode_row("qwen", 256, 1.01, 1.0)],
        "smollm2": [
            decode_row("smollm2", 256, 0.99, 1.1),
            decode_row("smollm2", 2048, 0.99, 2.0),  # fast enough, but the cost grows
            decode_row("smollm2", 8192, float("nan"), float("nan")),  # every pair fired
        ],
    }
    rows = long_answers.target_rows(result)
    # SmolLM2 (pattern triggers) before Qwen, as MODELS orders them
    assert [r[0].split(", ")[2] for r in rows] == ["smollm2"] * 3 + ["qwen"]
    assert [ok for *_, ok in rows] == [True, False, None, True]
    table = [line for line in long_answers.decode_table(result) if line.startswith(("| s", "| q"))]
    assert [line.rsplit("|", 2)[-2].strip() for line in table] == [
        "met",
        "**not met**",
        "not measured",
        "met",
    ]
    assert all("| 1 |" in line for line in table)  # one fired pair each
    assert long_answers.target_rows({"error": "boom"})[0][1] == "not run: boom"


def auto_result(speedup: float, agree: bool) -> dict[str, Any]:
    cell = {"tokens": 48, "forced_share": 0.31, "speedup_vs_plain": speedup}
    return {
        "model": "qwen",
        "n_tools": 1,
        "load_average_1min": [0.5, 0.6],
        "summary": {
            "canonical+ff+lenient": {**cell, "speedup_vs_baseline": 1.0, "agree": True},
            "canonical+ff": {**cell, "speedup_vs_baseline": 1.1, "agree": True},
            "canonical+ff+drafts": {**cell, "speedup_vs_baseline": 1.2, "agree": agree},
        },
    }


@pytest.mark.parametrize(
    ("speedup", "agree", "ok"), [(1.2, True, True), (1.2, False, False), (1.1, True, False)]
)
def test_an_auto_call_counts_only_fast_and_unchanged(speedup: float, agree: bool, ok: bool) -> None:
    result = [auto_result(speedup, agree)]
    [row] = fastforward.auto_target_rows(result)
    assert row[-1] is ok
    section = fastforward.auto_doc_section(result)
    default = next(line for line in section.splitlines() if "| `canonical+ff+drafts` |" in line)
    assert default.endswith("| met |" if ok else "| **not met** |")
    strict = next(line for line in section.splitlines() if "| `canonical+ff` |" in line)
    assert strict.endswith("| - |")  # only the default is judged
    lenient = next(line for line in section.splitlines() if "| `canonical+ff+lenient` |" in line)
    assert lenient.endswith("| - |")


def cache_result(cached: float, checkpoint: float) -> dict[str, Any]:
    row = {"cold_s": 8.0, "return_uncached_s": 8.0}
    return {
        "prompt_cache": [
            {
                "model": "qwen",
                "n_tools": 10,
                "median_ratio_cached_vs_cold": cached,
                "state_bytes_per_entry": 15 * 2**20,
                "rows": [
                    {
                        **row,
                        "return_cached_s": 8 * cached,
                        "return_cached_tokens_decoded": 11,
                        "ratio_cached_vs_cold": cached,
                    }
                ],
            }
        ],
        "checkpoints": [
            {
                "model": "qwen",
                "n_tools": 10,
                "median_ratio_checkpoint_vs_cold": checkpoint,
                "checkpoint_bytes": 25 * 2**20,
                "rows": [
                    {
                        **row,
                        "return_checkpoint_s": 8 * checkpoint,
                        "return_checkpoint_tokens_decoded": 12,
                        "ratio_checkpoint_vs_cold": checkpoint,
                    }
                ],
            }
        ],
    }


def test_prompt_cache_rows_hold_each_mechanism_to_its_own_target() -> None:
    # 0.1 meets the prompt cache's 0.15 but not the checkpoints' 0.05
    result = cache_result(0.1, 0.1)
    assert [ok for *_, ok in prompt_cache.target_rows(result)] == [True, False]
    lines = [line for line in prompt_cache.doc_section(result).splitlines() if "| qwen |" in line]
    assert lines[0].startswith("| prompt cache") and lines[0].endswith("| 15 | met |")
    assert lines[1].startswith("| checkpoints") and lines[1].endswith("| 25 | **not met** |")


def meta() -> dict[str, Any]:
    machine = {"cpu": "test", "cores": "2", "python": "3", "llama_cpp_python": "0"}
    return {"quick": True, "date": "2026-12-02", "seconds": 60.0, "machine": machine}


def test_the_doc_gets_every_part_and_keeps_its_hand_written_end(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    hand = f"{report.KEEP}\n\n## Notes by hand\n\nkept verbatim.\n"
    doc.write_text("# old generated text\n\n" + hand, encoding="utf-8")
    results = {
        "meta": meta(),
        "many_tools": {"pairs": 2, "tokens": 16, "runs": [tools_run(25, ratio=0.99, back=0.01)]},
        "long_answers": {"smollm2": [decode_row("smollm2", 256, 0.98, 1.0)]},
        "auto_calls": [auto_result(1.2, True)],
        "prompt_cache": cache_result(0.02, 0.02),
    }
    targets = scale.write_doc(results, path=doc)
    text = doc.read_text(encoding="utf-8")
    assert "# old generated text" not in text
    assert text.endswith(hand) and text.count(report.KEEP) == 1
    for heading in (
        "## Hundreds of tools",
        "## Long answers",
        "## Calls under `auto`",
        "## Returning to a tool set",
    ):
        assert text.index(heading) < text.index(report.KEEP)
    for figure in ("8. long", "9. armed decode", "9. return", "10. auto call", "11. return"):
        assert figure in targets
    # rewriting twice keeps the hand-written end once
    scale.write_doc(results, path=doc)
    assert doc.read_text(encoding="utf-8") == text


def test_the_armed_ratio_weighs_both_orders_alike() -> None:
    def pair(ratio: float, armed_first: bool, fired: bool = False) -> dict[str, Any]:
        return {"ratio": ratio, "armed_first": armed_first, "grammar_fired": fired}

    pairs = [pair(0.9, True), pair(1.1, False), pair(0.92, True), pair(0.5, False, fired=True)]
    assert long_answers.balanced_ratio(pairs) == pytest.approx((0.91 * 1.1) ** 0.5)
    assert long_answers.balanced_ratio(pairs[:1] + pairs[2:3]) == pytest.approx(0.91)  # one order
