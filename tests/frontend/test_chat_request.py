"""One typed request (issue 40 section 1): ``ToolChoice`` answers what a ``tool_choice`` means,
``ChatRequest`` holds every decided fact, each adapter reads a choice through the one reader
(the API converters translate their own forms first), and ``"none"`` reads a reply the same way
batch and stream, header-addressed messages included. Model-free."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_script import ScriptedLlama, text
from conftest import read_template
from fake_engine import fake_handler
from tool_defs import TIME
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import Agent, ToolSpecError
from tooldialect.apps.messages.convert import chat_tool_choice
from tooldialect.apps.responses.convert import ResponsesError, checked_tool_choice
from tooldialect.dialect.builtins import get_builtin
from tooldialect.frontend.options import ChatOptions
from tooldialect.frontend.pipeline import FrontEnd
from tooldialect.frontend.request import ModelSetup
from tooldialect.gguf import ModelInfo
from tooldialect.prompt.template import ChatTemplate
from tooldialect.tool_defs import ToolChoice, normalize_tool_choice, normalize_tools

TOOLS = normalize_tools([WEATHER, TIME])
ASK = [{"role": "user", "content": "Weather in Paris?"}]

# ---- ToolChoice: the questions the pipeline asks -------------------------------------------------

# mode -> (reads_calls, shows_tools, forced, optional, several calls when asked, callable names)
ANSWERS: dict[str, tuple[bool, bool, bool, bool, bool, list[str]]] = {
    "auto": (True, True, False, True, True, ["get_weather", "get_time"]),
    "none": (False, False, False, False, True, []),
    "required": (True, True, True, False, True, ["get_weather", "get_time"]),
    "get_time": (True, True, True, False, False, ["get_time"]),
}


@pytest.mark.parametrize("given", list(ANSWERS))
def test_a_choice_answers_the_pipelines_questions(given: str) -> None:
    choice = normalize_tool_choice(given, TOOLS)
    got = (
        choice.reads_calls,
        choice.shows_tools,
        choice.forced,
        choice.optional,
        choice.allows_several(True),
        [t.name for t in choice.callable_tools(TOOLS)],
    )
    assert got == ANSWERS[given]
    assert choice.allows_several(False) is False
    assert normalize_tool_choice(choice.to_openai(), TOOLS) == choice  # its own form reads back


def test_a_subset_is_named_and_read_back() -> None:
    subset = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": "get_time"}}],
        },
    }
    choice = normalize_tool_choice(subset, TOOLS)
    assert (choice.names, choice.forced, choice.to_openai()) == (("get_time",), True, subset)
    assert choice.requiring() is choice
    auto = normalize_tool_choice("auto", TOOLS).requiring()
    assert (auto.mode, auto.allowed) == ("required", None)


def test_a_choice_is_checked_against_the_tools_it_names() -> None:
    with pytest.raises(ToolSpecError, match="get_date"):
        normalize_tool_choice(ToolChoice(mode="named", name="get_date"), TOOLS)
    with pytest.raises(ToolSpecError, match="needs at least one tool"):
        normalize_tool_choice(ToolChoice(mode="required"), [])
    assert normalize_tool_choice(ToolChoice(mode="auto"), []) == ToolChoice(mode="none")
    with pytest.raises(ToolSpecError, match="mode 'named'"):
        ToolChoice(mode="auto", name="get_time")


# ---- each API's forms translated by its converter, read by the one reader ----------------------

FOREIGN: list[tuple[str, Any, Any, ToolChoice]] = [
    (
        "responses-function",
        {"type": "function", "name": "get_time"},
        checked_tool_choice,
        ToolChoice(mode="named", name="get_time"),
    ),
    (
        "responses-allowed-tools",
        {
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "get_time"}],
        },
        checked_tool_choice,
        ToolChoice(mode="auto", allowed=("get_time",)),
    ),
    (
        "anthropic-tool",
        {"type": "tool", "name": "get_time"},
        lambda c: chat_tool_choice(c)["tool_choice"],
        ToolChoice(mode="named", name="get_time"),
    ),
    (
        "anthropic-any",
        {"type": "any"},
        lambda c: chat_tool_choice(c)["tool_choice"],
        ToolChoice(mode="required"),
    ),
    (
        "anthropic-none",
        {"type": "none"},
        lambda c: chat_tool_choice(c)["tool_choice"],
        ToolChoice(mode="none"),
    ),
]


@pytest.mark.parametrize(
    ("given", "convert", "expected"), [f[1:] for f in FOREIGN], ids=[f[0] for f in FOREIGN]
)
def test_other_apis_forms_are_translated_by_their_converter(
    given: Any, convert: Any, expected: ToolChoice
) -> None:
    assert normalize_tool_choice(convert(given), TOOLS) == expected
    with pytest.raises(ToolSpecError, match=r"accepted forms|allowed_tools choice"):
        normalize_tool_choice(given, TOOLS)  # the reader itself takes only the handler's forms


def test_the_responses_converter_refuses_a_hosted_tool_by_name() -> None:
    with pytest.raises(ResponsesError, match="'mcp'"):
        checked_tool_choice(
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "mcp", "server": "x"}]}
        )
    with pytest.raises(ResponsesError, match="'file_search'"):
        checked_tool_choice({"type": "file_search"})


# ---- ChatRequest: the facts decided once --------------------------------------------------------


def setup_for(template: str, spec: str | None = None) -> ModelSetup:
    from tooldialect.verify import detect_dialect

    source = read_template(template)
    return ModelSetup(
        info=ModelInfo(chat_template=source),
        template=ChatTemplate(source),
        template_origin="user",
        spec=get_builtin(spec) if spec else detect_dialect(source),
        engine=None,  # type: ignore[arg-type]  # nothing decodes here
    )


@pytest.mark.parametrize(
    ("default", "asked", "choice", "spec", "parallel"),
    [
        (True, None, "auto", "hermes", True),
        (False, None, "auto", "hermes", False),  # the handler's default
        (False, True, "auto", "hermes", True),  # the request's own wins
        (True, None, "get_time", "hermes", False),  # a named choice means one call
        (True, True, "required", "gpt-oss", False),  # the dialect writes one call
    ],
)
def test_parallel_calls_are_resolved_once_against_the_dialect(
    default: bool, asked: bool | None, choice: str, spec: str, parallel: bool
) -> None:
    setup = setup_for("Qwen2.5-Coder-0.5B-Instruct.jinja", spec)
    front = FrontEnd(adapter="test", options=_options(parallel_tool_calls=default))
    request: dict[str, Any] = {"tools": [WEATHER, TIME], "tool_choice": choice}
    if asked is not None:
        request["parallel_tool_calls"] = asked
    chat = front.chat_request(setup, ASK, ChatOptions.build(request, where="test"))
    assert chat.parallel is parallel
    assert get_builtin(spec).parallel_calls is (spec != "gpt-oss")


def test_template_variables_merge_once_the_requests_winning() -> None:
    setup = setup_for("Qwen2.5-Coder-0.5B-Instruct.jinja")
    front = FrontEnd(adapter="test", options=_options(template_kwargs={"a": 1, "b": 1, "c": 1}))
    options = ChatOptions.build(
        {"chat_template_kwargs": {"b": 2, "enable_thinking": True}, "enable_thinking": False},
        where="test",
    )
    chat = front.chat_request(setup, ASK, options)
    assert dict(chat.template_variables) == {"a": 1, "b": 2, "c": 1, "enable_thinking": False}
    with pytest.raises(ToolSpecError, match="chat_template_kwargs"):
        ChatOptions.build({"chat_template_kwargs": ["x"]}, where="test")


def test_the_prompt_shows_the_tools_only_where_calls_are_read() -> None:
    setup = setup_for("Qwen2.5-Coder-0.5B-Instruct.jinja")
    front = FrontEnd(adapter="test")
    shown = front.prepare_from(setup, ASK, {"tools": [WEATHER]}, where="test")
    hidden = front.prepare_from(setup, ASK, {"tools": [WEATHER], "tool_choice": "none"}, where="t")
    assert "get_weather" in shown.prompt and "get_weather" not in hidden.prompt
    assert shown.grammar is not None and hidden.grammar is None
    assert hidden.tools == shown.tools  # the request keeps them: the parser types by them


def _options(**given: Any) -> Any:
    from tooldialect.frontend.options import FrontEndOptions

    return FrontEndOptions(**given)


# ---- "none" reads batch and stream alike, header-addressed messages included --------------------

OSS = read_template("openai-gpt-oss-120b.jinja")
CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris"}'
)
HEADER_REPLIES = {
    "reasoning-then-answer": [
        "<|channel|>analysis<|message|>They want",
        " weather.<|end|>",
        "<|start|>assistant<|channel|>final<|message|>It is",
        " sunny.",
    ],
    "reasoning-then-call": [
        "<|channel|>analysis<|message|>Call it.<|end|>",
        CALL[:40],
        CALL[40:],
        "<|call|>",
    ],
    "answer-then-call": [
        "<|channel|>final<|message|>Checking.<|end|>",
        CALL,
        "<|call|>",
    ],
}


def message_of(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream folded into a message (content, reasoning, calls)."""
    out: dict[str, Any] = {"content": "", "reasoning_content": "", "tool_calls": []}
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        for key in ("content", "reasoning_content"):
            out[key] += delta.get(key) or ""
        out["tool_calls"] += delta.get("tool_calls") or []
    return out


@pytest.mark.parametrize("reply", list(HEADER_REPLIES))
def test_a_header_addressed_spec_streams_what_it_parses_in_batch_under_none(reply: str) -> None:
    """gpt-oss's harmony messages under ``tool_choice="none"``: the stream gives what the batch
    response gives (the front end once streamed the raw text while the batch split it)."""
    script = HEADER_REPLIES[reply]
    handler, llama, _ = fake_handler(OSS, script)
    request: dict[str, Any] = {"messages": ASK, "tools": [WEATHER], "tool_choice": "none"}
    batch: Any = handler(llama=llama, **request)
    chunks: Any = handler(llama=llama, stream=True, **request)
    streamed = message_of(list(chunks))
    message = batch["choices"][0]["message"]
    assert streamed["content"] == (message.get("content") or "")
    assert streamed["reasoning_content"] == (message.get("reasoning_content") or "")
    assert streamed["tool_calls"] == [] and "tool_calls" not in message
    assert batch["choices"][0]["finish_reason"] == "stop"
    if "call" in reply:  # the call stays text, as written, and reasoning is still split off
        assert CALL in message["content"] and "<|call|>" not in message["content"]
    if reply.startswith("reasoning"):
        assert message["reasoning_content"] and "<|channel|>analysis" not in message["content"]
    auto: Any = handler(llama=llama, messages=ASK, tools=[WEATHER])
    calls = auto["choices"][0]["message"].get("tool_calls")
    assert bool(calls) is ("call" in reply)  # the same text, calls read


# ---- the Agent reads its tool_choice once, as the handler does -----------------------------------


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny"


def send_email(to: str, body: str) -> str:
    """Send an email message to a recipient."""
    return "sent"


def book_flight(origin: str, destination: str) -> str:
    """Book a flight between two airports."""
    return "booked"


def list_invoices(customer_id: str) -> str:
    """List the invoices of a customer account."""
    return "none"


CATALOG: list[Callable[..., Any]] = [get_weather, send_email, book_flight, list_invoices]


def offered(llm: ScriptedLlama) -> list[list[str]]:
    return [[t["function"]["name"] for t in r.get("tools", [])] for r in llm.requests]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("book_flight", {"type": "function", "function": {"name": "book_flight"}}),
        (
            {"type": "function", "function": {"name": "book_flight"}},
            {"type": "function", "function": {"name": "book_flight"}},
        ),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "required", "tools": ["book_flight", "send_email"]},
            },
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [
                        {"type": "function", "function": {"name": "book_flight"}},
                        {"type": "function", "function": {"name": "send_email"}},
                    ],
                },
            },
        ),
    ],
    ids=["bare-name", "chat-object", "allowed-tools"],
)
def test_a_choice_naming_tools_offers_them_from_the_start_under_tool_search(
    choice: Any, sent: Any
) -> None:
    llm = ScriptedLlama([text("ok")])
    Agent(llm, tools=CATALOG, tool_search=True, tool_choice=choice).run("fly me to Oslo")
    names = offered(llm)[0]
    assert names[0] == "tool_search"
    assert {n for n in ("book_flight", "send_email") if n in json.dumps(sent)} <= set(names)
    assert llm.requests[0]["tool_choice"] == sent  # the Chat Completions form, for any client


def test_the_agent_refuses_another_apis_choice_when_it_is_made() -> None:
    with pytest.raises(ToolSpecError, match="accepted forms"):
        Agent(ScriptedLlama([]), tools=CATALOG, tool_choice={"type": "function", "name": "x"})
    with pytest.raises(ToolSpecError, match="unknown function 'nope'"):
        Agent(
            ScriptedLlama([]),
            tools=CATALOG,
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )
