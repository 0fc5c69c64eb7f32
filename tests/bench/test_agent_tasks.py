"""The agent-task benchmark's tasks, checkers, tools and repeat counter (bench/agent_tasks.py),
model-free."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import agent_tasks

TASKS, TOOLS = agent_tasks.TASKS, agent_tasks.TOOLS
count_repeats, has_fact = agent_tasks.count_repeats, agent_tasks.has_fact

BY_ID = {t.id: t for t in TASKS}

# (a right answer, a wrong one) for every task, written by hand
ANSWERS: dict[str, tuple[str, str]] = {
    "one-weather": ("It is 7°C in Oslo with sleet.", "It is 17°C in Oslo with sleet."),
    "one-price": ("Product B-17 costs 42.50 EUR.", "Product B-17 costs 42.50 USD."),
    "one-user-city": ("fatima lives in Hanoi.", "fatima lives in Hue."),
    "one-convert": ("200 USD is 30,274 JPY.", "200 USD is about 30,000 JPY."),
    "one-stock": ("There are 37 units of K-204 in stock.", "There are 73 units in stock."),
    "one-order": ("Order 6120 was returned to sender.", "Order 6120 has shipped."),
    "one-gate": ("Flight LN-402 leaves from gate A7.", "Flight LN-402 leaves from gate C22."),
    "one-extension": ("Mira Sato's extension is 2093.", "Mira Sato's extension is 4417."),
    "ind-weather-two": (
        "Oslo: 7 C, sleet. Nairobi: 14.0 C, hail.",
        "Oslo: 7 C, sleet. Nairobi: 14 C, rain.",
    ),
    "ind-convert-two": (
        "100 EUR = 112.00 USD and 250 GBP = $327.50.",
        "100 EUR = 112.00 USD and 250 GBP = 325 USD.",
    ),
    "ind-prices": ("B-17 costs €42.50 and Z-9 costs £7.25.", "B-17 costs €42.50."),
    "ind-user-cities": ("ana lives in Porto and bo in Tallinn.", "ana lives in Porto."),
    "ind-weather-three": (
        "Quito 11°C drizzle; Perth 36°C with a dust storm; Tallinn 2°C and snow.",
        "Quito 11°C drizzle; Perth 36°C sunny; Tallinn 2°C and snow.",
    ),
    "ind-stock": ("B-17: 13 units, Z-9: 5 units.", "B-17: 13 units, Z-9: 6 units."),
    "ind-orders": (
        "Order 5531 is held at customs; order 7702 has shipped.",
        "Order 5531 is delayed; order 7702 has shipped.",
    ),
    "ind-weather-price": (
        "Oslo has sleet at 7 degrees, and a B-17 costs 42.5 euros.",
        "Oslo has sleet at 7 degrees, and a B-17 costs 45 euros.",
    ),
    "dep-user-weather": ("ana lives in Porto: 23 °C and fog.", "ana lives in Porto: 23 °C."),
    "dep-price-usd": ("B-17 costs $47.60.", "B-17 costs 42.50 EUR."),
    "dep-flight-weather": (
        "QX-88 flies to Tallinn, where it is 2°C with snow.",
        "QX-88 flies to Tallinn, where it is 12°C with snow.",
    ),
    "dep-employee-weather": (
        "Dmitri's office is in Quito: 11 C, drizzle.",
        "Dmitri's office is in Quito: 11 C, sunny.",
    ),
    "dep-order-stock": ("Yes, 13 units of B-17 are in stock.", "Yes, 2 units are in stock."),
    "dep-price-eur": ("K-204 costs 105.02 EUR.", "K-204 costs 118 USD."),
    "dep-user-weather-2": ("chen lives in Lima, where it is 16 °C.", "It is 61 °F in Lima."),
    "dep-order-price": ("The product (Z-9) costs 7.25 GBP.", "The product costs 7.52 GBP."),
    "none-greeting": ("Hello! I'm doing well, thank you.", "   "),
    "none-capital": ("The capital of France is Paris.", "The capital of France is Lyon."),
    "none-arithmetic": ("12 times 12 is 144.", "12 times 12 is 124."),
    "none-haiku": ("Red leaves drift and fall / ...", ""),
    "none-author": ("William Shakespeare wrote it.", "Christopher Marlowe wrote it."),
    "none-thanks": ("You're welcome!", ""),
    "none-boiling": ("Water boils at 100 °C at sea level.", "Water boils at 90 °C."),
    "none-book": ("Try 'The Count of Monte Cristo'.", ""),
}

# the calls that solve each task that needs tools; their results must hold the expected facts
SOLUTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "one-weather": [("get_weather", {"city": "Oslo"})],
    "one-price": [("get_price", {"sku": "B-17"})],
    "one-user-city": [("get_user_city", {"username": "fatima"})],
    "one-convert": [("convert_currency", {"amount": 200, "source": "USD", "target": "JPY"})],
    "one-stock": [("get_stock", {"sku": "K-204"})],
    "one-order": [("get_order", {"order_id": "6120"})],
    "one-gate": [("get_flight", {"flight_number": "LN-402"})],
    "one-extension": [("lookup_employee", {"name": "Mira Sato"})],
    "ind-weather-two": [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Nairobi"})],
    "ind-convert-two": [
        ("convert_currency", {"amount": 100, "source": "EUR", "target": "USD"}),
        ("convert_currency", {"amount": 250, "source": "GBP", "target": "USD"}),
    ],
    "ind-prices": [("get_price", {"sku": "B-17"}), ("get_price", {"sku": "Z-9"})],
    "ind-user-cities": [
        ("get_user_city", {"username": "ana"}),
        ("get_user_city", {"username": "bo"}),
    ],
    "ind-weather-three": [
        ("get_weather", {"city": "Quito"}),
        ("get_weather", {"city": "Perth"}),
        ("get_weather", {"city": "Tallinn"}),
    ],
    "ind-stock": [("get_stock", {"sku": "B-17"}), ("get_stock", {"sku": "Z-9"})],
    "ind-orders": [("get_order", {"order_id": "5531"}), ("get_order", {"order_id": "7702"})],
    "ind-weather-price": [("get_weather", {"city": "Oslo"}), ("get_price", {"sku": "B-17"})],
    "dep-user-weather": [
        ("get_user_city", {"username": "ana"}),
        ("get_weather", {"city": "Porto"}),
    ],
    "dep-price-usd": [
        ("get_price", {"sku": "B-17"}),
        ("convert_currency", {"amount": 42.5, "source": "EUR", "target": "USD"}),
    ],
    "dep-flight-weather": [
        ("get_flight", {"flight_number": "QX-88"}),
        ("get_weather", {"city": "Tallinn"}),
    ],
    "dep-employee-weather": [
        ("lookup_employee", {"name": "Dmitri Ivanov"}),
        ("get_weather", {"city": "Quito"}),
    ],
    "dep-order-stock": [("get_order", {"order_id": "5531"}), ("get_stock", {"sku": "B-17"})],
    "dep-price-eur": [
        ("get_price", {"sku": "K-204"}),
        ("convert_currency", {"amount": 118, "source": "USD", "target": "EUR"}),
    ],
    "dep-user-weather-2": [
        ("get_user_city", {"username": "chen"}),
        ("get_weather", {"city": "Lima"}),
    ],
    "dep-order-price": [("get_order", {"order_id": "7702"}), ("get_price", {"sku": "Z-9"})],
}


def test_at_least_eight_tasks_per_kind_and_unique_ids() -> None:
    kinds = Counter(t.kind for t in TASKS)
    assert set(kinds) == set(agent_tasks.KINDS)
    assert all(n >= 8 for n in kinds.values()), kinds
    assert len(BY_ID) == len(TASKS)
    assert set(ANSWERS) == set(BY_ID)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_each_task_offers_three_to_six_known_tools(task: agent_tasks.Task) -> None:
    assert 3 <= len(task.tools) <= 6
    assert len(set(task.tools)) == len(task.tools)
    assert set(task.tools) <= set(TOOLS)
    assert task.prompt.strip() and "tool" not in task.prompt.lower()
    if task.kind != "none":
        assert task.facts
        used = {name for name, _ in SOLUTIONS[task.id]}
        assert used <= set(task.tools)
        assert len(task.tools) > len(used)  # a distractor at least
        wanted = {"one": {1}, "independent": {2, 3}, "dependent": {2}}[task.kind]
        assert len(SOLUTIONS[task.id]) in wanted


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_the_checker_accepts_a_right_answer_and_refuses_a_wrong_one(task: agent_tasks.Task) -> None:
    right, wrong = ANSWERS[task.id]
    calls = len(SOLUTIONS.get(task.id, []))
    assert task.check(right, calls)
    assert not task.check(wrong, calls)
    assert not task.check(None, calls)
    if task.kind == "none":  # a right text after a call is still wrong
        assert not task.check(right, 1)
    else:  # facts, not calls, decide
        assert task.check(right, 0)


@pytest.mark.parametrize("task", [t for t in TASKS if t.kind != "none"], ids=lambda t: t.id)
def test_the_solution_calls_yield_the_expected_facts(task: agent_tasks.Task) -> None:
    results = json.dumps([TOOLS[name](**kwargs) for name, kwargs in SOLUTIONS[task.id]])
    assert all(has_fact(results, f) for f in task.facts), (results, task.facts)


def test_tools_are_deterministic_and_refuse_unknown_keys() -> None:
    for calls in SOLUTIONS.values():
        for name, kwargs in calls:
            first = TOOLS[name](**kwargs)
            assert TOOLS[name](**kwargs) == first
            assert json.dumps(first) == json.dumps(TOOLS[name](**kwargs))
    assert TOOLS["get_weather"](city="oslo, Norway")["temperature_c"] == 7
    assert TOOLS["lookup_employee"](name="dmitri")["extension"] == 4417
    unknown: list[tuple[str, dict[str, Any]]] = [
        ("get_weather", {"city": "Paris"}),
        ("get_user_city", {"username": "zed"}),
        ("get_price", {"sku": "Q-1"}),
        ("get_stock", {"sku": "Q-1"}),
        ("convert_currency", {"amount": 1, "source": "USD", "target": "XYZ"}),
        ("get_order", {"order_id": "1"}),
        ("get_flight", {"flight_number": "ZZ-1"}),
        ("lookup_employee", {"name": "nobody"}),
    ]
    for name, kwargs in unknown:
        with pytest.raises(ValueError):
            TOOLS[name](**kwargs)


def test_tools_become_valid_tools() -> None:
    from tooldialect import Tool

    for fn in TOOLS.values():
        made = Tool.from_function(fn)
        assert made.description and made.parameters["required"]


@pytest.mark.parametrize(
    ("text", "fact", "found"),
    [
        ("It is 7 degrees", 7, True),
        ("It is 7.0 degrees", 7, True),
        ("It is 7°C", 7, True),
        ("It is 17°C", 7, False),
        ("It is 7.5°C", 7, False),
        ("$47.60", 47.6, True),
        ("47.61 dollars", 47.6, True),
        ("30,274.00 yen", 30274, True),
        ("SLEET", "sleet", True),
        ("€42.50", ("EUR", "€"), True),
        ("42.50 dollars", ("EUR", "€"), False),
    ],
)
def test_facts_are_compared_tolerantly(text: str, fact: Any, found: bool) -> None:
    assert has_fact(text, fact) is found


def test_repeats_count_calls_whose_result_was_already_there() -> None:
    transcript = [
        (1, "get_weather", '{"city": "Oslo"}'),
        (1, "get_weather", '{"city":"Oslo"}'),  # same turn: the first result was not there yet
        (2, "get_weather", '{ "city" : "Oslo" }'),  # repeated
        (2, "get_weather", '{"city": "Nairobi"}'),
        (3, "get_price", '{"city": "Nairobi"}'),  # another tool
        (3, "get_weather", '{"city": "Nairobi"}'),  # repeated
        (4, "convert_currency", '{"amount": 1, "source": "EUR", "target": "USD"}'),
        (5, "convert_currency", '{"target": "USD", "source": "EUR", "amount": 1}'),  # repeated
        (5, "convert_currency", '{"target": "USD", "source": "EUR", "amount": 2}'),
        (6, "get_weather", '{"city": "Oslo"}'),  # repeated again
        (6, "get_weather", "not json"),
        (7, "get_weather", " not json "),  # repeated, compared as text
    ]
    assert count_repeats(transcript) == 5
    assert count_repeats([]) == 0


class ScriptedLlama:
    """Returns scripted non-streamed replies (the agent reads those as one chunk)."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        message = self.replies.pop(0)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }


def reply(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c{i}{n}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ],
    }


def test_a_scripted_run_is_recorded_with_its_repeats() -> None:
    llm = ScriptedLlama(
        [
            reply(("get_weather", '{"city": "Oslo"}')),
            reply(("get_weather", '{"city":"Oslo"}'), ("get_weather", '{"city": "Nairobi"}')),
            reply(("get_weather", '{ "city": "Nairobi" }')),
            {"role": "assistant", "content": "Oslo: 7 C and sleet. Nairobi: 14 C and hail."},
        ]
    )
    record = agent_tasks.run_task(llm, BY_ID["ind-weather-two"])
    assert record["right"] and record["outcome"] == "answer"
    assert record["model_calls"] == 4
    assert [c["step"] for c in record["tool_calls"]] == [1, 2, 2, 3]
    assert [c["error"] for c in record["tool_calls"]] == [
        None,
        "repeated_call",
        None,
        "repeated_call",
    ]
    assert record["repeated_calls"] == 2


def test_an_exception_is_an_outcome() -> None:
    llm = ScriptedLlama([])  # the first request raises IndexError
    record = agent_tasks.run_task(llm, BY_ID["none-capital"])
    assert record["outcome"] == "exception" and "IndexError" in record["reason"]
    assert not record["right"] and record["answer"] is None


def test_the_summary_and_table() -> None:
    records = [
        {
            "id": t.id,
            "kind": t.kind,
            "right": t.kind == "one",
            "outcome": "answer",
            "model_calls": 2,
            "tool_calls": [],
            "repeated_calls": 1,
            "seconds": 1.0,
        }
        for t in TASKS
    ]
    summary = agent_tasks.summarize(records)
    assert summary["per_kind"]["one"] == {"right": 8, "tasks": 8}
    assert summary["right"] == 8 and summary["outcomes"] == {"answer": len(TASKS)}
    assert summary["mean_model_calls"] == 2 and summary["repeated_calls"] == len(TASKS)
    records[0]["tool_calls"] = [
        {"step": 1, "name": "get_weather", "arguments": '{\n  "city": "Oslo"\n}', "error": None}
    ]
    table = agent_tasks.markdown("qwen", "before", records)
    assert "| one | 8 / 8 |" in table and "Qwen2.5-Coder-0.5B" in table
    rows = [line for line in table.splitlines() if line.startswith(f"| {TASKS[0].id} |")]
    assert len(rows) == 1 and 'get_weather({"city":"Oslo"})' in rows[0]


def _row(
    task_id: str, answer: str | None, calls: list[tuple[str, dict[str, Any], str | None]]
) -> dict[str, Any]:
    task = BY_ID[task_id]
    made = [{"step": 1, "name": n, "arguments": json.dumps(a), "error": e} for n, a, e in calls]
    return {
        "id": task_id,
        "kind": task.kind,
        "answer": answer,
        "tool_calls": made,
        "right": task.check(answer, len(made)),
    }


@pytest.mark.parametrize(
    ("row", "miss"),
    [
        (
            _row(
                "one-weather",
                "It is 7 C with sleet in Oslo.",
                [("get_weather", {"city": "Oslo"}, None)],
            ),
            None,
        ),
        (_row("one-weather", "", [("get_weather", {"city": "Oslo"}, None)]), "empty"),
        (_row("one-order", '{{"name": "get_order", "arguments": {}}', []), "as_text"),
        (_row("one-user-city", "<tool_response> {} </tool_response>", []), "as_text"),
        (
            _row("none-capital", "Paris.", [("get_weather", {"city": "Paris"}, "tool_error")]),
            "called",
        ),
        (_row("one-gate", "Gate C22.", []), "no_call"),
        (
            _row(
                "dep-user-weather",
                "Not available.",
                [("get_weather", {"city": "Ana"}, "tool_error")],
            ),
            "guessed",
        ),
        (
            _row("ind-prices", "B-17 costs 42.5 EUR.", [("get_price", {"sku": "B-17"}, None)]),
            "too_few",
        ),
        (
            _row(
                "ind-prices",
                "B-17 costs 42.5 EUR.",
                [("get_price", {"sku": "B-17"}, None), ("get_price", {"sku": "Z-9"}, None)],
            ),
            "left_out",
        ),
    ],
    ids=[
        "right",
        "empty",
        "call-as-text",
        "marker-as-text",
        "called",
        "no-call",
        "guessed",
        "too-few",
        "left-out",
    ],
)
def test_a_wrong_run_is_explained(row: dict[str, Any], miss: str | None) -> None:
    assert agent_tasks.explain(BY_ID[row["id"]], row) == miss
    assert miss is None or miss in agent_tasks.MISSES
