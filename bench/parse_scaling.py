"""Adversarial parser input and a clock-free measure of parsing work, shared by
``bench/fuzz.py scaling`` (wall-clock ratios) and ``tests/test_fuzz.py`` (step-count ratios, which
a loaded machine cannot skew)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from bench.fuzz_cases import FUZZ_TOOLS, dialect_markers

__all__ = ["adversarial_output", "parse_steps"]


def adversarial_output(name: str, size: int) -> str:
    """``size`` characters of every marker of dialect ``name`` cut in half, each followed by an
    unclosed brace: many openers whose calls never close, the input a rescan makes quadratic."""
    markers = [m for m in dialect_markers(name) if len(m) < 200]
    unit = "".join(m[: max(1, len(m) // 2)] + " x{" for m in markers)
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def parse_steps(name: str, text: str) -> int:
    """Lines of ``tooldialect.parse`` executed by ``parse_output(text)`` in dialect ``name``: a
    deterministic count of the parser's work (C-level scans such as ``str.find`` count as one)."""
    import tooldialect.parse
    from tooldialect.dialect.spec import DialectSpec
    from tooldialect.parse import parse_output

    parse_dir = tooldialect.parse.__file__.rsplit("__init__", 1)[0]
    spec = DialectSpec.builtin(name)
    parse_output("", spec, tools=FUZZ_TOOLS)  # warm the per-spec caches out of the count
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        return local if frame.f_code.co_filename.startswith(parse_dir) else None

    old = sys.gettrace()
    sys.settrace(calls)
    try:
        parse_output(text, spec, tools=FUZZ_TOOLS)
    finally:
        sys.settrace(old)
    return count
