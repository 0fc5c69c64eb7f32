"""``constraint_tax.py --redo``: after a change that only widens the grammar, the records of a
mode run again where its grammar acted (its answer differs from parse only's); the rest stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.constraint_tax import drop_where_grammar_acted, read_records


def record(case_id: str, calls: list[list[str]], content: str = "") -> dict[str, object]:
    return {"id": case_id, "mode": "lazy_natural", "record": {"calls": calls, "content": content}}


def test_only_the_records_that_differ_from_parse_only_are_dropped(tmp_path: Path) -> None:
    call = [["f", '{"a": 1}']]
    parse: dict[str, dict[str, Any]] = {
        "same": {"calls": call, "content": ""},
        "other_call": {"calls": call, "content": ""},
        "other_text": {"calls": [], "content": "no"},
    }
    path = tmp_path / "mode.jsonl"
    rows = [
        record("same", call),
        record("other_call", [["f", '{"a": 2}']]),
        record("other_text", [], "yes"),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    drop_where_grammar_acted(path, parse)
    assert [r["id"] for r in read_records(path)] == ["same"]
