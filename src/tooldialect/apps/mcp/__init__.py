"""MCP servers as tool sources: ``MCPTools(...)`` gives their tools as ``Tool`` objects.

Needs the optional ``mcp`` extra (``pip install 'tooldialect[mcp]'``); importing this package
works without it, starting servers raises ``MCPError`` with the install hint. See docs/mcp.md.

    with MCPTools("mcp.json") as mcp:
        agent = Agent(llm, mcp=mcp)
        agent.run("...")
"""

from __future__ import annotations

from .config import MCPServerConfig, expand_vars, load_mcp_config
from .mcp_values import Naming, make_name, result_from_mcp
from .server_tools import MCPServers, MCPTool, MCPTools, require_mcp

__all__ = [
    "MCPServerConfig",
    "MCPServers",
    "MCPTool",
    "MCPTools",
    "Naming",
    "expand_vars",
    "load_mcp_config",
    "make_name",
    "require_mcp",
    "result_from_mcp",
]
