"""MCPTools against real MCP servers started by the tests, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_fixtures import alive, require_sdk, serve_http, stdio_entry, wait_gone

from agent_script import ScriptedLlama, calls, text
from tooldialect import (
    Agent,
    MCPError,
    MCPServerConfig,
    MCPTool,
    MCPToolNameError,
    MCPTools,
    Tool,
    ToolResult,
    UnsupportedSchemaError,
    build_grammar,
)
from tooldialect.dialect.builtins import get_builtin

require_sdk()

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def http_server_url() -> Iterator[str]:
    """The small server over streamable HTTP on a loopback port."""
    with serve_http("mcp_small_server.py") as url:
        yield url


@pytest.fixture(scope="module")
def small() -> Iterator[MCPTools]:
    with MCPTools({"mcpServers": {"small": stdio_entry("mcp_small_server.py")}}) as tools:
        yield tools


@pytest.fixture(scope="module")
def wide() -> Iterator[tuple[MCPTools, list[warnings.WarningMessage]]]:
    servers = {
        "crm": stdio_entry("mcp_wide_server.py"),
        "faulty": stdio_entry("mcp_faulty_server.py", timeout=3),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tools = MCPTools({"mcpServers": servers}, timeout=30).start()
    try:
        yield tools, caught
    finally:
        tools.close()


def by_name(tools: MCPTools) -> dict[str, MCPTool]:
    return {t.name: t for t in tools.tools() if isinstance(t, MCPTool)}


def test_stdio_tools_are_named_by_server_and_keep_the_servers_schema(small: MCPTools) -> None:
    offered = by_name(small)
    assert {"small_get_weather", "small_add", "small_forecast", "small_snapshot"} <= set(offered)
    add = offered["small_add"]
    assert (add.server, add.remote_name) == ("small", "add")
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]
    assert add.description == "Add two integers."
    assert add.to_openai()["function"]["name"] == "small_add"


def test_calls_run_on_the_server(small: MCPTools) -> None:
    assert small.call("small_get_weather", {"city": "Paris"}).text == '{"result": "18 C, cloudy"}'
    out = small.call("small_forecast", {"city": "Oslo", "days": 2})
    assert out.structured == {"city": "Oslo", "days": 2, "summary": "mild for 2 days (C)"}
    assert json.loads(out.text) == out.structured and not out.is_error


def test_an_image_becomes_a_note_and_is_kept_for_the_caller(small: MCPTools) -> None:
    out = small.call("small_snapshot", {"camera": "door"})
    assert "camera door" in out.text and "image/png" in out.text
    assert "kept for the caller" in out.text
    (image,) = out.media
    assert image.type == "image" and image.mime_type == "image/png" and image.data


def test_a_server_side_argument_error_goes_back_as_a_result(small: MCPTools) -> None:
    out = small.call("small_add", {"a": "many"})
    assert out.is_error and out.error == "tool_error"
    assert "small" in out.text and "add" in out.text


def test_the_tool_list_is_cached_until_the_server_says_it_changed(small: MCPTools) -> None:
    first = small.tools()
    assert small.tools() == first  # the same objects: nothing was re-listed
    assert "small_shout" not in by_name(small)
    assert small.call("small_grow").text == '{"result": "added shout"}'
    deadline = time.monotonic() + 20
    while "small_shout" not in by_name(small) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert small.call("small_shout", {"text": "hi"}).text == '{"result": "HI"}'


def test_an_agent_runs_mcp_tools_next_to_local_ones(small: MCPTools) -> None:
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    llm = ScriptedLlama(
        [calls(("small_add", {"a": 2, "b": 3}), ("double", {"x": 4})), text("5 and 8")]
    )
    agent = Agent(llm, tools=[double], mcp=small)
    result = agent.run("go")
    first, second = result.steps[0].calls
    assert (first.name, first.result, first.error) == ("small_add", '{"result": 5}', None)
    assert isinstance(first.value, ToolResult) and first.value.structured == {"result": 5}
    assert second.result == "8"
    sent = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert {"double", "small_add", "small_get_weather"} <= sent
    agent.close()
    assert small.call("small_add", {"a": 1, "b": 1}).text == '{"result": 2}'  # not ours to close

    def clash(a: int) -> int:
        return a

    with pytest.raises(MCPToolNameError, match="small_add"):
        Agent(llm, tools=[Tool.from_function(clash, name="small_add")], mcp=small)


def test_streamable_http_with_headers_from_the_environment(http_server_url: str) -> None:
    servers = {
        "mcpServers": {
            "web": {"type": "http", "url": http_server_url, "headers": {"X-Token": "${T}"}}
        }
    }
    with MCPTools(servers, environ={"T": "tok-123"}) as web:
        assert web.call("web_whoami").text == '{"result": "tok-123"}'
        assert web.call("web_add", {"a": 40, "b": 2}).text == '{"result": 42}'
        assert "web_get_weather" in by_name(web)


def test_fifty_realistic_schemas_are_offered_and_the_inexpressible_one_is_reported(
    wide: tuple[MCPTools, list[warnings.WarningMessage]],
) -> None:
    tools, caught = wide
    crm = [t for t in by_name(tools).values() if t.server == "crm"]
    assert len(crm) == 60
    text_of = json.dumps([t.parameters for t in crm])
    for keyword in ('"$ref"', '"anyOf"', '"enum"', '"pattern"', '"format"', '"const"'):
        assert keyword in text_of
    (skipped,) = tools.skipped
    assert "'crm'" in str(skipped) and "'search_exclusive'" in str(skipped)
    assert skipped.pointer == "/properties/query/pattern"
    assert any("search_exclusive" in str(w.message) for w in caught)
    # every offered schema compiles together into one tool-call grammar
    for dialect in ("hermes", "llama-3"):
        grammar = build_grammar(get_builtin(dialect), [t.to_openai() for t in crm])
        assert grammar is not None and "crm_orders_create" in grammar.gbnf
    out = tools.call("crm_orders_create", {"item": {"name": "desk", "priority": "high"}})
    assert out.structured == {
        "tool": "orders_create",
        "arguments": {"item": {"name": "desk", "priority": "high"}},
    }


def test_on_unsupported_raise_names_server_and_tool() -> None:
    servers = {"mcpServers": {"crm": stdio_entry("mcp_wide_server.py")}}
    with pytest.raises(UnsupportedSchemaError, match="'crm', tool 'search_exclusive'"):
        MCPTools(servers, on_unsupported="raise").start()


def test_an_agent_reports_mcp_failures_to_the_model(
    wide: tuple[MCPTools, list[warnings.WarningMessage]],
) -> None:
    tools, _ = wide
    llm = ScriptedLlama([calls(("faulty_refuse", {"item": "milk"})), text("out of milk")])
    result = Agent(llm, mcp=tools).run("buy milk")
    (call,) = result.steps[0].calls
    assert call.error == "tool_error" and "no stock of milk" in call.result
    assert result.messages[-2]["content"] == call.result and result.answer == "out of milk"


def test_failures_hangs_and_a_dying_server_go_back_as_results(
    wide: tuple[MCPTools, list[warnings.WarningMessage]],
) -> None:
    tools, _ = wide
    assert tools.call("faulty_ok").text == '{"result": "fine"}'
    out = tools.call("faulty_refuse", {"item": "eggs"})
    assert (out.error, out.is_error) == ("tool_error", True) and "no stock of eggs" in out.text
    out = tools.call("faulty_crash")
    assert out.error == "tool_error" and "crash" in out.text
    started = time.monotonic()
    out = tools.call("faulty_hang")
    assert out.error == "timeout" and "within 3 s" in out.text
    assert time.monotonic() - started < 15
    assert tools.call("faulty_ok").text == '{"result": "fine"}'  # the session survives a timeout
    server_pid = tools.call("faulty_pid").structured["result"]
    out = tools.call("faulty_die")
    assert out.error == "server_down" and "died" in out.text
    assert wait_gone(server_pid)
    out = tools.call("faulty_ok")
    assert out.error == "server_down" and "down" in out.text
    # the other server is unaffected
    assert not tools.call("crm_users_get", {"id": "usr_0000abcd"}).is_error


def test_a_server_that_does_not_start_is_a_clear_error() -> None:
    bad = MCPServerConfig("ghost", command=sys.executable, args=("-c", "import sys; sys.exit(2)"))
    with pytest.raises(MCPError, match="'ghost'"), open(os.devnull, "w") as quiet:
        MCPTools(bad, startup_timeout=60, errlog=quiet).start()


def test_closing_stops_the_server_process() -> None:
    tools = MCPTools({"mcpServers": {"s": stdio_entry("mcp_faulty_server.py")}}).start()
    pid = tools.call("s_pid").structured["result"]
    assert alive(pid)
    tools.close()
    assert wait_gone(pid)
    tools.close()  # twice is fine
    with pytest.raises(MCPError, match="not started"):
        tools.call("s_pid")


@pytest.mark.parametrize("with_block", [True, False])
def test_ctrl_c_during_a_call_leaves_no_server_behind(with_block: bool) -> None:
    """SIGINT to the client while a call hangs: the server process must end with it."""
    entry = stdio_entry("mcp_faulty_server.py")
    script = textwrap.dedent(
        f"""
        import json, signal, sys
        # a shell without job control starts background jobs with SIGINT ignored, and Python
        # then installs no Ctrl-C handler: give the child the one an interactive program has
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path.insert(0, {str(SRC)!r})
        from tooldialect import MCPTools
        servers = {{"mcpServers": {{"s": {json.dumps(entry)}}}}}
        tools = MCPTools(servers, timeout=600)
        if {with_block}:
            with tools:
                print(tools.call("s_pid").structured["result"], flush=True)
                tools.call("s_hang")
        else:
            tools.start()  # no with block: the finalizer closes it at exit
            print(tools.call("s_pid").structured["result"], flush=True)
            tools.call("s_hang")
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), proc.stderr.read() if proc.stderr else line
    server_pid = int(line)
    assert alive(server_pid)
    time.sleep(0.5)  # inside the hanging call
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "KeyboardInterrupt" in err
    assert wait_gone(server_pid), "the MCP server outlived its client"


def test_the_example_server_serves_its_tools() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "mcp_weather_server.py"
    servers = {"mcpServers": {"weather": {"command": sys.executable, "args": [str(example)]}}}
    with MCPTools(servers) as weather:
        assert sorted(by_name(weather)) == ["weather_book_table", "weather_current_weather"]
        out = weather.call("weather_current_weather", {"city": "Oslo", "unit": "fahrenheit"})
        assert out.text == '{"result": "39 F, rain"}'
        out = weather.call("weather_current_weather", {"city": "Atlantis"})
        assert out.error == "tool_error" and "known cities" in out.text
