"""``detect_dialect`` takes a ``ChatTemplate`` as well as source text (issue 29 s2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldialect import ChatTemplate, TemplateError, detect_dialect

QWEN = Path(__file__).parents[1] / "fixtures" / "templates" / "Qwen2.5-Coder-0.5B-Instruct.jinja"


def test_a_chat_template_object_is_detected_as_its_source() -> None:
    source = QWEN.read_text(encoding="utf-8")
    template = ChatTemplate(source, eos_token="<|im_end|>")
    assert detect_dialect(template) == detect_dialect(source, eos_token="<|im_end|>")
    assert detect_dialect(template).id == "hermes"


def test_anything_else_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="got int"):
        detect_dialect(5)  # type: ignore[arg-type]
