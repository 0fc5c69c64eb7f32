"""``/v1/responses`` for real: ``tooldialect serve`` on a loopback port with Qwen2.5-Coder-0.5B
(native hermes calls), driven by the official ``openai`` client, the OpenAI Agents SDK's default
model (``OpenAIResponsesModel``), pydantic-ai (which sends ``allowed_tools``) and smolagents
(which sends ``tool_choice="required"``)."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from models.schema_check import schema_errors
from tooldialect.apps.responses import reassemble

pytestmark = [pytest.mark.model, pytest.mark.slow]

HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
# the Responses API's flat, strict tools as its SDKs send them, not tool_defs' chat shape
WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
TIME: dict[str, Any] = {
    "type": "function",
    "name": "get_time",
    "description": "Get the local time in a timezone",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
        "additionalProperties": False,
    },
    "strict": True,
}
TOOLS = [WEATHER, TIME]
SCHEMAS: dict[str, dict[str, Any]] = {t["name"]: t["parameters"] for t in TOOLS}
ASK = "What's the weather in Paris?"
GREEDY: dict[str, Any] = {"model": "qwen", "temperature": 0, "max_output_tokens": 60}


def calls_of(response: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(name, arguments)`` of each function_call item, checked against its schema."""
    out = []
    for item in response.output:
        if item.type == "function_call":
            args = json.loads(item.arguments)
            assert schema_errors(args, SCHEMAS[item.name]) == [], item
            assert item.call_id and item.id
            out.append((item.name, args))
    return out


def test_function_call_batch_and_stream_agree(client: Any) -> None:
    whole = client.responses.create(input=ASK, tools=TOOLS, tool_choice="required", **GREEDY)
    assert whole.status == "completed" and whole.object == "response"
    calls = calls_of(whole)
    assert calls and calls[0][0] == "get_weather" and "paris" in calls[0][1]["city"].lower()
    assert whole.usage.input_tokens > 0 and whole.usage.output_tokens > 0
    events = list(
        client.responses.create(
            input=ASK, tools=TOOLS, tool_choice="required", stream=True, **GREEDY
        )
    )
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.function_call_arguments.delta") > 1  # really streamed
    rebuilt = reassemble(e.model_dump(mode="json") for e in events)
    final = events[-1].response
    assert [(i["name"], json.loads(i["arguments"])) for i in rebuilt["output"]] == calls
    assert calls_of(final) == calls


def test_tool_result_turn_through_previous_response_id(client: Any) -> None:
    first = client.responses.create(input=ASK, tools=TOOLS, tool_choice="required", **GREEDY)
    call = next(i for i in first.output if i.type == "function_call")
    second = client.responses.create(
        input=[
            {"type": "function_call_output", "call_id": call.call_id, "output": "17 C, light rain"}
        ],
        previous_response_id=first.id,
        tools=TOOLS,
        **GREEDY,
    )
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens  # the stored turn came back
    if not calls_of(second):
        assert second.output_text.strip()
    with pytest.raises(Exception) as err:  # openai.NotFoundError
        client.responses.create(input="hi", previous_response_id="resp_missing", **GREEDY)
    assert getattr(err.value, "status_code", None) == 404 and "resp_missing" in str(err.value)


def test_allowed_tools_subset_is_enforced(client: Any) -> None:
    """Asked about the weather, with only get_time allowed: the call is get_time."""
    r = client.responses.create(
        input=ASK,
        tools=TOOLS,
        tool_choice={
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "function", "name": "get_time"}],
        },
        **GREEDY,
    )
    assert [name for name, _ in calls_of(r)] == ["get_time"]
    chat = client.chat.completions.create(
        model="qwen",
        messages=[{"role": "user", "content": ASK}],
        tools=[
            {"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
            for t in TOOLS
        ],
        tool_choice={
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": "get_time"}}],
            },
        },
        temperature=0,
        max_tokens=60,
    )
    assert [c.function.name for c in chat.choices[0].message.tool_calls or []] == ["get_time"]


def test_json_schema_text_format_and_cut_reply(client: Any) -> None:
    person = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    r = client.responses.create(
        input="Ann is 31. Describe her as JSON.",
        text={
            "format": {"type": "json_schema", "name": "person", "schema": person, "strict": True}
        },
        **GREEDY,
    )
    assert schema_errors(json.loads(r.output_text), person) == []
    cut = client.responses.create(
        input="Tell me a long story.", **{**GREEDY, "max_output_tokens": 4}
    )
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert cut.usage.output_tokens == 4


def test_hosted_tools_are_a_400(client: Any) -> None:
    with pytest.raises(Exception) as err:  # openai.BadRequestError
        client.responses.create(input=ASK, tools=[WEATHER, {"type": "web_search"}], **GREEDY)
    assert getattr(err.value, "status_code", None) == 400
    assert "web_search" in str(err.value) and "function" in str(err.value)


def test_agents_sdk_runs_two_tool_steps(base_url: str) -> None:
    """The Agents SDK's default model (Responses API, ``strict`` on every function). Each step
    offers the tool the task needs next (``is_enabled``), so the 0.5B model's second call needs
    the first call's answer; the run stops at ``get_weather``'s result."""
    pytest.importorskip("agents", reason=HINT)
    from agents import (
        Agent,
        ModelSettings,
        OpenAIResponsesModel,
        Runner,
        StopAtTools,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    done: list[str] = []

    @function_tool(is_enabled=lambda ctx, agent: not done)
    def get_current_city() -> str:
        """The city the user is in right now."""
        done.append("get_current_city")
        return "Lyon"

    @function_tool(is_enabled=lambda ctx, agent: bool(done))
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        done.append(f"get_weather:{city}")
        return f"Sunny, 24 C in {city}"

    model = OpenAIResponsesModel(
        model="qwen", openai_client=AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    )
    agent = Agent(
        name="weather",
        instructions="Answer with the tools.",
        model=model,
        tools=[get_current_city, get_weather],
        model_settings=ModelSettings(temperature=0, max_tokens=80, tool_choice="required"),
        reset_tool_choice=False,
        tool_use_behavior=StopAtTools(stop_at_tool_names=["get_weather"]),
    )
    result = Runner.run_sync(agent, "What's the weather where I am?", max_turns=4)
    assert done[0] == "get_current_city"
    assert done[1].lower() == "get_weather:lyon"  # the first tool's answer fed the second
    assert result.final_output == "Sunny, 24 C in Lyon"
    responses = result.raw_responses
    assert len(responses) == 2 and all(r.usage.output_tokens > 0 for r in responses)


def test_pydantic_ai_sends_allowed_tools_and_it_holds(base_url: str) -> None:
    """pydantic-ai's Responses model turns a multi-tool ``tool_choice`` into ``allowed_tools``
    (every tool stays on the wire, for the prompt cache); the server must honour the subset."""
    pytest.importorskip("pydantic_ai", reason=HINT)
    import httpx
    from openai import AsyncOpenAI
    from pydantic_ai.direct import model_request_sync
    from pydantic_ai.messages import ModelRequest, ToolCallPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import ToolDefinition

    sent: list[dict[str, Any]] = []

    async def record(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    http = httpx.AsyncClient(event_hooks={"request": [record]}, timeout=600)
    # typed against openai's own httpx fork; a plain httpx client is what it takes at runtime
    openai_client = AsyncOpenAI(base_url=base_url, api_key="unused", http_client=cast(Any, http))
    model = OpenAIResponsesModel("qwen", provider=OpenAIProvider(openai_client=openai_client))
    tools = [
        ToolDefinition(
            name=t["name"], description=t["description"], parameters_json_schema=t["parameters"]
        )
        for t in TOOLS
    ] + [
        ToolDefinition(
            name="get_date",
            description="Today's date",
            parameters_json_schema={"type": "object", "properties": {}},
        )
    ]
    response = model_request_sync(
        model,
        [ModelRequest.user_text_prompt(ASK)],
        model_settings={
            "temperature": 0,
            "max_tokens": 60,
            "tool_choice": ["get_time", "get_date"],
        },
        model_request_parameters=ModelRequestParameters(
            function_tools=tools, allow_text_output=True
        ),
    )
    choice = sent[-1]["tool_choice"]
    assert choice["type"] == "allowed_tools", choice
    assert {t["name"] for t in sent[-1]["tools"]} == {"get_weather", "get_time", "get_date"}
    called = [p.tool_name for p in response.parts if isinstance(p, ToolCallPart)]
    assert called and set(called) <= {"get_time", "get_date"}, response.parts


def test_smolagents_tool_calling_agent(base_url: str) -> None:
    """smolagents' ToolCallingAgent sends ``tool_choice="required"`` on every step; each step's
    reply is a call, the first to the weather tool, and the run ends in ``final_answer`` (the
    tool's result says to: unprompted, the 0.5B model repeats the weather call until
    ``max_steps``)."""
    smolagents = pytest.importorskip("smolagents", reason=HINT)

    @smolagents.tool  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city name.
        """
        return f"Sunny, 24 C in {city}. Now give this to the user with final_answer."

    model = smolagents.OpenAIServerModel(
        model_id="qwen", api_base=base_url, api_key="unused", temperature=0, max_tokens=80
    )
    agent = smolagents.ToolCallingAgent(
        tools=[get_weather], model=model, max_steps=3, verbosity_level=0
    )
    answer = agent.run("What's the weather in Paris? Use the tool, then give the final answer.")
    steps = [s for s in agent.memory.steps if isinstance(s, smolagents.memory.ActionStep)]
    names = [c.name for s in steps for c in s.tool_calls or []]
    assert names and names[0] == "get_weather", names
    assert all(s.tool_calls for s in steps), "a step came back without a call under required"
    assert names[-1] == "final_answer" and "24 C" in str(answer)
