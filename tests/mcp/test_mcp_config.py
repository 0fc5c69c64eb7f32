"""The mcpServers format, ${VAR} expansion, tool naming and result conversion (no server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tooldialect import MCPConfigError, MCPServerConfig, UnsupportedSchemaError, load_mcp_config
from tooldialect.apps.mcp import make_name, result_from_mcp
from tooldialect.apps.mcp.mcp_values import check_schema

CLAUDE_DESKTOP = {
    "mcpServers": {
        "files": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"],
            "env": {"LOG": "${LOG_LEVEL:-info}"},
            "cwd": "${HOME}",
        },
        "search": {
            "type": "http",
            "url": "https://search.example/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "timeout": 12.5,
        },
        "old": {"command": "old-server", "disabled": True},
    }
}


def test_an_mcp_servers_document_loads_with_variables_expanded() -> None:
    environ = {"HOME": "/home/ann", "TOKEN": "s3cret"}
    files, search = load_mcp_config(CLAUDE_DESKTOP, environ=environ)
    assert files == MCPServerConfig(
        name="files",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-filesystem", "/home/ann/notes"),
        env={"LOG": "info"},
        cwd="/home/ann",
    )
    assert files.transport == "stdio" and search.transport == "http"
    assert search.url == "https://search.example/mcp"
    assert search.headers == {"Authorization": "Bearer s3cret"}
    assert search.timeout == 12.5


def test_a_file_and_the_vs_code_form_load_too(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"a": {"command": "a-server", "args": ["--x"]}}}))
    (only,) = load_mcp_config(path, environ={})
    assert (only.name, only.command, only.args) == ("a", "a-server", ("--x",))
    (bare,) = load_mcp_config({"b": {"url": "http://127.0.0.1:1/mcp"}}, environ={})
    assert bare.url == "http://127.0.0.1:1/mcp"


@pytest.mark.parametrize(
    ("document", "words"),
    [
        (
            {"mcpServers": {"s": {"command": "x", "args": ["${NOPE}"]}}},
            ["'s'", "${NOPE}", "export NOPE"],
        ),
        ({"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"A": "${K}"}}}}, ["'s'", "${K}"]),
        ({"mcpServers": {"s": {"command": "x", "url": "http://h/mcp"}}}, ["exactly one", "'s'"]),
        ({"mcpServers": {"s": {}}}, ["exactly one"]),
        ({"mcpServers": {"s": {"type": "sse", "url": "http://h/sse"}}}, ["SSE", "streamable"]),
        ({"mcpServers": {"s": {"type": "websocket", "url": "ws://h"}}}, ["unknown type"]),
        ({"mcpServers": {"s": {"command": "x", "args": "--flag"}}}, ["'args'", "list"]),
        ({"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}, ["'env'"]),
        ({"mcpServers": {"s": {"url": "ftp://h"}}}, ["http://"]),
        ({"mcpServers": {"s": {"command": "x", "timeout": "soon"}}}, ["'timeout'"]),
        ({"mcpServers": ["x"]}, ["must map"]),
    ],
)
def test_a_bad_entry_is_a_clear_config_error(document: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(MCPConfigError) as caught:
        load_mcp_config(document, environ={})
    for word in words:
        assert word in str(caught.value)


def test_an_unreadable_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(MCPConfigError, match="cannot read"):
        load_mcp_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MCPConfigError, match="not valid JSON"):
        load_mcp_config(bad)


def test_names_default_to_server_and_tool_and_can_be_configured() -> None:
    assert make_name("{server}_{tool}", "files", "read") == "files_read"
    assert make_name("{server}_{tool}", "my server", "web/fetch") == "my_server_web_fetch"
    assert make_name("{tool}", "files", "read") == "read"
    assert make_name(lambda s, t: f"{t}@{s}", "files", "read") == "read@files"


def test_a_schema_the_compiler_cannot_express_names_server_and_tool() -> None:
    good = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert check_schema("web", "find", good) == good
    assert check_schema("web", "ping", None) == {"type": "object", "properties": {}}
    # lookaround is outside the regex subset a grammar can express
    bad = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(?!x$).*"}}}
    with pytest.raises(UnsupportedSchemaError) as caught:
        check_schema("web", "find", bad)
    assert "'web'" in str(caught.value) and "'find'" in str(caught.value)
    assert caught.value.pointer == "/properties/q/pattern"
    with pytest.raises(UnsupportedSchemaError, match="must describe an object"):
        check_schema("web", "find", {"type": "string"})


def part(kind: str, **fields: Any) -> Any:
    return SimpleNamespace(type=kind, **fields)


def test_results_become_text_structured_json_and_notes_for_media() -> None:
    picture = part("image", data="aGVsbG8gd29ybGQ=", mime_type="image/png")
    result = SimpleNamespace(
        content=[part("text", text="a caption"), picture],
        structured_content=None,
        is_error=False,
    )
    out = result_from_mcp("cam", "snap", result)
    assert out.text.splitlines()[0] == "a caption"
    assert "image/png" in out.text.splitlines()[1] and "kept for the caller" in out.text
    assert out.media == (picture,) and out.raw is result and not out.is_error

    structured = SimpleNamespace(
        content=[part("text", text='{"t": 18}')], structured_content={"t": 18}, is_error=False
    )
    out = result_from_mcp("w", "temp", structured)
    assert json.loads(out.text) == {"t": 18} and out.structured == {"t": 18}

    failed = SimpleNamespace(content=[part("text", text="no such city")], is_error=True)
    out = result_from_mcp("w", "temp", failed)
    assert out.is_error and out.error == "tool_error"
    assert "no such city" in out.text and "'w'" in out.text and out.text.startswith("Error:")

    resource = part("resource", resource=SimpleNamespace(uri="file:///a.txt", text="hello"))
    blob = part("resource", resource=SimpleNamespace(uri="file:///a.bin", mime_type="x/bin"))
    link = part("resource_link", uri="file:///b.txt", name="b")
    out = result_from_mcp("f", "read", SimpleNamespace(content=[resource, blob, link]))
    assert "hello" in out.text and "file:///a.bin (x/bin)" in out.text
    assert "file:///b.txt b" in out.text and len(out.media) == 3


def run_python(code: str) -> str:
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {src!r})\n{code}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.strip()


def test_the_sdk_is_optional_and_its_absence_says_how_to_install_it() -> None:
    assert run_python("import tooldialect; print('mcp' in sys.modules)") == "False"
    code = (
        "sys.modules['mcp'] = None  # as if not installed\n"
        "from tooldialect import MCPError, MCPTools\n"
        "try:\n"
        "    MCPTools({'mcpServers': {'s': {'command': 'x'}}}).start()\n"
        "except MCPError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'tooldialect[mcp]'" in run_python(code)
