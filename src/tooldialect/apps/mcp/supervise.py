"""Runs a stdio MCP server and reports how it ended: ``python supervise.py -- command args...``.

The SDK's stdio client owns the server's process and never shows it, so a server that dies at
start surfaces as "Connection closed". Started through this script, the server inherits its
stdin, stdout and stderr untouched; when it ends, one marker line on stderr (:data:`EXIT_MARK`
and a JSON object: ``code``, and ``error`` when it could not be run at all) tells the client its
exit code. The script is run by file path, so it uses the standard library only and works from
any interpreter; the SDK's process-group kill reaches the server too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

__all__ = ["EXIT_MARK", "main", "read_mark"]

EXIT_MARK = "\x1ftooldialect-mcp-exit "
"""The start of the line that carries the exit status (a unit separator first: no server
writes that by accident)."""


def report(status: dict[str, Any]) -> None:
    """Write the marker line (stderr may be closed or broken: then nothing is told)."""
    try:
        sys.stderr.write(f"{EXIT_MARK}{json.dumps(status)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def main(argv: list[str]) -> int:
    """Run ``argv`` (after ``--``) to its end; exit as it did (128 + n for signal n)."""
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        report({"code": 2, "error": "supervise.py: no command given after --"})
        return 2
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:  # not found, not executable: the shell's 127 and 126
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        report({"code": code, "error": f"{type(exc).__name__}: {exc}"})
        return code

    def forward(signum: int, _frame: Any) -> None:
        child.send_signal(signum)  # then wait for it, and still tell how it ended

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = child.wait()
    report({"code": code})
    return code if code >= 0 else 128 - code


def read_mark(line: str) -> tuple[str, dict[str, Any] | None]:
    """A stderr line split into the server's own text and the status the marker carries
    (the marker may end a line the server left unfinished); ``(line, None)`` without one."""
    at = line.find(EXIT_MARK)
    if at < 0:
        return line, None
    try:
        status = json.loads(line[at + len(EXIT_MARK) :])
    except ValueError:
        return line, None
    if not (isinstance(status, dict) and isinstance(status.get("code"), int)):
        return line, None
    return line[:at], status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
