"""Golden outputs (tests/fixtures/outputs/**.json): batch, stream, and any chunking agree."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldialect.parse import parse_output

from .helpers import Case, check_consistent, comparable, load_cases, run_stream

CASES = load_cases()
IDS = [c.id for c in CASES]


def test_fixtures_found() -> None:
    assert len(CASES) >= 40
    assert {"hermes", "polyfill-json"} <= {c.id.split("/")[0] for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_parse_output_matches_golden(case: Case) -> None:
    result = parse_output(
        case.text,
        case.spec,
        tools=case.tools,
        reasoning_open=case.reasoning_open,
        prefill=case.prefill,
        truncated=case.truncated,
        end_of_turn=case.end_of_turn,
    )
    exp = case.expected
    assert result.content == exp["content"]
    assert result.reasoning_content == exp.get("reasoning_content")
    calls = exp.get("tool_calls", [])
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        (c["name"], c["arguments"]) for c in calls
    ]
    assert [c.truncated for c in result.tool_calls] == [c.get("truncated", False) for c in calls]
    for got, want in zip(result.tool_calls, calls, strict=True):
        if not got.truncated:
            assert json.loads(got.arguments_json) == got.arguments
        if "id" in want:
            assert got.id == want["id"]
        if "arguments_json" in want:
            assert got.arguments_json == want["arguments_json"]
    assert [c.index for c in result.tool_calls] == list(range(len(calls)))
    assert len({c.id for c in result.tool_calls}) == len(calls)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_stream_whole_and_per_char(case: Case) -> None:
    batch = parse_output(
        case.text,
        case.spec,
        tools=case.tools,
        reasoning_open=case.reasoning_open,
        prefill=case.prefill,
        truncated=case.truncated,
        end_of_turn=case.end_of_turn,
    )
    native = any("id" in c for c in case.expected.get("tool_calls", []))
    for chunks in ([case.text], list(case.text)):
        result, assembled = run_stream(case, chunks)
        check_consistent(result, assembled)
        assert comparable(result, ids=native) == comparable(batch, ids=native)


@st.composite
def _chunked(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(len(text) - 1, 1)))))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_chunking_parses_the_same(case: Case, data: st.DataObject) -> None:
    batch = parse_output(
        case.text,
        case.spec,
        tools=case.tools,
        reasoning_open=case.reasoning_open,
        prefill=case.prefill,
        truncated=case.truncated,
        end_of_turn=case.end_of_turn,
    )
    native = any("id" in c for c in case.expected.get("tool_calls", []))
    chunks = data.draw(_chunked(case.text))
    assert "".join(chunks) == case.text
    result, assembled = run_stream(case, chunks)
    check_consistent(result, assembled)
    assert comparable(result, ids=native) == comparable(batch, ids=native)
