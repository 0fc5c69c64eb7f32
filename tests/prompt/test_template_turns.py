"""end_of_turn_markers: what a template writes after an assistant turn, read from renders."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeEngine, fake_handler
from tooldialect.frontend.pipeline import FrontEnd
from tooldialect.frontend.request import ModelSetup
from tooldialect.gguf import ModelInfo
from tooldialect.prompt.template import ChatTemplate
from tooldialect.prompt.turns import end_of_turn_markers
from tooldialect.verify import detect_dialect

VENDORED = [
    ("Qwen2.5-Coder-0.5B-Instruct.jinja", ("<|im_end|>",)),
    ("SmolLM2-135M-Instruct.jinja", ("<|im_end|>",)),
    ("meta-llama-Llama-3.1-8B-Instruct.jinja", ("<|eot_id|>",)),
    ("google-gemma-2-2b-it.jinja", ("<end_of_turn>",)),
    ("deepseek-ai-DeepSeek-V3.1.jinja", ("<\uff5cend\u2581of\u2581sentence\uff5c>",)),
    ("ibm-granite-granite-4.0.jinja", ("<|end_of_text|>",)),
    ("MiniMax-M2.jinja", ("[e~[",)),
    # GLM closes no assistant turn: the next turn's header ends it (after calls, the tool's)
    ("GLM-4.6.jinja", ("<|user|>", "<|observation|>")),
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
        "unclosed-turns-special-headers",
        _CHAT.replace("'<' + m.role + '>'", "'<|' + m.role + '|>'").replace("{{ END }}", ""),
        ("<|user|>", "<|tool|>"),
    ),
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
        engine=FakeEngine(),
    )
    request = FrontEnd(adapter="test").prepare_from(
        setup, [{"role": "user", "content": "hi"}], {}, where="test"
    )
    assert request.stop == ("<|im_end|>",)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_the_marker_written_as_text_ends_the_reply_and_stays_out_of_content(stream: bool) -> None:
    """The engine gets the marker as a stop string, whatever the caller's own stops."""
    template = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    script = ["The answer", " is 4.<|im", "_end|>\n<|im_start|>user\nmore"]
    handler, llama, engine = fake_handler(template, script)
    reply: Any = handler(
        llama=llama, messages=[{"role": "user", "content": "2+2?"}], stop=["###"], stream=stream
    )
    if stream:
        content = "".join(c["choices"][0]["delta"].get("content") or "" for c in reply)
    else:
        content = reply["choices"][0]["message"]["content"]
    assert content == "The answer is 4."
    assert {"###", "<|im_end|>"} <= set(engine.jobs[0].stop)
