"""Compiled chat templates kept on disk, so a new process skips the Jinja compile.

Compiling a chat template (lex, parse, generate the budgeted Python code, ``compile``) costs about
20 ms on a laptop core, and every new process pays it before its first request: that alone is
a third of the cold per-request overhead at 50 tools. The compiled code object is what Python
keeps in ``__pycache__`` for a module, and it is kept the same way here: marshalled, in
``$TOOLDIALECT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/tooldialect/templates``, else
``~/.cache/tooldialect/templates``), one file per template text, with the variables the template
reads. Set ``TOOLDIALECT_CACHE_DIR`` to an empty string to turn it off.

The key hashes the template text with what shapes the generated code: this module's and the
budget's source (the code generator lives there), Jinja's version and Python's. A file that is
unreadable, truncated or of another shape is ignored and written again; a cache directory that
cannot be written is ignored. Like ``__pycache__``, the directory must be writable by you
alone: code loaded from it runs (inside the same sandbox calls as freshly compiled code).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import jinja2

from . import budget

__all__ = ["cache_dir", "compile_cached"]


def _code_fingerprint() -> str:
    parts = [jinja2.__version__, sys.version]
    for module in (budget, sys.modules[__name__]):
        try:
            parts.append(Path(str(module.__file__)).read_text(encoding="utf-8"))
        except OSError:  # no source to hash: never reuse a file written by other code
            parts.append(os.urandom(16).hex())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_FINGERPRINT = _code_fingerprint()


def cache_dir() -> Path | None:
    """Where compiled templates are kept, or ``None`` when the cache is off."""
    env = os.environ.get("TOOLDIALECT_CACHE_DIR")
    if env is not None:
        return Path(env) if env.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tooldialect" / "templates"


def _path(directory: Path, source: str) -> Path:
    digest = hashlib.sha256(f"{_FINGERPRINT}\0{source}".encode()).hexdigest()
    return directory / f"{digest[:40]}.jinjac"


def _load(path: Path) -> tuple[types.CodeType, frozenset[str] | None] | None:
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], types.CodeType)):
        return None
    code, names = data
    if names is None:
        return code, None
    if isinstance(names, tuple) and all(isinstance(n, str) for n in names):
        return code, frozenset(names)
    return None


def _store(path: Path, code: types.CodeType, names: frozenset[str] | None) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".jinjac")
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps((code, None if names is None else tuple(sorted(names)))))
        os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
    except OSError:
        pass  # a read-only or full disk only costs the next process a compile


def compile_cached(env: Any, source: str) -> jinja2.Template:
    """``env.from_string(source)``, with the code object read from / written to the cache.

    ``env`` is a :class:`~tooldialect.prompt.budget.BudgetedSandbox`; its ``td_variables`` is
    set as a fresh compile would set it. Compile errors propagate as from ``from_string``."""
    directory = cache_dir()
    path = _path(directory, source) if directory is not None else None
    found = _load(path) if path is not None else None
    if found is not None:
        code, names = found
        env.td_variables = names
    else:
        env.td_variables = None
        code = env.compile(source)
        names = env.td_variables
        if path is not None:
            _store(path, code, names)
    template: jinja2.Template = env.template_class.from_code(
        env, code, env.make_globals(None), None
    )
    return template
