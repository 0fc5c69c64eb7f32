"""Tool search with deferred exposure (``tooldialect.apps.tool_search``): the ranking, the
offered set that grows by appending, the grammar that allows exactly that set, the default
threshold. Model-free: scripted replies, and the handler over a fake engine."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from pydantic import ConfigDict, create_model

from agent_script import ScriptedLlama, add, calls, text
from conftest import read_template
from fake_engine import FakeEngine, FakeLlama
from tooldialect import Agent, FinalAnswer, StepStarted, Tool, ToolSearch, ToolSpecError
from tooldialect.apps.tool_search import (
    BM25,
    SEARCH_ABOVE,
    SEARCH_TOOL,
    DeferredTools,
    ToolIndex,
    search_settings,
    words,
)
from tooldialect.engine.base import Generation, GenerationRequest
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.handler import ToolChatHandler
from tooldialect.tool_defs import normalize_tools


def make_tool(name: str, description: str, *params: str) -> Tool:
    def fn(**kwargs: Any) -> str:
        return f"{name} ran with {json.dumps(kwargs, sort_keys=True)}"

    definition = {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {p: {"type": "string"} for p in params},
            "required": list(params),
        },
    }

    fields: dict[str, Any] = {p: (str, ...) for p in params}
    model = create_model(f"A_{name}", __config__=ConfigDict(extra="forbid"), **fields)
    return Tool(fn, normalize_tools([definition])[0], model)


CATALOG = [
    make_tool("get_weather", "Current weather for a city.", "city"),
    make_tool("convert_currency", "Convert an amount between currencies.", "amount", "target"),
    make_tool("triangle_properties", "Area and perimeter of a triangle from its sides.", "side1"),
    make_tool("send_email", "Send an email message to a recipient.", "to", "subject", "body"),
    make_tool("listInvoices", "List the invoices of a customer account.", "customer_id"),
    make_tool("book_flight", "Book a flight between two airports.", "origin", "destination"),
]


def distractors(n: int) -> list[Tool]:
    topics = ("stock", "recipe", "movie", "lyrics", "museum", "planet", "vaccine", "tax")
    return [
        make_tool(f"{topics[i % len(topics)]}_lookup_{i}", f"Look up {topics[i % 8]} facts.", "q")
        for i in range(n)
    ]


# ---- ranking -------------------------------------------------------------------------------


def test_words_split_names_fold_plurals_and_drop_common_words() -> None:
    assert words("listInvoices get_user_emails") == ["list", "invoice", "get", "user", "email"]
    assert words("What is the weather in the cities?") == ["weather", "city"]
    assert words("class address") == ["class", "address"]  # a double s is no plural


def test_bm25_scores_match_the_formula() -> None:
    docs = [["weather", "city"], ["weather"], ["email", "send", "email"]]
    bm25 = BM25(docs, k1=1.2, b=0.75)
    average = 2.0
    idf_weather = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_email = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    scores = bm25.scores(["weather", "email"])
    norm0 = 1.2 * (1 - 0.75 + 0.75 * 2 / average)
    norm1 = 1.2 * (1 - 0.75 + 0.75 * 1 / average)
    norm2 = 1.2 * (1 - 0.75 + 0.75 * 3 / average)
    assert scores[0] == pytest.approx(idf_weather * 2.2 / (1 + norm0))
    assert scores[1] == pytest.approx(idf_weather * 2.2 / (1 + norm1))
    assert scores[2] == pytest.approx(idf_email * 2 * 2.2 / (2 + norm2))
    assert scores[1] > scores[0]  # the same term in a shorter document counts more
    assert BM25(docs).scores(["nothing"]) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what's the weather like in Paris", "get_weather"),
        ("convert 100 dollars to euros, currency exchange", "convert_currency"),
        ("area of a triangle with sides 3 4 5", "triangle_properties"),
        ("email Bob about the meeting", "send_email"),
        ("show the invoices of customer 42", "listInvoices"),
        ("I need a flight from Boston to Denver", "book_flight"),
        ("destination airport", "book_flight"),  # parameter names count
    ],
)
def test_the_right_tool_ranks_first_among_distractors(query: str, expected: str) -> None:
    index = ToolIndex([*distractors(200), *CATALOG])
    found = index.search(query, limit=3)
    assert found and found[0].name == expected


def test_a_query_sharing_no_word_finds_nothing() -> None:
    assert ToolIndex(CATALOG).search("zebra quantum", limit=5) == []


# ---- the default -----------------------------------------------------------------------------


def test_search_is_on_by_default_above_the_threshold_only() -> None:
    assert search_settings(None, tool_count=SEARCH_ABOVE) is None
    assert search_settings(None, tool_count=SEARCH_ABOVE + 1) == ToolSearch()
    assert search_settings(True, tool_count=1) == ToolSearch()
    assert search_settings(False, tool_count=1000) is None
    custom = ToolSearch(limit=2, above=3)
    assert search_settings(custom, tool_count=1) is custom
    with pytest.raises(ToolSpecError):
        search_settings("yes", tool_count=1)  # type: ignore[arg-type]
    with pytest.raises(ToolSpecError):
        ToolSearch(limit=0)
    with pytest.raises(ToolSpecError):
        ToolSearch(prefetch=-1)


def first_offer(n_tools: int) -> list[str]:
    llm = ScriptedLlama([text("hi")])
    Agent(llm, tools=distractors(n_tools)).run("hello")
    return [t["function"]["name"] for t in llm.requests[0].get("tools", [])]


def test_an_agent_offers_all_tools_up_to_the_threshold_and_searches_above() -> None:
    assert len(first_offer(SEARCH_ABOVE)) == SEARCH_ABOVE
    assert first_offer(SEARCH_ABOVE + 1) == [SEARCH_TOOL]


# ---- the offered set -------------------------------------------------------------------------


def offered(llm: ScriptedLlama) -> list[list[str]]:
    return [[t["function"]["name"] for t in r.get("tools", [])] for r in llm.requests]


def test_found_tools_join_the_offered_set_by_appending() -> None:
    llm = ScriptedLlama(
        [
            calls((SEARCH_TOOL, {"query": "send an email"})),
            calls((SEARCH_TOOL, {"query": "weather in a city"})),
            calls(("get_weather", {"city": "Paris"})),
            calls(("send_email", {"to": "bob", "subject": "rain", "body": "it rains"})),
            text("Sent."),
        ]
    )
    agent = Agent(
        llm, tools=[*distractors(40), *CATALOG], tool_search=ToolSearch(limit=1, prefetch=0)
    )
    events = list(agent.stream("Email Bob the weather in Paris."))
    last = events[-1]
    assert isinstance(last, FinalAnswer)
    result = last.result
    assert result.answer == "Sent."
    sets = offered(llm)
    assert sets == [
        [SEARCH_TOOL],
        [SEARCH_TOOL, "send_email"],
        [SEARCH_TOOL, "send_email", "get_weather"],
        [SEARCH_TOOL, "send_email", "get_weather"],
        [SEARCH_TOOL, "send_email", "get_weather"],
    ]
    for earlier, later in itertools.pairwise(sets):
        assert later[: len(earlier)] == earlier  # append, never reorder
    assert [e.tools for e in events if isinstance(e, StepStarted)] == [tuple(s) for s in sets]
    found = result.steps[1].calls[0]
    assert found.error is None and found.result.startswith("Found these tools")
    assert "get_weather(city)" in found.result
    assert result.steps[2].calls[0].result == 'get_weather ran with {"city": "Paris"}'


def test_a_search_that_finds_nothing_says_so_and_offers_nothing_new() -> None:
    llm = ScriptedLlama([calls((SEARCH_TOOL, {"query": "zebra quantum"})), text("none")])
    result = Agent(llm, tools=CATALOG, tool_search=True).run("hi")
    assert "No tool matches" in result.steps[0].calls[0].result
    assert offered(llm) == [[SEARCH_TOOL], [SEARCH_TOOL]]


def test_a_tool_called_by_name_runs_and_joins_and_an_unknown_one_points_to_search() -> None:
    llm = ScriptedLlama(
        [calls(("add", {"a": 1, "b": 2}), ("nope", {})), text("3")],
    )
    result = Agent(llm, tools=[add, *CATALOG], tool_search=True).run("1+2")
    ran, unknown = result.steps[0].calls
    assert ran.result == "3" and ran.error is None
    assert unknown.error == "unknown_tool" and f"{SEARCH_TOOL} finds others" in unknown.result
    assert offered(llm) == [[SEARCH_TOOL], [SEARCH_TOOL, "add"]]


def test_a_continued_conversation_and_a_named_tool_choice_are_offered_from_the_start() -> None:
    past: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "cold"},
        {"role": "assistant", "content": "Cold."},
        {"role": "user", "content": "and the flight?"},
    ]
    llm = ScriptedLlama([text("ok")])
    choice = {"type": "function", "function": {"name": "book_flight"}}
    Agent(llm, tools=CATALOG, tool_search=True, tool_choice=choice).run(past)
    assert offered(llm) == [[SEARCH_TOOL, "get_weather", "book_flight"]]


def test_pinned_tools_and_name_clashes() -> None:
    llm = ScriptedLlama([text("ok")])
    Agent(llm, tools=CATALOG, tool_search=ToolSearch(pinned=("send_email",))).run("hi")
    assert offered(llm) == [[SEARCH_TOOL, "send_email"]]
    with pytest.raises(ToolSpecError, match="lacks"):
        Agent(ScriptedLlama([]), tools=CATALOG, tool_search=ToolSearch(pinned=("x",))).run("hi")
    clash = make_tool(SEARCH_TOOL, "mine", "q")
    with pytest.raises(ToolSpecError, match="tool_search=False"):
        Agent(ScriptedLlama([]), tools=[clash], tool_search=True).run("hi")
    Agent(ScriptedLlama([text("ok")]), tools=[clash], tool_search=False).run("hi")


def test_the_index_follows_a_tool_list_that_changes() -> None:
    deferred = DeferredTools(ToolSearch(limit=1))
    deferred.offer({t.name: t for t in CATALOG[:2]})
    assert "send_email" not in deferred.search("send an email")
    deferred.offer({t.name: t for t in CATALOG})
    assert "send_email" in deferred.search("send an email")
    assert deferred.offered == ["send_email"]


# ---- the grammar -----------------------------------------------------------------------------


class StepEngine(FakeEngine):
    """Replays one script per request."""

    def __init__(self, scripts: list[list[str]]) -> None:
        super().__init__()
        self.scripts = scripts

    def run(self, request: GenerationRequest) -> Generation:
        self.script = list(self.scripts.pop(0))
        return super().run(request)


def qwen_call(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": arguments})
    return f"<tool_call>\n{body}\n</tool_call>"


def test_the_grammar_allows_exactly_the_offered_set_and_the_prompt_grows_at_the_end() -> None:
    handler = ToolChatHandler()
    llama = FakeLlama(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"))
    llama.chat_handler = handler  # type: ignore[attr-defined]
    engine = StepEngine(
        [
            list(qwen_call(SEARCH_TOOL, {"query": "weather for a city"})),
            list(qwen_call("get_weather", {"city": "Paris"})),
            list("Sunny."),
        ]
    )
    handler.setup(llama, engine=engine)
    result = Agent(llama, tools=[*distractors(40), *CATALOG], tool_search=True).run("Paris?")
    assert result.answer == "Sunny.", result
    first, second, _ = engine.jobs

    def accepts(request: GenerationRequest, text: str) -> bool:
        assert request.grammar is not None
        return GbnfAutomaton(request.grammar.gbnf, request.grammar.root).feed(text)

    weather = qwen_call("get_weather", {"city": "Paris"})
    email = qwen_call("send_email", {"to": "a", "subject": "b", "body": "c"})
    assert accepts(first, qwen_call(SEARCH_TOOL, {"query": "x"}))
    assert not accepts(first, weather)
    assert accepts(second, weather) and accepts(second, qwen_call(SEARCH_TOOL, {"query": "x"}))
    assert not accepts(second, email)  # found by nobody yet: not offered, not allowed
    assert "get_weather" not in first.prompt and "stock_lookup_0" not in second.prompt
    # the first prompt's tool block is kept whole; the new tool comes after it
    shared = len(_common_prefix(first.prompt, second.prompt))
    assert first.prompt.index(f'"name": "{SEARCH_TOOL}"') < shared
    assert second.prompt.index('"name": "get_weather"') >= shared


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_the_users_request_helps_a_query_that_misses_the_task() -> None:
    llm = ScriptedLlama([calls((SEARCH_TOOL, {"query": "deploy finished"})), text("ok")])
    agent = Agent(
        llm, tools=[*distractors(40), *CATALOG], tool_search=ToolSearch(limit=2, prefetch=0)
    )
    result = agent.run("Send an email to Bob saying: deploy finished.")
    assert "send_email(" in result.steps[0].calls[0].result
    assert offered(llm)[1][:2] == [SEARCH_TOOL, "send_email"]


def test_the_requests_best_matches_are_offered_from_the_first_step() -> None:
    llm = ScriptedLlama(
        [calls(("book_flight", {"origin": "BOS", "destination": "DEN"})), text("ok")]
    )
    agent = Agent(llm, tools=[*distractors(40), *CATALOG], tool_search=ToolSearch(prefetch=2))
    result = agent.run("Book me a flight from Boston to Denver.")
    first = offered(llm)[0]
    assert first == [SEARCH_TOOL, "book_flight"]  # the only tool that shares a word
    assert result.steps[0].calls[0].error is None
    assert offered(llm)[1] == first  # nothing moves
