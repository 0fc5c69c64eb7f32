"""BFCL v4 test data: fetch the ``bfcl-eval`` wheel, read its single-turn categories, convert tools.

The wheel is fetched with ``pip download --no-deps bfcl-eval`` into ``bench/.cache/`` (gitignored)
and unzipped there; nothing else from it is imported or executed. Function docs are converted the
way BFCL converts them for OpenAI-style function-calling models (``GORILLA_TO_OPENAPI`` and
``_cast_to_openai_type`` in ``bfcl_eval/model_handler/utils.py``), including the "Python 3" hint
BFCL appends to every description, so the prompts match what BFCL itself sends.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE = Path(__file__).parent / ".cache"
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
LIVE_CATEGORIES = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
"""BFCL's user-contributed ("live") single-turn categories, converted and scored the same way."""
NO_ANSWER = ("irrelevance", "live_irrelevance", "live_relevance")
"""Categories scored on whether a call is made at all: BFCL ships no possible answers."""

# BFCL's GORILLA_TO_OPENAPI (constants/type_mappings.py), Python-relevant entries. BFCL maps
# "any" to "string" and its checker expects a str for it, so we keep that rather than ``{}``.
GORILLA_TO_OPENAPI = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
}
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."


@dataclass(frozen=True)
class Case:
    """One single-turn BFCL test case."""

    id: str
    category: str
    messages: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    """BFCL function docs as in the data file (original names, BFCL types)."""
    answer: list[dict[str, Any]] = field(default_factory=list)
    """Ground truth ``[{name: {param: [allowed values]}}]``; empty for irrelevance."""

    def tools(self) -> list[dict[str, Any]]:
        """OpenAI ``tools`` for this case (dots in names replaced by ``_``)."""
        return [to_openai_tool(f) for f in self.functions]

    def name_map(self) -> dict[str, str]:
        """Sanitised tool name -> original BFCL name."""
        return {sanitize_name(f["name"]): f["name"] for f in self.functions}


def sanitize_name(name: str) -> str:
    """OpenAI-style names allow ``[a-zA-Z0-9_-]`` only; BFCL replaces dots with ``_``."""
    return re.sub(r"\.", "_", name)


def _cast_types(properties: dict[str, Any]) -> dict[str, Any]:
    # A port of BFCL's _cast_to_openai_type for the Python categories.
    for key, value in properties.items():
        var_type = value.get("type")
        if var_type is None:
            value["type"] = "string"
        else:
            if var_type == "float":
                value["format"] = "float"
                value["description"] = value.get("description", "") + " This is a float type value."
            value["type"] = GORILLA_TO_OPENAPI.get(var_type, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_types(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI.get(items.get("type", "string"), "string")
                if items["type"] == "array" and "items" in items:
                    inner = items["items"]
                    inner["type"] = GORILLA_TO_OPENAPI.get(inner.get("type", "string"), "string")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_types(items["properties"])
        properties[key] = value
    return properties


def to_openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI ``{"type": "function", "function": ...}`` tool."""
    item = copy.deepcopy(function)
    item["name"] = sanitize_name(item["name"])
    item["description"] = item.get("description", "") + PYTHON_HINT
    params = item.setdefault("parameters", {"type": "dict", "properties": {}})
    params["type"] = "object"
    params["properties"] = _cast_types(params.get("properties", {}))
    return {"type": "function", "function": item}


def fetch(cache: Path = CACHE) -> Path:
    """Directory holding ``bfcl_eval/data``; downloads and unzips the wheel on first use."""
    root = cache / "bfcl"
    data = root / "bfcl_eval" / "data"
    if data.is_dir():
        return data
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("bfcl_eval-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "bfcl-eval", "-d", str(cache)]
        subprocess.run(cmd, check=True)
        wheels = sorted(cache.glob("bfcl_eval-*.whl"))
    if not wheels:
        raise FileNotFoundError(
            f"no bfcl_eval wheel in {cache!r}; run `pip download --no-deps bfcl-eval`"
        )
    with zipfile.ZipFile(wheels[-1]) as zf:
        zf.extractall(root)
    return data


def wheel_version(cache: Path = CACHE) -> str:
    """Version of the fetched bfcl-eval wheel ('' if none)."""
    wheels = sorted(cache.glob("bfcl_eval-*.whl"))
    return wheels[-1].name.split("-")[1] if wheels else ""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _data_file(data: Path, category: str, *, answers: bool = False) -> Path:
    folder = data / "possible_answer" if answers else data
    pattern = re.compile(rf"BFCL_v\d+_{re.escape(category)}\.json")
    matches = sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name))
    if not matches:
        raise FileNotFoundError(f"no BFCL file for category {category!r} in {folder}")
    return matches[-1]


def load_category(category: str, *, data: Path | None = None) -> list[Case]:
    """All cases of one category, with their possible answers."""
    data = data or fetch()
    entries = _read_jsonl(_data_file(data, category))
    answers: dict[str, list[dict[str, Any]]] = {}
    if category not in NO_ANSWER:
        answers = {
            a["id"]: a["ground_truth"]
            for a in _read_jsonl(_data_file(data, category, answers=True))
        }
    cases = []
    for entry in entries:
        # single-turn categories: question is [[messages of turn 0]]
        messages = entry["question"][0]
        cases.append(
            Case(
                id=entry["id"],
                category=category,
                messages=messages,
                functions=entry["function"],
                answer=answers.get(entry["id"], []),
            )
        )
    return cases


def sample(cases: list[Case], n: int | None) -> list[Case]:
    """A fixed, evenly spread sample of ``n`` cases (all when ``n`` is None)."""
    if n is None or n >= len(cases):
        return list(cases)
    step = len(cases) / n
    return [cases[int(i * step)] for i in range(n)]
