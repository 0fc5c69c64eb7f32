"""Detection checks the builtin a signature picked against the template's own rendering.

Every vendored template's detected dialect reads the template's own rendering of a past call
(or the template renders none to check against). A template that matches a builtin's signature
but writes calls another way gets the spec derived from it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.detect import detect_builtin, detect_dialect
from tooldialect.parse import parse_output
from tooldialect.verify import reads_own_call

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


def test_the_builtin_is_kept_when_derivation_does_no_better() -> None:
    """A builtin that fails the check stays when nothing derived passes it either."""
    source = (
        "{% for m in messages %}{{ m.content }}"
        "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}</tool_call>"
        "{% endfor %}{% endfor %}"
    )
    spec = detect_dialect(source)
    assert spec.id == detect_builtin(source) == "hermes"
