"""Detection checks the builtin a signature picked against the template's own rendering.

Every vendored template's detected dialect reads the template's own rendering of a past call
(or the template renders none to check against). A template that matches a builtin's signature
but writes calls another way gets the spec derived from it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.detect import detect_builtin
from tooldialect.dialect.ports import Agreement
from tooldialect.parse import parse_output
from tooldialect.verify import check_own_call, detect_dialect, explain_detection, reads_own_call

FIXTURES = Path(__file__).parent.parent / "fixtures" / "templates"
VENDORED = sorted(p.name for p in FIXTURES.glob("*.jinja"))
# templates with no assistant tool_calls rendering: nothing to check against
UNCHECKABLE = {
    "HuggingFaceTB-SmolLM3-3B.jinja",
    "LFM2-8B-A1B.jinja",
    "SmolLM2-135M-Instruct.jinja",
    "google-gemma-2-2b-it.jinja",
    "ibm-granite-granite-3.3-2B-Instruct.jinja",
    "llama-cpp-lfm2.jinja",
    "llama-cpp-rwkv-world.jinja",
    "microsoft-Phi-3.5-mini-instruct.jinja",
}
DECOY = FIXTURES / "invented" / "signature-decoy.jinja"


@pytest.mark.parametrize("name", VENDORED, ids=VENDORED)
def test_detected_dialect_reads_the_templates_own_call(name: str) -> None:
    source = (FIXTURES / name).read_text(encoding="utf-8")
    spec = detect_dialect(source)
    expected = None if name in UNCHECKABLE else True
    assert reads_own_call(spec, source) is expected


def test_a_signature_match_that_writes_calls_otherwise_gets_the_derived_spec() -> None:
    source = DECOY.read_text(encoding="utf-8")
    picked = detect_builtin(source)
    assert picked is not None  # the decoy does match a builtin's signature...
    assert reads_own_call(get_builtin(picked), source) is False  # ...which cannot read it
    spec = detect_dialect(source)
    assert spec.origin == "derived"
    assert reads_own_call(spec, source) is True
    text = '<function_calls>[{"tool": "f", "tool_input": {"a": 1}}]</function_calls>'
    out = parse_output(text, spec)
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("f", {"a": 1})]


def test_a_builtin_that_reads_no_call_is_never_kept() -> None:
    """A builtin picked by signature that reads none of the template's calls is not kept, even
    when nothing derived reads them either: the polyfill, with a warning naming the call text."""
    source = (
        "{% for m in messages %}{{ m.content }}"
        "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}</tool_call>"
        "{% endfor %}{% endfor %}"
    )
    found = explain_detection(source)
    assert detect_builtin(source) == "hermes" and found.tried == "hermes"
    assert found.chosen == "polyfill" and found.spec.id == "polyfill-json"
    assert "reads no call from the template's render of the probe call" in found.reason
    assert "<tool_call>zz_probe_fn</tool_call>" in found.warning


# --- issue 17: every template, detection and derivation alone --------------------------------

INVENTED_DIR = FIXTURES / "invented"
ALL = [FIXTURES / n for n in VENDORED] + sorted(INVENTED_DIR.glob("*.jinja"))
# templates whose calls derivation alone cannot read, and why (strict xfails)
DERIVATION_DEFEATS: dict[str, str] = {}


def _renders_calls(path: Path) -> bool:
    return reads_own_call(get_builtin("hermes"), path.read_text(encoding="utf-8")) is not None


RENDERING = [p for p in ALL if _renders_calls(p)]


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_detection_reads_every_templates_own_call_exactly(path: Path) -> None:
    """Detection verified by agreement: right calls, nothing left over as content."""
    source = path.read_text(encoding="utf-8")
    found = explain_detection(source)
    verdict = check_own_call(found.spec, source)
    assert verdict.ok is (True if path in RENDERING else None), verdict.reason


def _derivation_cases() -> list[object]:
    return [
        pytest.param(
            p,
            id=p.name,
            marks=[pytest.mark.xfail(reason=DERIVATION_DEFEATS[p.name], strict=True)]
            if p.name in DERIVATION_DEFEATS
            else [],
        )
        for p in RENDERING
    ]


@pytest.mark.parametrize("path", _derivation_cases())
def test_derivation_alone_reads_every_templates_own_call(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    spec = detect_dialect(source, builtins=False)
    assert spec.origin == "derived"
    verdict = check_own_call(spec, source)
    assert verdict.ok is True, verdict.reason


def test_derivation_only_count() -> None:
    """The figure docs/derivation.md reports (every template that renders calls but one)."""
    agree = [
        p.name
        for p in RENDERING
        if check_own_call(
            detect_dialect(p.read_text(encoding="utf-8"), builtins=False),
            p.read_text(encoding="utf-8"),
        ).ok
    ]
    assert sorted(set(p.name for p in RENDERING) - set(agree)) == sorted(DERIVATION_DEFEATS)
    assert len(RENDERING) >= 80


@pytest.mark.parametrize(
    "name",
    ["ns-prefixed-invoke.jinja", "renamed-section.jinja"],
)
def test_a_builtin_that_cannot_read_the_template_is_rejected_and_reported(name: str) -> None:
    source = (INVENTED_DIR / name).read_text(encoding="utf-8")
    found = explain_detection(source)
    assert found.tried == "hermes"  # the <tool_call> signature matched...
    assert found.tried_agrees is False  # ...but hermes cannot read the template's own call
    assert found.chosen == "derived" and found.derived_agrees is True
    assert found.reason.startswith("rejected:")
    assert found.summary()["tried_builtin"] == "hermes"


def test_renamed_section_is_rejected_for_what_it_leaves_as_content() -> None:
    source = (INVENTED_DIR / "renamed-section.jinja").read_text(encoding="utf-8")
    verdict = check_own_call(get_builtin("hermes"), source)
    assert verdict.ok is False and "<tool_batch>" in verdict.reason


def test_where_builtin_and_derivation_both_agree_the_builtin_is_kept() -> None:
    source = (FIXTURES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")
    assert check_own_call(detect_dialect(source, builtins=False), source).ok is True
    found = explain_detection(source)
    assert found.chosen == "builtin" and found.spec.id == "hermes" and found.tried_agrees


def test_a_custom_check_is_used() -> None:
    """dialect/ only knows the Protocol: a caller's check decides."""
    source = (FIXTURES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")

    def refuse(spec: object, template_source: str, **_: object) -> Agreement:
        return Agreement(False, "refused by the caller")

    found = explain_detection(source, check=refuse)
    assert found.tried == "hermes" and found.tried_agrees is False
    assert "refused by the caller" in found.reason


def test_a_builtin_whose_channel_rules_do_not_fit_is_rejected() -> None:
    """Hunyuan-like ``<tool_calls>[...]</tool_calls>`` matches another family's signature, and
    that builtin reads the call, but leaves the template's ``<answer>`` channel around a plain
    answer: detection derives instead."""
    source = (INVENTED_DIR / "like-hunyuan-a13b.jinja").read_text(encoding="utf-8")
    found = explain_detection(source)
    assert found.tried is not None and found.tried_agrees is False
    assert "<answer>" in check_own_call(get_builtin(found.tried), source).reason
    assert found.chosen == "derived" and found.derived_agrees is True
    text = "<think>\n\n</think>\n<answer>\nHello.\n</answer>"
    assert parse_output(text, found.spec).content == "Hello."


def test_a_template_writing_the_call_id_for_the_name_is_probed_with_named_ids() -> None:
    """Kimi K2 Thinking writes ``tool_call.id`` where its models write ``functions.NAME:IDX``."""
    source = (INVENTED_DIR / "like-kimi-k2-thinking.jinja").read_text(encoding="utf-8")
    spec = detect_dialect(source, builtins=False)
    assert spec.origin == "derived" and check_own_call(spec, source).ok is True
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
        '{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'
    )
    out = parse_output(text, spec)
    assert [(c.name, c.arguments, c.id) for c in out.tool_calls] == [
        ("f", {"a": 1}, "functions.f:0")
    ]
