"""MCP tools through tool search: 60 realistic CRUD tools of a real stdio server are searched,
not offered; the tool found is offered next and runs on the server."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from mcp_fixtures import require_sdk, stdio_entry

from agent_script import ScriptedLlama, calls, text
from tooldialect import Agent, MCPTools
from tooldialect.apps.tool_search import SEARCH_ABOVE, SEARCH_TOOL

require_sdk()


@pytest.fixture(scope="module")
def crm() -> Iterator[MCPTools]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the server's one inexpressible tool is skipped
        with MCPTools({"mcpServers": {"crm": stdio_entry("mcp_wide_server.py")}}) as tools:
            yield tools


def test_mcp_tools_are_searched_by_default_and_the_found_one_runs_on_the_server(
    crm: MCPTools,
) -> None:
    assert len(crm.tools()) > SEARCH_ABOVE  # so the default searches
    item = {"name": "desk", "priority": "high"}
    llm = ScriptedLlama(
        [
            calls((SEARCH_TOOL, {"query": "create a new order"})),
            calls(("crm_orders_create", {"item": item})),
            text("Ordered."),
        ]
    )
    result = Agent(llm, mcp=crm).run("Order a desk, high priority.")
    assert result.answer == "Ordered."
    offered = [[t["function"]["name"] for t in r["tools"]] for r in llm.requests]
    # the request's best matches first (3 of 60), then what the search found, appended
    assert offered[0][0] == SEARCH_TOOL and len(offered[0]) == 4
    assert all(name.startswith("crm_orders_") for name in offered[0][1:])
    assert offered[1][: len(offered[0])] == offered[0] and "crm_orders_create" in offered[1]
    assert offered[2] == offered[1]
    assert "crm_orders_create(item, notify)" in result.steps[0].calls[0].result
    ran = result.steps[1].calls[0]
    assert ran.error is None and '"orders_create"' in ran.result and '"desk"' in ran.result
    # the definition offered is the server's own, as without search
    (tool,) = [t for t in crm.tools() if t.name == "crm_orders_create"]
    assert tool.to_openai() in llm.requests[1]["tools"]


def test_search_can_be_turned_off_for_mcp_tools(crm: MCPTools) -> None:
    llm = ScriptedLlama([text("hi")])
    Agent(llm, mcp=crm, tool_search=False).run("hello")
    assert len(llm.requests[0]["tools"]) == len(crm.tools())
