"""Shared by the parser tests: fixture discovery and delta re-assembly."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import ParsedOutput, StreamParser

OUTPUTS = Path(__file__).parent.parent / "fixtures" / "outputs"


@dataclass
class Case:
    id: str
    spec: DialectSpec
    text: str
    expected: dict[str, Any]
    tools: list[dict[str, Any]] | None = None
    reasoning_open: bool = False
    prefill: str = ""
    truncated: bool = False
    end_of_turn: tuple[str, ...] = ()


def _spec(value: Any) -> DialectSpec:
    if isinstance(value, str):
        return DialectSpec.builtin(value)
    return DialectSpec.model_validate(value)


def load_cases() -> list[Case]:
    """Every case of every ``*.json`` under tests/fixtures/outputs (see its README)."""
    out: list[Case] = []
    for path in sorted(OUTPUTS.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        stem = path.relative_to(OUTPUTS).with_suffix("").as_posix()
        entries = data.get("cases") or [data]
        for i, entry in enumerate(entries):
            merged = {k: v for k, v in data.items() if k != "cases"} | entry
            name = merged.get("name", str(i)) if "cases" in data else ""
            out.append(
                Case(
                    id=f"{stem}/{name}" if name else stem,
                    spec=_spec(merged["spec"]),
                    text=merged["text"],
                    expected=merged["expected"],
                    tools=merged.get("tools"),
                    reasoning_open=bool(merged.get("reasoning_open", False)),
                    prefill=str(merged.get("prefill", "")),
                    truncated=bool(merged.get("truncated", False)),
                    end_of_turn=tuple(merged.get("end_of_turn", ())),
                )
            )
    return out


@dataclass
class Assembled:
    """What a client re-builds from the deltas."""

    content: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)


def assemble(deltas: list[dict[str, Any]]) -> Assembled:
    """Re-build content, reasoning and calls from deltas, checking their OpenAI shape."""
    out = Assembled()
    for d in deltas:
        assert len(d) == 1, d
        if "content" in d:
            assert isinstance(d["content"], str) and d["content"], d
            out.content += d["content"]
        elif "reasoning_content" in d:
            assert isinstance(d["reasoning_content"], str) and d["reasoning_content"], d
            out.reasoning += d["reasoning_content"]
        else:
            (tc,) = d["tool_calls"]
            index = tc["index"]
            if "id" in tc:
                assert index == len(out.calls), f"indices not contiguous: {d}"
                assert tc["type"] == "function" and tc["function"]["arguments"] == "", d
                assert tc["function"]["name"], d
                out.calls.append({"id": tc["id"], "name": tc["function"]["name"], "arguments": ""})
            else:
                assert set(tc) == {"index", "function"} and set(tc["function"]) == {"arguments"}, d
                assert index == len(out.calls) - 1, f"fragment for a call that is not the last: {d}"
                assert tc["function"]["arguments"], d
                out.calls[index]["arguments"] += tc["function"]["arguments"]
    return out


def run_stream(case: Case, chunks: list[str]) -> tuple[ParsedOutput, Assembled]:
    parser = StreamParser(
        case.spec,
        tools=case.tools,
        reasoning_open=case.reasoning_open,
        prefill=case.prefill,
        end_of_turn=case.end_of_turn,
    )
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas += parser.feed(chunk)
    deltas += parser.close(truncated=case.truncated)
    return parser.result, assemble(deltas)


def comparable(result: ParsedOutput, *, ids: bool) -> tuple[Any, ...]:
    """A result without generated ids (they are random), for comparing two parses."""
    return (
        result.content,
        result.reasoning_content,
        [
            (c.index, c.name, c.arguments, c.arguments_json, c.id if ids else None)
            for c in result.tool_calls
        ],
    )


def check_consistent(result: ParsedOutput, assembled: Assembled) -> None:
    """Deltas re-assemble exactly the stream's own result."""
    assert assembled.content == (result.content or "")
    assert assembled.reasoning == (result.reasoning_content or "")
    assert [(c["id"], c["name"], c["arguments"]) for c in assembled.calls] == [
        (c.id, c.name, c.arguments_json) for c in result.tool_calls
    ]
    for c in result.tool_calls:
        if not c.truncated:
            assert json.loads(c.arguments_json) == c.arguments
