"""``tooldialect serve`` for real: a server process on a loopback port, driven by the official
``openai`` client and by pydantic-ai, on Qwen2.5-Coder-0.5B (native hermes calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from models.schema_check import schema_errors
from tool_defs import TIME
from tool_defs import WEATHER_UNITS as WEATHER

pytestmark = [pytest.mark.model, pytest.mark.slow]

TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
PARIS = [{"role": "user", "content": "What's the weather in Paris?"}]
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 60}


def valid_calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(name, arguments)`` of each call, each checked against its tool's schema."""
    out = []
    for call in message.tool_calls or []:
        args = json.loads(call.function.arguments)
        assert schema_errors(args, SCHEMAS[call.function.name]) == [], call
        assert call.id and call.type == "function"
        out.append((call.function.name, args))
    return out


@pytest.mark.parametrize(
    ("tool_choice", "expected"),
    [
        ("auto", "get_weather"),
        ("required", "get_weather"),
        ({"type": "function", "function": {"name": "get_time"}}, "get_time"),
    ],
    ids=["auto", "required", "named"],
)
def test_tool_choice(client: Any, tool_choice: Any, expected: str) -> None:
    r = client.chat.completions.create(
        model="qwen", messages=PARIS, tools=TOOLS, tool_choice=tool_choice, **GREEDY
    )
    calls = valid_calls(r.choices[0].message)
    assert calls and calls[0][0] == expected
    assert r.choices[0].finish_reason == "tool_calls"
    if expected == "get_weather":
        assert "paris" in calls[0][1]["city"].lower()


def test_streamed_deltas_reassemble_into_the_same_call(client: Any) -> None:
    whole = client.chat.completions.create(
        model="qwen", messages=PARIS, tools=TOOLS, tool_choice="required", **GREEDY
    )
    stream = client.chat.completions.create(
        model="qwen", messages=PARIS, tools=TOOLS, tool_choice="required", stream=True, **GREEDY
    )
    calls: dict[int, dict[str, str]] = {}
    finish, deltas = None, 0
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            deltas += 1
            slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += tc.id or ""
            slot["name"] += (tc.function.name or "") if tc.function else ""
            slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
    assert deltas > 1  # really streamed, not one final delta
    assert finish == "tool_calls"
    streamed = [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]
    assert all(c["id"] for c in calls.values())
    assert streamed == valid_calls(whole.choices[0].message)


def test_tool_result_turn(client: Any) -> None:
    """The call goes back as the client returned it (``content: null``) with a ``tool`` result;
    the turn renders on top of the first prompt, so the server's KV cache covers all of it."""
    first = client.chat.completions.create(
        model="qwen", messages=PARIS, tools=TOOLS, tool_choice="required", **GREEDY
    )
    sent = first.choices[0].message.model_dump(exclude_none=True)
    sent["content"] = None  # what OpenAI clients send for a call-only turn
    result = {
        "role": "tool",
        "tool_call_id": sent["tool_calls"][0]["id"],
        "content": "17 degrees celsius, light rain",
    }
    second = client.chat.completions.create(
        model="qwen", messages=[*PARIS, sent, result], tools=TOOLS, **GREEDY
    )
    choice = second.choices[0]
    # the finish reason the reply earns: small models may call again (it must still be valid)
    cut = second.usage.completion_tokens == GREEDY["max_tokens"]
    if choice.message.tool_calls:
        assert choice.finish_reason == ("length" if cut else "tool_calls")
        assert valid_calls(choice.message)
    else:
        assert choice.finish_reason == ("length" if cut else "stop")
        assert choice.message.content
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= first.usage.prompt_tokens - 1


def test_parallel_tool_calls_false_reaches_the_handler(client: Any) -> None:
    """The server's request model drops ``parallel_tool_calls``; the rewrite layer carries it."""
    r = client.chat.completions.create(
        model="qwen",
        messages=[{"role": "user", "content": "Weather in Paris, in London and in Rome?"}],
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=0,
        max_tokens=120,
    )
    assert len(valid_calls(r.choices[0].message)) == 1


PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def handler_takes_response_format() -> bool:
    """Whether this handler build constrains ``response_format`` (issue 8 passes it to request
    preparation); before that the server forwards it and the handler ignores it."""
    from tooldialect.frontend.options import ChatOptions

    return "answer_schema" in ChatOptions.__dataclass_fields__  # read into the typed options


def test_json_schema_response_format(client: Any) -> None:
    r = client.chat.completions.create(
        model="qwen",
        messages=[{"role": "user", "content": "Ann is 31. Describe her as JSON."}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON, "strict": True},
        },
        temperature=0,
        max_tokens=80,
    )
    content = r.choices[0].message.content or ""
    assert content  # accepted (the server's own model rejects this shape) and answered
    try:
        value = json.loads(content)
        errors = schema_errors(value, PERSON)
    except ValueError as exc:
        errors = [f"not JSON: {exc}"]
    if errors and not handler_takes_response_format():
        pytest.xfail(f"handler ignores response_format before issue 8: {errors} in {content!r}")
    assert errors == [], content


def test_pydantic_ai_agent_runs_two_tool_steps(base_url: str) -> None:
    """An existing framework, offline: pydantic-ai's OpenAI model with a custom base URL.

    The second tool needs the first one's answer. Tools are offered as the task allows, with
    pydantic-ai's ``prepare`` hook: ``get_weather`` once the city is known, and each tool until it
    has answered (the 0.5B model otherwise repeats a call that already answered or guesses a
    city), so the run ends in a text answer.
    """
    pytest.importorskip("pydantic_ai", reason="pip install 'tooldialect[clients]'")
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.usage import UsageLimits

    model = OpenAIChatModel("qwen", provider=OpenAIProvider(base_url=base_url, api_key="unused"))
    agent = Agent(model, model_settings=ModelSettings(temperature=0, max_tokens=100))
    done: set[str] = set()
    needs = {"get_weather": "get_current_city"}

    async def when_useful(ctx: RunContext[object], tool: ToolDefinition) -> ToolDefinition | None:
        ready = needs.get(tool.name, "") in done | {""}
        return tool if ready and tool.name not in done else None

    @agent.tool_plain(prepare=when_useful)
    def get_current_city() -> str:
        """The city the user is in right now."""
        done.add("get_current_city")
        return "Lyon"

    @agent.tool_plain(prepare=when_useful)
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city.strip().lower() != "lyon":
            return f"unknown city {city!r}; call get_current_city first"
        done.add("get_weather")
        return "Sunny, 24 C in Lyon"

    result = agent.run_sync(
        "What's the weather where I am right now?", usage_limits=UsageLimits(request_limit=6)
    )
    steps = [
        [p for p in m.parts if isinstance(p, ToolCallPart)]
        for m in result.all_messages()
        if isinstance(m, ModelResponse)
    ]
    tool_steps = [s for s in steps if s]
    assert len(tool_steps) >= 2, steps
    called = [(p.tool_name, p.args_as_dict()) for s in tool_steps for p in s]
    assert ("get_weather", {"city": "Lyon"}) in called  # the first tool's answer fed the second
    assert isinstance(result.output, str) and result.output.strip()
