"""A small model's agent calling real MCP servers (stdio, HTTP) and ``tooldialect chat --mcp``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_fixtures import require_sdk, serve_http, stdio_entry

import tooldialect
from tooldialect import Agent, CallFinished, FinalAnswer, MCPTools, StepStarted, ToolResult

require_sdk()
pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def http_server_url() -> Iterator[str]:
    """The small server over streamable HTTP on a loopback port."""
    with serve_http("mcp_small_server.py") as url:
        yield url


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Any:
    from llama_cpp import Llama

    handler = tooldialect.ToolChatHandler(parallel_tool_calls=False)
    return Llama(str(qwen_path), n_threads=2, n_ctx=4096, verbose=False, chat_handler=handler)


@pytest.fixture(scope="module")
def small() -> Iterator[MCPTools]:
    with MCPTools({"mcpServers": {"small": stdio_entry("mcp_small_server.py")}}) as tools:
        yield tools


def test_an_agent_calls_a_stdio_mcp_tool_and_answers_from_its_result(
    qwen: Any, small: MCPTools
) -> None:
    agent = Agent(
        qwen,
        mcp=small,
        system="You are a helpful assistant. Use the tools.",
        max_steps=2,
        tool_choice={"type": "function", "function": {"name": "small_get_weather"}},
        temperature=0.0,
        max_tokens=64,
    )
    events = list(agent.stream("What is the weather in Paris?"))
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert any(isinstance(e, StepStarted) and "small_get_weather" in e.tools for e in events)
    call, *later = [e for e in events if isinstance(e, CallFinished)]
    assert call.step == 1 and call.name == "small_get_weather" and call.error is None
    assert json.loads(call.arguments)["city"].strip().lower() == "paris"
    assert call.result == '{"result": "18 C, cloudy"}'  # computed by the server process
    assert isinstance(call.value, ToolResult) and call.value.structured == {
        "result": "18 C, cloudy"
    }
    # a 0.5B model often calls again in step 2; the same call again is not run a second time
    for again in later:
        same = json.loads(again.arguments) == json.loads(call.arguments)
        assert again.error == ("repeated_call" if same else again.error)
        assert not same or "Not run" in again.result
    assert final.result.outcome in ("answer", "length", "max_steps")


def test_an_agent_calls_an_http_mcp_tool_with_tool_choice_required(
    qwen: Any, http_server_url: str
) -> None:
    servers = {"mcpServers": {"calc": {"type": "http", "url": http_server_url}}}
    with MCPTools(servers) as calc:
        only_add = [t for t in calc.tools() if t.name == "calc_add"]
        assert only_add
        agent = Agent(
            qwen,
            tools=only_add,
            max_steps=2,
            tool_choice="required",
            temperature=0.0,
            max_tokens=64,
        )
        result = agent.run("Add 1234 and 5678 with the tool.")
        (call,) = result.steps[0].calls
        args = json.loads(call.arguments)
        assert call.name == "calc_add" and call.error is None
        assert call.result == json.dumps({"result": args["a"] + args["b"]})


def test_chat_offers_the_tools_of_an_mcp_json(qwen_path: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"small": stdio_entry("mcp_small_server.py")}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tooldialect.apps.cli",
            "chat",
            str(qwen_path),
            "--mcp",
            str(config),
            "--mcp-log",
            str(tmp_path / "servers.log"),
            "--tool-choice",
            "required",
            "--max-steps",
            "2",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            "--n-threads",
            "2",
        ],
        input="Add 2 and 3.\n/exit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "small_add" in proc.stderr and "small_get_weather" in proc.stderr  # the banner
    assert "-> small_" in proc.stdout
    assert '= {"result":' in proc.stdout  # a result that came back from the server


def test_the_mcp_agent_example_runs_offline(qwen_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "TOOLDIALECT_MODELS": str(qwen_path.parent),
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "mcp_agent.py"), "Weather in Tokyo?"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tools: weather_current_weather, weather_book_table" in proc.stdout
    # a result line under the call: the server answered (a city it lacks is a tool_error)
    assert re.search(r"-> weather_current_weather\(.*\)\n   (= \{|tool_error Error)", proc.stdout)
