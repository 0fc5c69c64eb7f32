"""Issue 20's figures at agent scale, as ``bench/run.py`` runs and publishes them.

Each part (long answers, hundreds of tools, ``auto`` calls, the return to a tool set) is a run
function taking ``quick``, a doc section and the rows it adds to the target table; the agent
loop (section 5) runs inside ``bench/speed.py``. :func:`write_doc` writes docs/benchmarks.md
with every part that ran.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import fastforward, long_answers, many_tools, prompt_cache, report

Part = tuple[Callable[[bool], Any], Callable[[Any], str], Callable[[Any], list[report.Row]]]

ISSUE_20: dict[str, Part] = {
    "long_answers": (
        lambda quick: long_answers.run(quick=quick),
        long_answers.doc_section,
        long_answers.target_rows,
    ),
    "many_tools": (
        lambda quick: many_tools.bench_run(quick=quick),
        many_tools.doc_section,
        many_tools.target_rows,
    ),
    "auto_calls": (
        lambda quick: fastforward.auto_run(quick=quick),
        fastforward.auto_doc_section,
        fastforward.auto_target_rows,
    ),
    "prompt_cache": (
        lambda quick: prompt_cache.run(quick=quick),
        prompt_cache.doc_section,
        prompt_cache.target_rows,
    ),
}
"""Issue 20's parts beyond speed.py's agent loop: (run with quick?, doc section, target rows).
Each writes its own section of docs/benchmarks.md and its rows of the target table."""


def write_doc(results: dict[str, Any], path: Path = report.DOC) -> str:
    """docs/benchmarks.md from ``results``: the generated doc, then each issue-20 part that
    ran, its rows in the target table; returns the target table."""
    speed_r, over_r, acc_r = (results.get(k, {}) for k in ("speed", "overhead", "accuracy"))
    parts = [(name, part) for name, part in ISSUE_20.items() if name in results]
    return report.write_doc(
        speed=speed_r,
        over=over_r,
        acc=acc_r,
        meta=results["meta"],
        path=path,
        extra_rows=[row for name, (_, _, rows) in parts for row in rows(results[name])],
        sections=[section(results[name]) for name, (_, section, _) in parts],
    )
