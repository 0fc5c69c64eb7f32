"""The agent-loop benchmark's script and its report rows (bench/agent_turns.py), model-free."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import agent_turns


def test_the_script_is_six_steps_with_one_answer_without_tools() -> None:
    tools = agent_turns.loop_tools(3)
    steps = agent_turns.scripted_loop(tools)
    assert len(steps) == 6
    assert [choice for _, choice in steps].count("none") == 1
    # each step's history extends the previous one (an agent appends, never rewrites)
    for (before, _), (after, _) in itertools.pairwise(steps):
        assert after[: len(before)] == before and len(after) > len(before)
    assistant = [m for m in steps[-1][0] if m["role"] == "assistant"]
    assert assistant and all(m["reasoning_content"] for m in assistant)
    called = {c["function"]["name"] for m in assistant for c in m.get("tool_calls", [])}
    assert called <= {t["function"]["name"] for t in tools}


def run(decodes: int, excess: list[int], rerendered: list[int]) -> dict[str, Any]:
    rows = [
        {
            "step": i + 1,
            "tool_choice": "auto",
            "seconds": 1.0,
            "ttft_s": 0.5,
            "tokens_evaluated": 10,
            "prompt_decoded": 10,
            "excess": e,
            "rerendered": r,
            "checkpoint": "",
        }
        for i, (e, r) in enumerate(zip(excess, rerendered, strict=True))
    ]
    return {"n_tools": 50, "tool_prefix_decodes": decodes, "total_s": 6.0, "rows": rows}


def result(after_decodes: int, after_excess: list[int]) -> dict[str, Any]:
    zeros = [0] * len(after_excess)
    return {
        "tooldialect": run(1, zeros, zeros),
        "chatml-function-calling": run(1, zeros, zeros),
        "total_ratio_vs_chatml_fc": 1.0,
        "reasoning_template_without_checkpoint": run(2, zeros, zeros),
        "reasoning_template_with_checkpoint": run(after_decodes, after_excess, [0, 5, 5]),
    }


def test_targets_are_met_when_the_prefix_is_decoded_once_and_excess_is_re_rendering() -> None:
    rows = agent_turns.loop_targets(result(1, [0, 5, 3]))
    assert [met for *_, met in rows] == [True, True, None]
    assert "without the checkpoint: 2" in rows[0][1]


def test_targets_fail_on_a_second_prefix_decode_or_excess_beyond_re_rendering() -> None:
    rows = agent_turns.loop_targets(result(2, [0, 5, 9]))
    assert [met for *_, met in rows] == [False, False, None]


def test_a_failed_run_is_reported_not_run() -> None:
    rows = agent_turns.loop_targets({"error": "RuntimeError: boom"})
    assert len(rows) == 1 and rows[0][3] is None and "boom" in rows[0][1]


def test_the_table_has_a_row_per_step_and_set_up() -> None:
    lines = agent_turns.loop_table(result(1, [0, 0, 0]))
    assert sum(line.startswith("| reasoning, checkpoint |") for line in lines) == 3
    assert sum(line.startswith("| chatml-function-calling |") for line in lines) == 3
