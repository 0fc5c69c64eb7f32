"""Fixed inputs of the speed benchmarks: tool sets, prompts, the agent conversation, parser text."""

from __future__ import annotations

import json
import random
from typing import Any

# A target tool, asked for by the constrained prompt, and 49 fillers with varied schemas.
NOTE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "save_note",
        "description": "Save a note with a title, a body text and tags.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Short title."},
                "body": {"type": "string", "description": "The full text of the note."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "pinned": {"type": "boolean"},
            },
            "required": ["title", "body"],
        },
    },
}
_SUBJECTS = [
    "weather",
    "stock",
    "flight",
    "hotel",
    "recipe",
    "movie",
    "song",
    "book",
    "order",
    "invoice",
    "ticket",
    "user",
    "repo",
    "issue",
    "calendar",
    "email",
    "file",
    "route",
    "currency",
    "timezone",
    "translation",
    "news",
    "sport",
    "package",
    "device",
    "sensor",
    "alarm",
    "playlist",
    "contact",
    "meeting",
    "task",
    "budget",
    "expense",
    "loan",
    "policy",
    "patient",
    "course",
    "exam",
    "job",
    "candidate",
    "vehicle",
    "parking",
    "restaurant",
    "product",
    "review",
    "coupon",
    "shipment",
    "warehouse",
    "server",
]
_VERBS = ["get", "search", "create", "update", "delete", "list", "check"]
_TYPES: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "integer", "minimum": 0},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "string", "enum": ["low", "medium", "high"]},
    {"type": "array", "items": {"type": "string"}},
]


def filler_tool(index: int) -> dict[str, Any]:
    """A deterministic tool with 2-4 parameters of mixed types."""
    rng = random.Random(index)
    subject = _SUBJECTS[index % len(_SUBJECTS)]
    verb = _VERBS[index % len(_VERBS)]
    names = ["id", "query", "limit", "region", "priority", "include_archived", "labels"]
    props = {
        name: {**rng.choice(_TYPES), "description": f"The {name} of the {subject}."}
        for name in rng.sample(names, rng.randint(2, 4))
    }
    return {
        "type": "function",
        "function": {
            "name": f"{verb}_{subject}",
            "description": f"{verb.capitalize()} a {subject} record.",
            "parameters": {"type": "object", "properties": props, "required": list(props)[:1]},
        },
    }


def make_tools(n: int) -> list[dict[str, Any]]:
    """``save_note`` plus ``n - 1`` fillers (a name seen before gets the filler's index, so
    hundreds of fillers stay valid; the first ones are as they always were)."""
    tools, seen = [NOTE_TOOL], {NOTE_TOOL["function"]["name"]}
    for i in range(n - 1):
        tool = filler_tool(i)
        name = tool["function"]["name"]
        if name in seen:
            name = f"{name}_{i}"
            tool["function"]["name"] = name
        seen.add(name)
        tools.append(tool)
    return tools


PLAIN_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "Explain in detail how a lighthouse works, in several paragraphs.",
    },
]
CALL_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "Save a note titled 'Lighthouse' whose body is a long, detailed paragraph "
        "describing a lighthouse keeper's evening routine during a storm.",
    },
]

# The multi-turn agent: scripted user turns and tool results; the assistant turns are the model's.
AGENT_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount between currencies.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                },
                "required": ["amount", "source", "target"],
            },
        },
    },
]
AGENT_USER_TURNS = [
    "What is the weather in Paris right now?",
    "And what time is it in Tokyo?",
    "Convert 100 USD to EUR, please.",
]
AGENT_RESULTS = {
    "get_weather": {"city": "Paris", "temperature": 18, "unit": "celsius", "sky": "cloudy"},
    "get_time": {"city": "Tokyo", "time": "21:04"},
    "convert_currency": {"amount": 92.3, "currency": "EUR"},
}
AGENT_SYSTEM = {"role": "system", "content": "You are a helpful assistant. Use the tools."}


def tool_result(name: str) -> str:
    return json.dumps(AGENT_RESULTS.get(name, {"ok": True}))


_WORDS = [
    "the",
    "keeper",
    "climbed",
    "stairs",
    "lamp",
    "storm",
    "light",
    "ship",
    "rocks",
    "night",
    "wind",
    "sea",
    "tower",
    "glass",
    "oil",
    "watch",
    "wave",
    "harbour",
    "rope",
    "bell",
    "signal",
]


def mixed_output(spec: Any, size: int = 1_000_000, *, seed: int = 0) -> tuple[str, list[str]]:
    """About ``size`` characters of model output in ``spec``'s dialect: prose and tool calls.

    Returns the text and the JSON arguments of every call in it (the ``json.loads`` baseline).
    """
    rng = random.Random(seed)
    words = _WORDS
    parts: list[str] = []
    arguments: list[str] = []
    total = 0
    while total < size:
        prose = " ".join(rng.choice(words) for _ in range(rng.randint(20, 80))) + ".\n"
        args = {
            "title": " ".join(rng.choice(words) for _ in range(3)),
            "body": " ".join(rng.choice(words) for _ in range(rng.randint(10, 60))),
            "tags": [rng.choice(words) for _ in range(rng.randint(0, 3))],
            "pinned": rng.random() < 0.5,
        }
        call = spec.render_call("save_note", args, call_id=f"call_{len(arguments)}")
        arguments.append(json.dumps(args))
        chunk = prose + call + "\n"
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts), arguments


def token_chunks(text: str, *, seed: int = 0) -> list[str]:
    """``text`` cut into token-sized pieces (1-6 characters, about 3.5 on average)."""
    rng = random.Random(seed)
    chunks = []
    i = 0
    while i < len(text):
        n = rng.choice((1, 2, 3, 4, 4, 5, 6))
        chunks.append(text[i : i + n])
        i += n
    return chunks
