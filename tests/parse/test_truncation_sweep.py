"""Truncation never fabricates a call: every golden output (tests/fixtures/outputs/**.json) cut at
every position and parsed with ``truncated=True`` (the token limit cut it) gives, for each call
not marked ``truncated``, exactly the call the whole text holds at that index (docs/parsing.md,
"Truncation: never fabricate a call")."""

from __future__ import annotations

import pytest

from tooldialect.parse import parse_output

from .helpers import Case, load_cases

CASES = [
    c
    for c in load_cases()
    if not c.truncated and any(not t.get("truncated") for t in c.expected.get("tool_calls", []))
]


def test_sweep_has_cases() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_cut_call_is_never_complete(case: Case) -> None:
    whole = [(c["name"], c["arguments"]) for c in case.expected["tool_calls"]]
    for cut in range(1, len(case.text)):
        out = parse_output(
            case.text[:cut],
            case.spec,
            tools=case.tools,
            reasoning_open=case.reasoning_open,
            prefill=case.prefill,
            truncated=True,
            end_of_turn=case.end_of_turn,
        )
        for i, call in enumerate(out.tool_calls):
            if not call.truncated:
                assert i < len(whole) and (call.name, call.arguments) == whole[i], (
                    f"cut at {cut}: {case.text[:cut]!r} gave the complete call "
                    f"{call.name}({call.arguments})"
                )
