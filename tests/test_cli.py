"""``tooldialect inspect``: header-only summary of a GGUF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooldialect.apps.cli import main


@pytest.mark.model
def test_inspect_prints_template_origin_and_dialect(
    smollm2_path: Path, gemma3_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(smollm2_path)]) == 0
    smol = json.loads(capsys.readouterr().out)
    assert smol["chat_template"] == "gguf" and smol["dialect"]["polyfill"] is not None
    # the decision record: SmolLM2's template matches no signature and derives nothing
    assert smol["detection"]["chosen"] == "polyfill" and smol["detection"]["tried_builtin"] is None
    assert main(["inspect", str(gemma3_path)]) == 0
    gemma = json.loads(capsys.readouterr().out)
    assert gemma["architecture"] == "gemma3"
    assert gemma["chat_template"] == "fallback:gemma3.jinja"


def test_inspect_missing_file_fails_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "/nonexistent/model.gguf"]) == 1
    assert "nonexistent" in capsys.readouterr().err


FIXTURES = Path(__file__).parent / "fixtures" / "templates"


def test_inspect_a_template_reports_conformance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(FIXTURES / "Qwen2.5-Coder-0.5B-Instruct.jinja")]) == 0
    qwen = json.loads(capsys.readouterr().out)
    assert qwen["conformance"] == {
        "verdict": "reads",
        "reason": "",
        "chosen": "builtin",
        "dialect": "hermes",
    }
    assert qwen["conformance_derived_only"]["verdict"] == "reads"


def test_inspect_a_template_without_tools_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(FIXTURES / "google-gemma-2-2b-it.jinja")]) == 0
    gemma = json.loads(capsys.readouterr().out)
    assert gemma["conformance"]["verdict"] == "no-tools"
    assert gemma["conformance"]["reason"] == "the template renders neither tools nor a past call"
