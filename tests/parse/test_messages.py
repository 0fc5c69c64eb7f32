"""``MessageParser`` (``DialectSpec.messages``): properties over random harmony-like replies.

Replies are random runs of messages (reasoning, answers, calls, built-in recipients, prose, stray
markers, headers in any token order, cut at random): streaming in random chunks equals batch, no
end-of-message marker reaches content, and every call message that is whole is a call.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldialect.dialect.spec import DialectSpec, MessageHeaders
from tooldialect.parse import StreamParser, parse_output
from tooldialect.parse.headers import MAYBE, NO, Header, read_header, route
from tooldialect.verify import detect_dialect

SPEC = DialectSpec.builtin("gpt-oss")
assert SPEC.messages is not None
M: MessageHeaders = SPEC.messages
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_weather", "search")
]

_TOKENS = {
    "channel": st.sampled_from(
        ["<|channel|>analysis", "<|channel|>commentary", "<|channel|>final"]
    ),
    "recipient": st.sampled_from(
        [" to=functions.get_weather", " to=search", " to=assistant", " to=container.exec", ""]
    ),
    "constraint": st.sampled_from([" <|constrain|>json", "<|constrain|>json", " json", ""]),
}


@st.composite
def _header(draw: st.DrawFn) -> str:
    parts = [draw(s) for s in _TOKENS.values()]
    return "".join(draw(st.permutations(parts))) + "<|message|>"


_BODY = st.sampled_from(
    ['{"city": "Paris"}', "Thinking it over.", " Sunny. ", '{"city": Par', "x <|end|> y", ""]
)
_END = st.sampled_from(["<|end|>", "<|call|>", "<|return|>", ""])
_NOISE = st.sampled_from(["", "\n", "Hello ", "<|start|>assistant", "<|channel|>", "to="])


@st.composite
def _reply(draw: st.DrawFn) -> str:
    out = []
    for i in range(draw(st.integers(1, 4))):
        start = "<|start|>assistant" if i else ""
        out.append(draw(_NOISE) + start + draw(_header()) + draw(_BODY) + draw(_END))
    text = "".join(out)
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


def _chunks(text: str, sizes: list[int]) -> list[str]:
    out, i = [], 0
    for n in sizes or [1]:
        if i >= len(text):
            break
        out.append(text[i : i + n])
        i += n
    while i < len(text):
        out.append(text[i : i + 3])
        i += 3
    return out


@settings(max_examples=150, deadline=None)
@given(text=_reply(), sizes=st.lists(st.integers(1, 9), max_size=40))
def test_streaming_equals_batch_and_ends_never_reach_content(text: str, sizes: list[int]) -> None:
    batch = parse_output(text, SPEC, tools=TOOLS)
    parser = StreamParser(SPEC, tools=TOOLS)
    deltas = []
    for piece in _chunks(text, sizes):
        deltas += parser.feed(piece)
    deltas += parser.close()
    got = parser.result
    assert got.content == batch.content
    assert got.reasoning_content == batch.reasoning_content
    assert [(c.name, c.arguments) for c in got.tool_calls] == [
        (c.name, c.arguments) for c in batch.tool_calls
    ]
    assert ("".join(d.get("content", "") for d in deltas) or None) == got.content
    for end in M.ends:
        assert end not in (batch.content or "")
    for call in batch.tool_calls:
        assert json.loads(call.arguments_json) == call.arguments


def test_header_tokens_in_any_order() -> None:
    for text in (
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>",
        " to=functions.f<|channel|>commentary json<|message|>",
        "<|constrain|>json to=functions.f<|channel|>analysis<|message|>",
        " json to=functions.f<|message|>",
    ):
        got = read_header(text, 0, M, final=False)
        if text.startswith(" json"):
            assert got == NO  # a bare word first is prose
            continue
        assert isinstance(got, Header), text
        assert got.recipient == "functions.f" and got.end == len(text)
        assert route(got, M, {"f"}) == ("call", "f")


def test_header_waits_only_while_it_may_still_be_one() -> None:
    assert read_header("<|chan", 0, M, final=False) == MAYBE
    assert read_header(" to=functions.get_wea", 0, M, final=False) == MAYBE
    assert read_header("The answer", 0, M, final=False) == NO
    assert read_header("<|channel|>final, ", 0, M, final=False) == NO


def test_routing() -> None:
    def r(rec: str, chan: str = "") -> tuple[str, str]:
        return route(Header(rec, chan, 0), M, {"get_weather", "python"})

    assert r("functions.get_weather") == ("call", "get_weather")
    assert r("functions.other") == ("call", "other")
    assert r("python") == ("call", "python")
    assert r("container.exec") == ("builtin", "container.exec")
    assert r("assistant", "commentary") == ("content", "")
    assert r("", "analysis") == ("reasoning", "")
    assert r("", "final") == ("content", "")


def test_blank_markers_never_match_everywhere() -> None:
    """A user spec whose start or body marker is only whitespace: parsing ends, text is kept."""
    spec = SPEC.model_copy(
        update={"messages": MessageHeaders(start=" ", body_open=" ", ends=["<|end|>"])}
    )
    out = parse_output("Hello <|channel|>x there<|end|>", spec)
    assert out.content == "Hello <|channel|>x there"
    assert out.tool_calls == []


DISPATCH = detect_dialect(
    (
        Path(__file__).parent.parent
        / "fixtures"
        / "templates"
        / "invented"
        / "recipient-reasoning.jinja"
    ).read_text(encoding="utf-8"),
    builtins=False,
)


@st.composite
def _dispatch_reply(draw: st.DrawFn) -> str:
    out = []
    for i in range(draw(st.integers(1, 4))):
        start = draw(st.sampled_from(["<|begin|>assistant", ""])) if i else ""
        rec = draw(st.sampled_from(["analysis", "user", "get_weather", "python", "search"]))
        head = draw(st.sampled_from([f" to={rec}<|body|>", f" to={rec} <|body|> ", "<|body|>"]))
        end = draw(st.sampled_from(["<|end|>", "<|eot|>", "<|eom|>", ""]))
        out.append(draw(_NOISE) + start + head + draw(_BODY) + end)
    text = "".join(out)
    return text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


@settings(max_examples=100, deadline=None)
@given(text=_dispatch_reply(), sizes=st.lists(st.integers(1, 9), max_size=40))
def test_derived_family_streaming_equals_batch(text: str, sizes: list[int]) -> None:
    assert DISPATCH is not None and DISPATCH.messages is not None
    batch = parse_output(text, DISPATCH, tools=TOOLS)
    parser = StreamParser(DISPATCH, tools=TOOLS)
    for piece in _chunks(text, sizes):
        parser.feed(piece)
    parser.close()
    got = parser.result
    assert (got.content, got.reasoning_content) == (batch.content, batch.reasoning_content)
    assert [(c.name, c.arguments) for c in got.tool_calls] == [
        (c.name, c.arguments) for c in batch.tool_calls
    ]
    for end in DISPATCH.messages.ends:
        assert end not in (batch.content or "")


def test_raw_control_characters_in_arguments_are_re_encoded() -> None:
    text = '<|channel|>commentary to=functions.search<|message|>{"query": "a\tb\nc"}<|call|>'
    out = parse_output(text, SPEC, tools=TOOLS)
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("search", {"query": "a\tb\nc"})]
    assert json.loads(out.tool_calls[0].arguments_json) == {"query": "a\tb\nc"}


def test_a_cut_header_is_framing_only_where_the_token_limit_cut_it() -> None:
    """A header the end of the text cuts is dropped as framing only where the token limit cut
    it; a reply that itself ends inside a header keeps it as content, marked or bare."""
    marked = parse_output("<|channel|>analysis<|message|>Think.<|end|><|channel|>comm", SPEC)
    assert marked.content == "<|channel|>comm" and marked.reasoning_content == "Think."
    bare = parse_output(" to=w1q", SPEC, tools=TOOLS)
    assert bare.content is not None and "w1q" in bare.content
    cut = parse_output(" to=w1q", SPEC, tools=TOOLS, truncated=True)
    assert cut.content is None
    started = parse_output("<|start|>assistant", SPEC)
    assert started.content is None  # a start marker alone is framing


RECIPIENT = detect_dialect(
    (
        Path(__file__).parent.parent
        / "fixtures"
        / "templates"
        / "invented"
        / "recipient-constrain.jinja"
    ).read_text(encoding="utf-8"),
    builtins=False,
)
UNFINISHED = {
    # reply: its content (the fuzz found the first dropped whole)
    "<|lane|>w1q": "<|lane|>w1q",
    "<|lane|>w1q ": "<|lane|>w1q ",  # the reply's end is no marker: its text stays whole
    "<|lane|>work w1q": "<|lane|>work w1q",
    "<|lane|>work to=fn.get_wea": "<|lane|>work to=fn.get_wea",
    "<|lane|>w1q to=fn": "<|lane|>w1q to=fn",
    "<|hd|>assistant<|lane|>work to=fn.w1q": "<|lane|>work to=fn.w1q",
    "<|lane|>scratch<|txt|>Hm.<|stop|><|lane|>w2q": "<|lane|>w2q",
}


@pytest.mark.parametrize("read_calls", [True, False])
@pytest.mark.parametrize("reply", list(UNFINISHED))
def test_an_unfinished_header_message_stays_content(reply: str, read_calls: bool) -> None:
    """A reply that ends inside a header (a derived family's channel token, then words, no body
    marker) never became a call: its text stays content, as written, batch and streamed in
    every chunking, calls read or not; only the token limit makes it framing."""
    assert RECIPIENT is not None and RECIPIENT.messages is not None
    batch = parse_output(reply, RECIPIENT, tools=TOOLS, read_calls=read_calls)
    assert (batch.content, batch.tool_calls) == (UNFINISHED[reply], [])
    assert "scratch" in reply or batch.reasoning_content is None
    for size in range(1, len(reply) + 1):
        parser = StreamParser(RECIPIENT, tools=TOOLS, read_calls=read_calls)
        deltas = []
        for i in range(0, len(reply), size):
            deltas += parser.feed(reply[i : i + size])
        deltas += parser.close()
        assert parser.result == batch, size
        assert "".join(d.get("content", "") for d in deltas) == UNFINISHED[reply]
    cut = parse_output(reply, RECIPIENT, tools=TOOLS, read_calls=read_calls, truncated=True)
    assert cut.content is None  # the token limit cut the header: framing


def test_a_call_body_healing_would_shorten_stays_content() -> None:
    """A call body cut inside a key is not healed into ``{}``: its text stays content."""
    out = parse_output(
        '<|channel|>commentary to=functions.get_weather<|message|>{"cityx', SPEC, tools=TOOLS
    )
    assert not out.tool_calls
    assert out.content is not None and "cityx" in out.content
    kept = parse_output(
        '<|channel|>commentary to=functions.get_weather<|message|>{"city": "Par', SPEC, tools=TOOLS
    )
    assert [c.arguments for c in kept.tool_calls] == [{"city": "Par"}]


def test_a_header_with_two_recipients_is_no_header() -> None:
    """`` to=a to=b`` names no one recipient: the text stays content, no word dropped."""
    out = parse_output(" to=w1q to=functions.get_weather<|message|>{}", SPEC, tools=TOOLS)
    assert not out.tool_calls
    assert out.content is not None and "w1q" in out.content
    same = parse_output(
        "<|channel|>commentary to=functions.get_weather to=functions.get_weather"
        '<|message|>{"city": "Oslo"}<|call|>',
        SPEC,
        tools=TOOLS,
    )
    assert [c.arguments for c in same.tool_calls] == [{"city": "Oslo"}]
