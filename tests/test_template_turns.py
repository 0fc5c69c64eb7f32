"""end_of_turn_markers: what a template writes after an assistant turn, read from renders."""

from __future__ import annotations

import pytest

from conftest import read_template
from tooldialect.dialect.detect import detect_dialect
from tooldialect.frontend.request import ModelSetup, prepare_request
from tooldialect.gguf import ModelInfo
from tooldialect.prompt.template import ChatTemplate
from tooldialect.prompt.turns import end_of_turn_markers

VENDORED = [
    ("Qwen2.5-Coder-0.5B-Instruct.jinja", ("<|im_end|>",)),
    ("SmolLM2-135M-Instruct.jinja", ("<|im_end|>",)),
    ("meta-llama-Llama-3.1-8B-Instruct.jinja", ("<|eot_id|>",)),
    ("google-gemma-2-2b-it.jinja", ("<end_of_turn>",)),
    ("deepseek-ai-DeepSeek-V3.1.jinja", ("<｜end▁of▁sentence｜>",)),
    ("ibm-granite-granite-4.0.jinja", ("<|end_of_text|>",)),
    ("MiniMax-M2.jinja", ("[e~[",)),
    # gpt-oss: <|end|> also closes the analysis channel inside a turn; <|return|> is the EOS
    ("openai-gpt-oss-120b.jinja", ()),
    # Mistral ends turns with </s>: markup an answer may hold, and the EOS token anyway
    ("mistralai-Mistral-Nemo-Instruct-2407.jinja", ()),
]


@pytest.mark.parametrize(("name", "markers"), VENDORED, ids=[v[0] for v in VENDORED])
def test_vendored_templates(name: str, markers: tuple[str, ...]) -> None:
    template = ChatTemplate(read_template(name), bos_token="<s>", eos_token="</s>")
    assert end_of_turn_markers(template) == markers


_CHAT = (
    "{% for m in messages %}{{ '<' + m.role + '>' }}"
    "{% if m.reasoning_content %}{{ m.reasoning_content }}MID{% endif %}"
    "{{ m.content }}{{ END }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
INVENTED = [
    ("plain-marker", _CHAT.replace("{{ END }}", "[[/turn]]"), ("[[/turn]]",)),
    ("no-marker", _CHAT.replace("{{ END }}", ""), ()),
    (
        "marker-only-on-the-last-turn",
        _CHAT.replace("{{ END }}", "{% if loop.last %}<|done|>{% endif %}"),
        (),
    ),
    (
        "marker-also-inside-a-turn",
        _CHAT.replace("{{ END }}", "<|end|>").replace("MID", "<|end|>"),
        (),
    ),
    ("html-like", _CHAT.replace("{{ END }}", "</p>"), ()),
    (
        "raises-on-assistant",
        "{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('no') }}"
        "{% endif %}{% endfor %}",
        (),
    ),
]


@pytest.mark.parametrize(
    ("source", "markers"), [i[1:] for i in INVENTED], ids=[i[0] for i in INVENTED]
)
def test_invented_templates(source: str, markers: tuple[str, ...]) -> None:
    assert end_of_turn_markers(ChatTemplate(source)) == markers


def test_prepared_requests_carry_the_markers_as_stop_strings() -> None:
    source = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    setup = ModelSetup(
        info=ModelInfo(name="t"),
        template=ChatTemplate(source),
        template_origin="user",
        spec=detect_dialect(source),
        engine=None,
    )
    request = prepare_request(setup, messages=[{"role": "user", "content": "hi"}])
    assert request.stop == ("<|im_end|>",)
