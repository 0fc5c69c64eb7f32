"""A server that dies at start, or an HTTP server that refuses, says its real cause (issue 29
s2): not ``ExceptionGroup: unhandled errors in a TaskGroup``."""

from __future__ import annotations

import io
import socket
import sys

import pytest

from tooldialect import MCPError, MCPTools

pytest.importorskip("mcp")


def test_a_stdio_server_that_dies_at_start_shows_its_stderr() -> None:
    code = "import sys; print('starting up', file=sys.stderr); import no_such_module_xyz"
    servers = {"mcpServers": {"w": {"command": sys.executable, "args": ["-c", code]}}}
    errlog = io.StringIO()
    with pytest.raises(MCPError) as caught:
        MCPTools(servers, startup_timeout=30, errlog=errlog).start()
    text = str(caught.value)
    assert "ExceptionGroup" not in text
    assert "ModuleNotFoundError: No module named 'no_such_module_xyz'" in text
    assert "starting up" in text and "starting up" in errlog.getvalue()  # still passed on


def test_a_refused_http_server_names_the_connection_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    servers = {"mcpServers": {"h": {"url": f"http://127.0.0.1:{port}/mcp"}}}
    with pytest.raises(MCPError) as caught:
        MCPTools(servers, startup_timeout=30).start()
    assert "ExceptionGroup" not in str(caught.value)
    assert "ConnectError" in str(caught.value)
