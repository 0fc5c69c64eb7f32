"""``tooldialect inspect``: header-only summary of a GGUF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TEMPLATES as FIXTURES
from tooldialect.apps.cli import main


@pytest.mark.model
def test_inspect_prints_template_origin_and_dialect(
    smollm2_path: Path, gemma3_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "--json", str(smollm2_path)]) == 0
    smol = json.loads(capsys.readouterr().out)
    assert smol["chat_template"] == "gguf" and smol["dialect"]["polyfill"] is not None
    # the decision record: SmolLM2's template matches no signature and derives nothing
    assert smol["detection"]["chosen"] == "polyfill" and smol["detection"]["tried_builtin"] is None
    assert main(["inspect", "--json", str(gemma3_path)]) == 0
    gemma = json.loads(capsys.readouterr().out)
    assert gemma["architecture"] == "gemma3"
    assert gemma["chat_template"] == "fallback:gemma3.jinja"


def test_inspect_missing_file_fails_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "/nonexistent/model.gguf"]) == 1
    assert "nonexistent" in capsys.readouterr().err


def test_inspect_a_template_reports_conformance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", str(FIXTURES / "Qwen2.5-Coder-0.5B-Instruct.jinja")]) == 0
    qwen = json.loads(capsys.readouterr().out)
    assert qwen["conformance"] == {
        "verdict": "reads",
        "reason": "",
        "chosen": "builtin",
        "dialect": "hermes",
    }
    assert qwen["conformance_derived_only"]["verdict"] == "reads"


def test_inspect_a_template_without_tools_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", str(FIXTURES / "google-gemma-2-2b-it.jinja")]) == 0
    gemma = json.loads(capsys.readouterr().out)
    assert gemma["conformance"]["verdict"] == "no-tools"
    assert gemma["conformance"]["reason"] == "the template renders neither tools nor a past call"


def test_inspect_prints_a_short_summary_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(FIXTURES / "Qwen2.5-Coder-0.5B-Instruct.jinja")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 20
    for line in (
        "dialect:     hermes (builtin; origin builtin)",
        "why:         reads the template's own call",
        "triggers:    '<tool_call>'",
        "reasoning:   '<think>' ... '</think>'",
        "example:     <tool_call>\n"
        '             {"name": "get_weather", "arguments": {"city": "Paris"}}',
        "conformance: reads",
        "(--json for everything)",
    ):
        assert line in out


def test_help_describes_the_program_not_the_inspect_module(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "Tool calling for local GGUF models" in out
    assert "Reads only the GGUF header" not in out and "models" in out


def test_models_prints_where_the_test_models_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLDIALECT_MODELS", str(tmp_path))
    (tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").write_bytes(b"")
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  [ok]" in out
    assert f"{tmp_path}/SmolLM2-135M-Instruct.Q4_1.gguf  [missing: make demo]" in out
    # make demo does not fetch the 1.5B model: its line names the command that does
    qwen15 = f"{tmp_path}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert f"{qwen15}  [missing: .venv/bin/python scripts/fetch_models.py qwen15]" in out


def test_model_path_of_a_model_not_fetched_names_the_command_that_fetches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooldialect import ModelMetadataError, ToolSpecError, model_path

    monkeypatch.setenv("TOOLDIALECT_MODELS", str(tmp_path))
    with pytest.raises(ModelMetadataError, match=r"'qwen15'.*`\.venv/bin/python scripts/fetch"):
        model_path("qwen15")
    with pytest.raises(ModelMetadataError, match=r"'qwen' is not fetched yet.*`make demo`"):
        model_path("qwen")
    (tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").write_bytes(b"")
    assert model_path("qwen") == str(tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    with pytest.raises(ToolSpecError, match="'llama'; choose from"):
        model_path("llama")


def test_chat_flags_set_the_agents_loop_limit_and_answer_at_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("llama_cpp")
    from tooldialect.apps import chat
    from tooldialect.errors import ToolSpecError

    made: list[dict[str, object]] = []

    def agent(llm: object, **options: object) -> None:
        made.append(options)
        raise ToolSpecError("recorded")  # run_chat's one-line exit: no model, no stdin read

    monkeypatch.setattr("llama_cpp.Llama", lambda **options: object())
    monkeypatch.setattr(chat, "Agent", agent)
    assert main(["chat", "m.gguf"]) == 1
    assert main(["chat", "m.gguf", "--loop-limit", "1", "--no-answer-at-limit"]) == 1
    assert main(["chat", "m.gguf", "--loop_limit", "0"]) == 1
    assert [(o["loop_limit"], o["answer_at_limit"]) for o in made] == [
        (3, True),  # chat's defaults: the Agent's loop limit, and an answer at the step limit
        (1, False),
        (None, True),  # 0: no limit
    ]
    assert "tooldialect chat: recorded" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["chat", "m.gguf", "--loop-limit", "-1"])
    assert "argument --loop-limit/--loop_limit: invalid count value: '-1'" in (
        capsys.readouterr().err
    )


def test_chat_takes_both_spellings_and_every_option_has_help() -> None:
    import argparse

    from tooldialect.apps.chat import configure_parser

    parser = argparse.ArgumentParser()
    configure_parser(parser)
    for flag in ("--n-ctx", "--n_ctx"):
        assert parser.parse_args(["m.gguf", flag, "1024"]).n_ctx == 1024
    assert parser.parse_args(["m.gguf", "--max_steps", "2"]).max_steps == 2
    assert parser.parse_args(["m.gguf"]).verbose is False
    assert all(a.help for a in parser._actions)


def test_serve_takes_both_spellings_and_is_quiet_unless_verbose() -> None:
    pytest.importorskip("llama_cpp.server.app")
    from tooldialect.apps.announce import with_known_spelling
    from tooldialect.apps.serve import build_parser, read_settings

    parser = build_parser()
    known = {o for a in parser._actions for o in a.option_strings}
    assert all(a.help for a in parser._actions)
    for argv in (["--n-ctx", "1024"], ["--n_ctx", "1024"], ["--n-ctx=1024"]):
        args = parser.parse_args(with_known_spelling(["--model", "m.gguf", *argv], known))
        _, (model,) = read_settings(args)
        assert model.n_ctx == 1024 and model.verbose is False
    _, (model,) = read_settings(parser.parse_args(["--model", "m.gguf", "--verbose"]))
    assert model.verbose is True


def test_the_start_line_names_model_dialect_and_why() -> None:
    from tooldialect.apps.announce import model_line

    assert model_line("/nonexistent/m.gguf").startswith("model: m.gguf  dialect: unknown (")


@pytest.mark.model
def test_the_start_line_of_a_real_model(qwen_path: Path) -> None:
    from tooldialect.apps.announce import model_line

    line = model_line(str(qwen_path))
    assert line == (
        "model: qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  dialect: hermes "
        "(builtin: reads the template's own call)"
    )


def serve(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """``tooldialect serve ARGV``'s exit status and stderr lines (it must stop before loading)."""
    pytest.importorskip("llama_cpp.server.app")
    status = main(["serve", *argv])
    return status, capsys.readouterr().err.splitlines()


def test_serve_without_a_model_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, err = serve([], capsys)
    assert status == 2
    assert err == [
        "tooldialect serve: --model is required: the path of a .gguf file (or --config_file "
        "FILE); `tooldialect models` lists the test models"
    ]


def test_serve_with_a_bad_model_path_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLDIALECT_MODELS", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)
    status, err = serve(["--model", "nothere.gguf"], capsys)
    assert (status, err) == (
        1,
        [
            "tooldialect serve: no model file at 'nothere.gguf': pass the path of a .gguf file; "
            "`tooldialect models` lists the test models"
        ],
    )
    # a test model's bare file name (as `tooldialect models` lists them): the full path is named
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "qwen.gguf").write_bytes(b"GGUF")
    status, err = serve(["--model", "qwen.gguf"], capsys)
    fetched = str(tmp_path / "models" / "qwen.gguf")
    assert (status, err) == (
        1,
        [
            f"tooldialect serve: no model file at 'qwen.gguf': the test model of that name is "
            f"{fetched!r}"
        ],
    )
    (tmp_path / "notes.gguf").write_text("not a model", encoding="utf-8")
    status, err = serve(["--model", "notes.gguf"], capsys)
    assert status == 1 and len(err) == 1
    assert err[0].startswith("tooldialect serve: cannot read GGUF metadata from 'notes.gguf'")


def test_serve_says_a_bad_option_value_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "serve.json"
    config.write_text('{"models": [{"model": "m.gguf", "n_ctx": "many"}]}', encoding="utf-8")
    status, err = serve(["--config_file", str(config)], capsys)
    assert status == 1 and len(err) == 1
    assert err[0].startswith("tooldialect serve: --models.0.n_ctx: Input should be a valid int")
    with pytest.raises(SystemExit) as exited:  # argparse's own: a short usage line, the error
        main(["serve", "--model", "m.gguf", "--n_ctx", "many"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "usage: tooldialect serve --model FILE.gguf [options]  (--help lists them)",
        "tooldialect serve: error: argument --n_ctx: invalid int value: 'many'",
    ]


def test_serve_help_says_verbose_is_off_by_default() -> None:
    pytest.importorskip("llama_cpp.server.app")
    from tooldialect.apps.serve import build_parser

    helps = {a.dest: a.help for a in build_parser()._actions}
    assert helps["verbose"] == "print llama.cpp's loading output (hidden unless --verbose is given)"
    assert "required" in str(helps["model"])
