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


def start_failure(entry: dict[str, object], errlog: io.StringIO | None = None) -> str:
    """The message of the ``MCPError`` starting one server ``entry`` raises."""
    with pytest.raises(MCPError) as caught:
        MCPTools({"mcpServers": {"w": entry}}, startup_timeout=30, errlog=errlog).start()
    return str(caught.value)


def test_a_server_that_exits_says_its_exit_code_and_stderr() -> None:
    code = "import sys; sys.stderr.write('config missing\\n'); sys.exit(3)"
    errlog = io.StringIO()
    text = start_failure({"command": sys.executable, "args": ["-c", code]}, errlog)
    assert "exited with code 3" in text, text
    assert text.endswith("its stderr ended with:\n  config missing"), text
    assert errlog.getvalue() == "config missing\n"  # the exit marker is not passed on


def test_a_missing_module_says_exit_code_1_and_the_module_error() -> None:
    text = start_failure({"command": sys.executable, "args": ["-c", "import nonexistent_module"]})
    assert "exited with code 1" in text, text
    assert "ModuleNotFoundError: No module named 'nonexistent_module'" in text, text


def test_an_unfinished_stderr_line_is_kept_apart_from_the_exit_code() -> None:
    code = "import sys; sys.stderr.write('no newline'); sys.exit(4)"
    text = start_failure({"command": sys.executable, "args": ["-c", code]})
    assert "exited with code 4" in text and text.endswith("ended with:\n  no newline"), text


def test_a_command_that_does_not_exist_is_named() -> None:
    text = start_failure({"command": "no-such-mcp-server-xyz"})
    assert "could not be run, exit code 127: FileNotFoundError" in text, text
    assert "'no-such-mcp-server-xyz'" in text


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_killed_server_names_the_signal() -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    text = start_failure({"command": sys.executable, "args": ["-c", code]})
    assert "killed by SIGKILL (exit code 137)" in text, text


def test_a_refused_http_server_names_the_connection_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    servers = {"mcpServers": {"h": {"url": f"http://127.0.0.1:{port}/mcp"}}}
    with pytest.raises(MCPError) as caught:
        MCPTools(servers, startup_timeout=30).start()
    text = str(caught.value)
    assert "ExceptionGroup" not in text
    assert f"url http://127.0.0.1:{port}/mcp" in text and "ConnectError" in text, text
    assert "ConnectionRefusedError" in text, text
