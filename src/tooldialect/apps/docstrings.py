"""Split a docstring into its description and per-parameter docs (Google, NumPy, Sphinx styles).

Only what a tool schema needs: the text before the first section is the description, and each
documented parameter gets its text. Returns, raises and other sections are dropped.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_GOOGLE_ARGS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "kwargs"})
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_PARAM = re.compile(r"^\*{0,2}(\w+)(?:\s*,\s*\*{0,2}\w+)*\s*(?::\s*(.*))?$")
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]+?))?\s*:\s*(.*)$")


@dataclass
class ParsedDocstring:
    """A docstring split for a tool schema."""

    description: str = ""
    """The summary and body, without any section."""
    params: dict[str, str] = field(default_factory=dict)
    """Per-parameter text, by parameter name."""


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Parse ``doc``; the style is recognised per section, so mixed docstrings work too."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    out = ParsedDocstring()
    body: list[str] = []
    i = 0
    in_sections = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        # NumPy: a title line underlined with dashes
        if i + 1 < len(lines) and stripped and _NUMPY_RULE.match(lines[i + 1]):
            in_sections = True
            i = _numpy_section(lines, i + 2, stripped.lower(), out)
            continue
        google = _GOOGLE_SECTION.match(stripped) if not line.startswith((" ", "\t")) else None
        if google and google.group(1).strip().lower() in _GOOGLE_KNOWN:
            in_sections = True
            i = _google_section(lines, i + 1, google.group(1).strip().lower(), out)
            continue
        sphinx = _SPHINX_FIELD.match(stripped)
        if sphinx:
            in_sections = True
            i = _sphinx_field(lines, i, sphinx, out)
            continue
        if not in_sections:
            body.append(line)
        i += 1
    out.description = "\n".join(body).strip()
    return out


_GOOGLE_KNOWN = _GOOGLE_ARGS | frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "examples",
        "example",
        "note",
        "notes",
        "see also",
        "warning",
        "warnings",
        "attributes",
        "todo",
        "references",
    }
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())


def _google_section(lines: list[str], i: int, title: str, out: ParsedDocstring) -> int:
    """Read an indented Google section starting at ``i``; returns the first line after it."""
    entries: list[tuple[str, list[str]]] = []
    base: int | None = None
    while i < len(lines):
        line = lines[i]
        if line.strip() and _indent(line) == 0:
            break
        if line.strip():
            if base is None:
                base = _indent(line)
            m = _GOOGLE_PARAM.match(line.strip()) if _indent(line) == base else None
            if m:
                entries.append((m.group(1), [m.group(3)]))
            elif entries:
                entries[-1][1].append(line)
        i += 1
    if title in _GOOGLE_ARGS:
        for name, text in entries:
            out.params[name] = _join(text)
    return i


def _numpy_section(lines: list[str], i: int, title: str, out: ParsedDocstring) -> int:
    """Read a NumPy section body starting at ``i`` (after the dashes)."""
    entries: list[tuple[list[str], list[str]]] = []
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _NUMPY_RULE.match(lines[i + 1]):
            break  # the next section's title
        if line.strip() and _indent(line) == 0:
            m = _NUMPY_PARAM.match(line.strip())
            if m:
                head = line.strip().split(":", 1)[0]
                names = [n.strip().lstrip("*") for n in head.split(",")]
                entries.append((names, []))
        elif line.strip() and entries:
            entries[-1][1].append(line)
        i += 1
    if title in ("parameters", "params", "arguments", "args", "other parameters"):
        for names, text in entries:
            for name in names:
                out.params[name] = _join(text)
    return i


def _sphinx_field(lines: list[str], i: int, m: re.Match[str], out: ParsedDocstring) -> int:
    """Read one ``:field arg: text`` with its indented continuation lines."""
    kind, arg, text = m.group(1), (m.group(2) or "").strip(), [m.group(3)]
    i += 1
    while i < len(lines) and lines[i].strip() and not _SPHINX_FIELD.match(lines[i].strip()):
        text.append(lines[i])
        i += 1
    if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and arg:
        name = arg.split()[-1]  # ":param int x:" names x
        out.params[name] = _join(text)
    return i
