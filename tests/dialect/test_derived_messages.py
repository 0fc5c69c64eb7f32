"""Header-addressed messages (harmony-like templates) derived from the template and read back.

Derivation learns the recipient prefix, the body marker, the end markers, the answer recipient
(from a plain answer turn) and the reasoning recipient or channel (from a past turn with
``reasoning_content`` or ``thinking``). The rows are written as a model of each invented family
would write them, with the variants real models write: whitespace, a missing end marker, several
messages and calls per reply, prose, a header without its start marker, a built-in recipient.
Batch, random chunks and one-character chunks must agree on content, reasoning and calls.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.parse.result import ParsedOutput
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import detect_dialect

INVENTED = Path(__file__).parent.parent / "fixtures" / "templates" / "invented"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
    for name in ("get_weather", "get_time")
]
W, T = "get_weather", "get_time"
PARIS = {"city": "Paris", "days": 2}
PJ = '{"city": "Paris", "days": 2}'

_Calls = list[tuple[str, dict[str, Any]]]
# (template, output, calls, content, reasoning)
ROWS: list[tuple[str, str, _Calls, str | None, str | None]] = [
    # Dispatch: reasoning to=analysis, answer to=user, calls to=NAME
    (
        "recipient-reasoning.jinja",
        " to=analysis<|body|>Need the weather.<|end|>"
        f"<|begin|>assistant to=get_weather<|body|>{PJ}<|eom|>",
        [(W, PARIS)],
        None,
        "Need the weather.",
    ),
    (
        "recipient-reasoning.jinja",
        " to=analysis <|body|> Need it. <|end|>\n"
        f"<|begin|>assistant  to=get_weather <|body|> {PJ} <|eom|>\n",
        [(W, PARIS)],
        None,
        "Need it.",
    ),
    (  # no <|end|>: the next message's start ends the reasoning; the call ends with the text
        "recipient-reasoning.jinja",
        f" to=analysis<|body|>Need it.<|begin|>assistant to=get_weather<|body|>{PJ}",
        [(W, PARIS)],
        None,
        "Need it.",
    ),
    (
        "recipient-reasoning.jinja",
        ' to=get_weather<|body|>{"city": "Paris"}<|eom|><|begin|>assistant to=get_time<|body|>'
        '{"city": "Oslo"}<|eom|><|begin|>assistant to=user<|body|>Checking both.<|eot|>',
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        "Checking both.",
        None,
    ),
    ("recipient-reasoning.jinja", "It is sunny in Paris.", [], "It is sunny in Paris.", None),
    (
        "recipient-reasoning.jinja",
        f" to=user<|body|>Let me check.<|eot|><|begin|>assistant to=get_weather<|body|>{PJ}<|eom|>",
        [(W, PARIS)],
        "Let me check.",
        None,
    ),
    (  # a header written without its start marker after an end
        "recipient-reasoning.jinja",
        f" to=analysis<|body|>Hmm.<|end|> to=get_weather<|body|>{PJ}<|eom|>",
        [(W, PARIS)],
        None,
        "Hmm.",
    ),
    ("recipient-reasoning.jinja", " to=user<|body|>Done.<|eom|>", [], "Done.", None),
    (  # arguments that are not JSON: no call, the body is content
        "recipient-reasoning.jinja",
        ' to=get_weather<|body|>{"city": Paris}<|eom|>',
        [],
        '{"city": Paris}',
        None,
    ),
    (  # a recipient that is no offered tool: the model's own tool use, reasoning, named
        "recipient-reasoning.jinja",
        " to=python<|body|>print(1)<|eom|><|begin|>assistant to=user<|body|>1<|eot|>",
        [],
        "1",
        "to=python print(1)",
    ),
    (  # two answer messages: one line each
        "recipient-reasoning.jinja",
        " to=user<|body|>First.<|eot|><|begin|>assistant to=user<|body|>Second.<|eot|>",
        [],
        "First.\nSecond.",
        None,
    ),
    # Postbox: @RECIPIENT, `thinking` field, @functions.NAME, one end marker for all
    (
        "recipient-thinking-field.jinja",
        " @think<|msg|>User wants weather.<|fin|>\n"
        f"<|hdr|>assistant @functions.get_weather<|msg|>{PJ}<|fin|>\n"
        '<|hdr|>assistant @functions.get_time<|msg|>{"city": "Oslo"}<|fin|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        None,
        "User wants weather.",
    ),
    ("recipient-thinking-field.jinja", "@user<|msg|>Hello!", [], "Hello!", None),
    (  # a namespaced recipient is a call even of a tool not offered
        "recipient-thinking-field.jinja",
        ' @functions.lookup<|msg|>{"q": "x"}<|fin|>',
        [("lookup", {"q": "x"})],
        None,
        None,
    ),
    # Semaphore: recipient before the channel; reasoning is a channel
    (
        "recipient-before-channel.jinja",
        f"<|ch|>think<|m|>Paris weather.<|e|><|s|>assistant to=get_weather<|ch|>tool<|m|>{PJ}<|c|>",
        [(W, PARIS)],
        None,
        "Paris weather.",
    ),
    (  # the channel before the recipient
        "recipient-before-channel.jinja",
        f"<|ch|>tool to=get_weather<|m|>{PJ}<|c|>",
        [(W, PARIS)],
        None,
        None,
    ),
    ("recipient-before-channel.jinja", "<|ch|>final<|m|>Sunny.<|e|>", [], "Sunny.", None),
    (  # a channel token in prose that opens no header: text, verbatim
        "recipient-before-channel.jinja",
        "Use <|ch|>final markers.",
        [],
        "Use <|ch|>final markers.",
        None,
    ),
    # Wire: channel, namespaced recipient, content type
    (
        "recipient-constrain.jinja",
        "<|lane|>scratch<|txt|>Look up.<|stop|><|hd|>assistant<|lane|>work to=fn.get_weather "
        f"<|fmt|>json<|txt|>{PJ}<|ret|>",
        [(W, PARIS)],
        None,
        "Look up.",
    ),
    (  # a content type on the final lane: the answer
        "recipient-constrain.jinja",
        '<|lane|>final <|fmt|>json<|txt|>{"ok": true}<|stop|>',
        [],
        '{"ok": true}',
        None,
    ),
    (  # recipient first, content type glued to the channel
        "recipient-constrain.jinja",
        f" to=fn.get_weather<|lane|>work<|fmt|>json<|txt|>{PJ}<|ret|>",
        [(W, PARIS)],
        None,
        None,
    ),
    (  # a stray to=assistant on a work-lane preamble: the answer
        "recipient-constrain.jinja",
        "<|lane|>work to=assistant<|txt|>Checking.<|stop|>"
        f"<|hd|>assistant<|lane|>work to=fn.get_time<|txt|>{PJ}",
        [(T, PARIS)],
        "Checking.",
        None,
    ),
    # Relay Plain: the answer has no recipient
    (
        "recipient-unaddressed-answer.jinja",
        f"<|body|>Let me check.<|eot|><|begin|>assistant to=get_weather<|body|>{PJ}<|eom|>",
        [(W, PARIS)],
        "Let me check.",
        None,
    ),
    (
        "recipient-unaddressed-answer.jinja",
        f" to=get_weather<|body|>{PJ}<|eom|>\n<|begin|>assistant <|body|> Done.",
        [(W, PARIS)],
        "Done.",
        None,
    ),
    # Courier: to=tools holds XML invokes
    (
        "recipient-xml-body.jinja",
        " to=user<|say|>One moment.<|end|><|msg|>assistant to=tools<|say|>"
        '<invoke name="get_weather"><p n="city">Paris</p><p n="days">2</p></invoke>'
        '<invoke name="get_time"><p n="city">Oslo</p></invoke><|done|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        "One moment.",
        None,
    ),
]

_SPECS: dict[str, DialectSpec] = {}


def _spec(name: str) -> DialectSpec:
    if name not in _SPECS:
        source = (INVENTED / name).read_text(encoding="utf-8")
        spec = detect_dialect(source, builtins=False)
        assert spec is not None and spec.messages is not None, name
        _SPECS[name] = spec
    return _SPECS[name]


def _view(out: ParsedOutput) -> tuple[Any, ...]:
    return (
        [(c.name, c.arguments) for c in out.tool_calls],
        out.content or None,
        out.reasoning_content or None,
    )


def _streamed(spec: DialectSpec, text: str, sizes: random.Random | None) -> ParsedOutput:
    parser = StreamParser(spec, tools=TOOLS)
    deltas: list[dict[str, Any]] = []
    i = 0
    while i < len(text):
        n = sizes.randint(1, 7) if sizes else 1
        deltas += parser.feed(text[i : i + n])
        i += n
    deltas += parser.close()
    content = "".join(d.get("content", "") for d in deltas)
    assert (content or None) == parser.result.content  # the deltas re-assemble the result
    return parser.result


@pytest.mark.parametrize(
    ("name", "text", "calls", "content", "reasoning"),
    ROWS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)],
)
def test_message_rows(
    name: str, text: str, calls: _Calls, content: str | None, reasoning: str | None
) -> None:
    spec = _spec(name)
    out = parse_output(text, spec, tools=TOOLS)
    assert _view(out) == (calls, content, reasoning)
    for seed in range(3):
        assert _view(_streamed(spec, text, random.Random(f"{text}{seed}"))) == _view(out)
    assert _view(_streamed(spec, text, None)) == _view(out)


@pytest.mark.parametrize(
    ("name", "reasoning", "channel"),
    [
        ("recipient-reasoning.jinja", "analysis", ""),
        ("recipient-thinking-field.jinja", "think", ""),
        ("recipient-before-channel.jinja", "think", "<|ch|>"),
        ("recipient-constrain.jinja", "scratch", "<|lane|>"),
    ],
)
def test_reasoning_name_is_learned_from_a_past_turn(
    name: str, reasoning: str, channel: str
) -> None:
    m = _spec(name).messages
    assert m is not None
    assert m.reasoning_names == [reasoning]
    assert m.channel == channel


def test_call_namespace_and_generic_recipient_are_learned() -> None:
    wire = _spec("recipient-constrain.jinja").messages
    courier = _spec("recipient-xml-body.jinja").messages
    assert wire is not None and wire.call_prefixes == ["fn."]
    assert courier is not None and courier.call_recipients == ["tools"]


@pytest.mark.parametrize(
    "name",
    [
        "recipient-reasoning.jinja",
        "recipient-thinking-field.jinja",
        "recipient-before-channel.jinja",
        "recipient-constrain.jinja",
    ],
)
def test_past_turn_with_reasoning_reads_back(name: str) -> None:
    """The template's own rendering of a turn with reasoning, an answer and two calls: the
    derived spec reads all three back."""
    source = (INVENTED / name).read_text(encoding="utf-8")
    spec = _spec(name)
    field = "thinking" if "thinking" in name else "reasoning_content"
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(((W, PJ), (T, '{"city": "Oslo"}')))
    ]
    user = {"role": "user", "content": "Weather?"}
    turn = {"role": "assistant", "content": "On it.", field: "Two lookups.", "tool_calls": calls}
    template = ChatTemplate(source)
    prompt = template.render([user], tools=TOOLS, add_generation_prompt=True)
    whole = template.render([user, turn], tools=TOOLS, add_generation_prompt=False)
    assert whole.startswith(prompt)
    out = parse_output(whole[len(prompt) :], spec, tools=TOOLS)
    assert _view(out) == ([(W, PARIS), (T, {"city": "Oslo"})], "On it.", "Two lookups.")


def test_gpt_oss_template_derives_the_builtins_message_headers() -> None:
    """Derivation alone (no builtin) reads gpt-oss's template as header-addressed messages: the
    derived spec reads what the model writes (the channel form no past turn shows, analysis
    reasoning, a final answer) as the builtin does."""
    source = (INVENTED.parent / "openai-gpt-oss-120b.jinja").read_text(encoding="utf-8")
    derived = detect_dialect(source, builtins=False)
    builtin = DialectSpec.builtin("gpt-oss")
    assert derived is not None and derived.origin == "derived" and derived.messages is not None
    assert builtin.messages is not None
    assert derived.messages.channel == builtin.messages.channel == "<|channel|>"
    assert derived.messages.call_prefixes == ["functions."]
    assert derived.messages.reasoning_ends == ["<|end|>"]
    text = (
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary"
        f" to=functions.get_weather <|constrain|>json<|message|>{PJ}<|call|>"
        "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    )
    got = parse_output(text, derived, tools=TOOLS)
    assert _view(got) == _view(parse_output(text, builtin, tools=TOOLS))
    assert _view(got) == ([(W, PARIS)], "Sunny.", "Think.")
