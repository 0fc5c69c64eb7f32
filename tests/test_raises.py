"""Every exception the library raises on purpose is a ``ToolDialectError`` (errors.py): checked on
the source, each ``raise SomeClass(...)`` resolved in its module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tooldialect.errors import ToolDialectError

SRC = Path(__file__).resolve().parents[1] / "src"

# (module, class): raises that are not the library's errors, each for a protocol it must follow
ALLOWED = {
    # `python -m tooldialect.apps.X`: the exit status
    ("tooldialect.apps.cli", "SystemExit"),
    ("tooldialect.apps.chat", "SystemExit"),
    ("tooldialect.apps.serve", "SystemExit"),
    # json.dumps(default=...) must raise TypeError for what it cannot encode (jinja's tojson)
    ("tooldialect.prompt.template", "TypeError"),
    # jinja's sandbox protocol: raised inside a render, ChatTemplate turns it into
    # TemplateSecurityError
    ("tooldialect.prompt.template", "SecurityError"),
    # llama.cpp returned NULL for an allocation: Python's own error for that
    ("tooldialect.engine.in_process.sampling", "MemoryError"),
    # invariants of the library itself (unreachable)
    ("tooldialect.apps.agent", "AssertionError"),
    # control flow, caught where it is raised: a template mutating shared data is re-rendered on
    # copies; a garbled /slots answer sets that server aside
    ("tooldialect.prompt.template", "SharedMutation"),
    ("tooldialect.engine.llama_server.pool", "ValueError"),
    # llama-cpp-python's route prints a traceback for any other error; serve answers the
    # library's refusal itself (the request's 400)
    ("tooldialect.apps.serve", "HTTPException"),
}


def raised_classes(source: str) -> list[tuple[str, int]]:
    """Names of the classes ``source`` raises by calling them (``raise X(...)``, ``raise m.X``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id[:1].isupper():
                out.append((exc.id, node.lineno))
            elif isinstance(exc, ast.Attribute) and exc.attr[:1].isupper():
                out.append((exc.attr, node.lineno))
    return out


def test_every_raise_is_a_tooldialect_error() -> None:
    wrong = []
    for path in sorted((SRC / "tooldialect").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = importlib.import_module(name)
        for cls_name, line in raised_classes(path.read_text(encoding="utf-8")):
            cls = getattr(module, cls_name, None)
            if (name, cls_name) in ALLOWED:
                continue
            if not (isinstance(cls, type) and issubclass(cls, ToolDialectError)):
                wrong.append(f"{name}:{line} raises {cls_name}")
    assert wrong == []


def test_the_check_sees_raises() -> None:
    source = (
        "def f():\n    raise ValueError('x')\n\ndef g(e):\n    raise errors.ToolSpecError from e\n"
    )
    assert raised_classes(source) == [("ValueError", 2), ("ToolSpecError", 5)]
