"""``tooldialect chat`` and the example agent's tools (the chat test pipes stdin to a model)."""

from __future__ import annotations

import importlib.util
import io
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT
from tooldialect import AgentEvent, CallFinished, CallStarted, TextDelta, Tool, ToolSpecError
from tooldialect.apps.chat import Renderer, load_tool

EXAMPLE = ROOT / "examples" / "agent.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the example's tools ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1234 * 5678", 7006652),
        ("(17 * 23) / 4", 97.75),
        ("2 ^ 10", 1024),
        ("-3 + 4 % 3", -2),
        ("sqrt(16) + round(pi, 2)", 7.14),
        ("max(1, 7, 3) // 2", 3),
    ],
    ids=["product", "division", "caret-power", "unary-mod", "functions", "floor-div"],
)
def test_calculator(expression: str, value: float) -> None:
    assert math.isclose(example().evaluate(expression), value)


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('echo hi')",
        "open('/etc/passwd')",
        "(1).__class__",
        "9 ** 9999",
        "x + 1",
        "1 +",
        "'a' * 3",
        "1" * 201,
    ],
    ids=["import", "open", "attribute", "huge-power", "name", "syntax", "string", "too-long"],
)
def test_calculator_refuses_what_is_not_arithmetic(expression: str) -> None:
    with pytest.raises(ValueError):
        example().evaluate(expression)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"value": 5, "from_unit": "mile", "to_unit": "kilometer"}, "5 mile = 8.04672 kilometer"),
        (
            {"value": 100, "from_unit": "celsius", "to_unit": "fahrenheit"},
            "100 celsius = 212 fahrenheit",
        ),
        ({"value": 0, "from_unit": "kelvin", "to_unit": "celsius"}, "0 kelvin = -273.1 celsius"),
        ({"value": 2, "from_unit": "pound", "to_unit": "gram"}, "2 pound = 907.185 gram"),
    ],
    ids=["length", "temperature", "kelvin", "mass"],
)
def test_unit_converter(args: dict[str, Any], text: str) -> None:
    assert example().convert_units.run(args) == text


def test_unit_converter_refuses_mixed_dimensions() -> None:
    with pytest.raises(ValueError, match="different things"):
        example().convert_units.run({"value": 1, "from_unit": "kilogram", "to_unit": "meter"})


def test_file_lister_stays_in_its_folder() -> None:
    ex = example()
    listing = ex.list_files.run({"pattern": "**/*.md"})
    assert "notes/todo.md" in listing and "report.md" in listing and "csv" not in listing
    assert ex.list_files.run({"pattern": "*.pdf"}) == "no files match '*.pdf'"
    with pytest.raises(ValueError, match="inside the workspace"):
        ex.list_files.run({"pattern": "../*"})


# ---- chat ------------------------------------------------------------------------------------


def test_load_tool_from_a_module_and_a_file(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "mytools.py").write_text(
        "def shout(text: str) -> str:\n    '''Upper-case text.'''\n    return text.upper()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_tool("mytools:shout")
    assert isinstance(loaded, Tool) and loaded.run({"text": "hi"}) == "HI"
    from_file = load_tool(f"{EXAMPLE}:calculate")
    assert from_file.name == "calculate" and from_file.run({"expression": "2*3"}) == "2*3 = 6"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nocolon", ["MODULE:FUNCTION"]),
        ("no_such_module_xyz:f", ["cannot import", "PYTHONPATH"]),
        ("json:nothing_here", ["no attribute 'nothing_here'"]),
        ("json:dumps", ["no type annotation"]),
        ("/nonexistent/file.py:f", ["no Python file"]),
    ],
    ids=["no-colon", "no-module", "no-attribute", "untyped", "no-file"],
)
def test_load_tool_errors(spec: str, words: list[str]) -> None:
    with pytest.raises(ToolSpecError) as err:
        load_tool(spec)
    for word in words:
        assert word in str(err.value)


def test_renderer_shows_calls_and_results() -> None:
    out = io.StringIO()
    renderer = Renderer(out)
    events: list[AgentEvent] = [
        TextDelta(1, "Let me check."),
        CallStarted(1, 0, "c1", "get_weather"),
        CallFinished(1, "c1", "get_weather", '{"city": "Paris"}', "sunny"),
        CallStarted(1, 1, "c2", "nope"),
        CallFinished(1, "c2", "nope", "{}", "Error: no tool", error="unknown_tool"),
    ]
    for event in events:
        renderer.show(event)
    text = out.getvalue()
    assert "\x1b[" not in text  # not a terminal: no colours
    assert "Let me check." in text and "-> get_weather(" in text and "= sunny" in text
    assert "unknown_tool: Error: no tool" in text


def test_chat_with_a_missing_model_fails_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    from tooldialect.apps.cli import main

    assert main(["chat", "/nonexistent/model.gguf", "--tools", "json:nothing"]) == 1
    assert "nothing" in capsys.readouterr().err


@pytest.mark.model
def test_chat_streams_calls_and_results_from_piped_stdin(qwen_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tooldialect.apps.cli",
            "chat",
            str(qwen_path),
            "--tools",
            f"{EXAMPLE}:calculate",
            f"{EXAMPLE}:convert_units",
            "--max-steps",
            "2",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            "--n-threads",
            "2",
        ],
        input="What is 1234 * 5678? Use the calculator.\n/exit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tools: calculate, convert_units" in proc.stderr
    out = proc.stdout
    assert "you> What is 1234 * 5678?" in out
    assert "-> calculate(" in out
    assert "= 1234 * 5678 = 7006652" in out or "7006652" in out


def test_reset_confirms(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from tooldialect.apps.chat import _loop as loop

    class NoAgent:
        tools = "none"

        def stream(self, messages: Any) -> Any:
            raise AssertionError("no user message was sent")

    stdin = io.StringIO("/reset\n/exit\n")
    assert loop(NoAgent(), argparse.Namespace(model="m.gguf"), stdin) == 0  # type: ignore[arg-type]
    assert "[conversation reset]" in capsys.readouterr().out
