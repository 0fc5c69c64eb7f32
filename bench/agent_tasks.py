"""Agent tasks (issue 38 §7): does ``tooldialect.Agent`` with its defaults finish small tasks?

32 fixed tasks, 8 of each kind: ``one`` (one call), ``independent`` (two or three calls that do
not depend on each other), ``dependent`` (the second call needs the first one's result) and
``none`` (no call wanted: a greeting, general knowledge, arithmetic, a request no tool serves).
The tools are deterministic functions over small tables of values a model cannot guess (the
weather in Oslo is 7 C and sleet; user ana lives in Porto; SKU B-17 costs 42.50 EUR), so a right
answer means the results were read. Each task offers 3-6 tools, distractors among them.

A task is right when its final answer contains every expected fact (numbers compared with a
small tolerance, words case-insensitively); for ``none`` tasks, when no tool was called and the
answer is not empty (and holds the expected word where there is one). Each task runs
``Agent(llm, tools=..., max_steps=6, temperature=0.0, max_tokens=256)``, the Agent's other
settings left at their defaults, on one Llama per model (``n_ctx=4096``, 2 threads, seed 0).
An exception from ``Agent.run`` is recorded as outcome ``exception``.

    .venv/bin/python bench/agent_tasks.py --model qwen --label before \\
        --out bench/results/agent-tasks-qwen-before.json

Set ``PYTHONPATH=<checkout>/src`` to measure another checkout's library; the JSON records which
``tooldialect`` was imported and its git commit.

Keep the tasks as written: they were fixed before any model's answers were seen.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bench.common import RESULTS, machine, model_path, quiet_stderr, write_json

Kind = Literal["one", "independent", "dependent", "none"]
KINDS: tuple[Kind, ...] = ("one", "independent", "dependent", "none")

MODEL_LABELS = {
    "smollm2": "SmolLM2-135M",
    "qwen": "Qwen2.5-Coder-0.5B",
    "qwen15": "Qwen2.5-Coder-1.5B",
}

# ---- the tables ---------------------------------------------------------------------------------

WEATHER: dict[str, tuple[int, str]] = {
    "oslo": (7, "sleet"),
    "nairobi": (14, "hail"),
    "porto": (23, "fog"),
    "tallinn": (2, "snow"),
    "quito": (11, "drizzle"),
    "perth": (36, "dust storm"),
    "lima": (16, "mist"),
    "hanoi": (33, "thunderstorms"),
}
USERS: dict[str, str] = {
    "ana": "Porto",
    "bo": "Tallinn",
    "chen": "Lima",
    "fatima": "Hanoi",
}
PRICES: dict[str, tuple[float, str]] = {
    "B-17": (42.50, "EUR"),
    "K-204": (118.00, "USD"),
    "Z-9": (7.25, "GBP"),
}
STOCK: dict[str, int] = {"B-17": 13, "K-204": 37, "Z-9": 5}
RATES: dict[tuple[str, str], float] = {
    ("EUR", "USD"): 1.12,
    ("USD", "EUR"): 0.89,
    ("GBP", "USD"): 1.31,
    ("USD", "GBP"): 0.76,
    ("EUR", "GBP"): 0.86,
    ("GBP", "EUR"): 1.16,
    ("USD", "JPY"): 151.37,
    ("EUR", "JPY"): 169.54,
    ("JPY", "USD"): 0.0066,
}
ORDERS: dict[str, dict[str, Any]] = {
    "5531": {"status": "held at customs", "sku": "B-17", "quantity": 2},
    "7702": {"status": "shipped", "sku": "Z-9", "quantity": 1},
    "6120": {"status": "returned to sender", "sku": "K-204", "quantity": 4},
}
FLIGHTS: dict[str, dict[str, str]] = {
    "QX-88": {"gate": "C22", "destination": "Tallinn", "status": "delayed"},
    "LN-402": {"gate": "A7", "destination": "Perth", "status": "boarding"},
}
EMPLOYEES: dict[str, dict[str, Any]] = {
    "dmitri ivanov": {"extension": 4417, "office_city": "Quito", "department": "logistics"},
    "mira sato": {"extension": 2093, "office_city": "Oslo", "department": "finance"},
}

# ---- the tools ----------------------------------------------------------------------------------


def _city(text: str) -> str:
    return text.split(",")[0].strip().casefold()


def _code(text: str) -> str:
    return text.strip().upper().replace(" ", "")


def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city.

    Args:
        city: The city name, e.g. "Paris".
    """
    found = WEATHER.get(_city(city))
    if found is None:
        raise ValueError(f"no weather station for {city!r}")
    return {"city": city.split(",")[0].strip(), "temperature_c": found[0], "conditions": found[1]}


def get_user_city(username: str) -> dict[str, Any]:
    """The city where a registered user lives.

    Args:
        username: The user's login name.
    """
    found = USERS.get(username.strip().casefold())
    if found is None:
        raise ValueError(f"no user named {username!r}")
    return {"username": username.strip(), "city": found}


def get_price(sku: str) -> dict[str, Any]:
    """The list price of a product.

    Args:
        sku: The product's SKU, e.g. "A-1".
    """
    found = PRICES.get(_code(sku))
    if found is None:
        raise ValueError(f"no product with SKU {sku!r}")
    return {"sku": _code(sku), "price": found[0], "currency": found[1]}


def get_stock(sku: str) -> dict[str, Any]:
    """How many units of a product are in the warehouse.

    Args:
        sku: The product's SKU, e.g. "A-1".
    """
    found = STOCK.get(_code(sku))
    if found is None:
        raise ValueError(f"no product with SKU {sku!r}")
    return {"sku": _code(sku), "units_in_stock": found}


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """Convert an amount of money from one currency to another at today's rate.

    Args:
        amount: The amount in the source currency.
        source: ISO code of the currency to convert from, e.g. "USD".
        target: ISO code of the currency to convert to, e.g. "CHF".
    """
    src, dst = _code(source), _code(target)
    rate = 1.0 if src == dst else RATES.get((src, dst))
    if rate is None:
        raise ValueError(f"no exchange rate from {source!r} to {target!r}")
    return {
        "amount": amount,
        "source": src,
        "target": dst,
        "rate": rate,
        "result": round(amount * rate, 2),
    }


def get_order(order_id: str) -> dict[str, Any]:
    """Status and contents of a customer order.

    Args:
        order_id: The order number.
    """
    found = ORDERS.get(order_id.strip().lstrip("#"))
    if found is None:
        raise ValueError(f"no order {order_id!r}")
    return {"order_id": order_id.strip().lstrip("#"), **found}


def get_flight(flight_number: str) -> dict[str, Any]:
    """Departure gate, destination and status of a flight leaving today.

    Args:
        flight_number: The flight number, e.g. "AB-123".
    """
    found = FLIGHTS.get(_code(flight_number))
    if found is None:
        raise ValueError(f"no flight {flight_number!r} today")
    return {"flight": _code(flight_number), **found}


def lookup_employee(name: str) -> dict[str, Any]:
    """An employee's phone extension, office city and department from the company directory.

    Args:
        name: The employee's full name.
    """
    key = " ".join(name.split()).casefold()
    matches = [k for k in EMPLOYEES if key in (k, *k.split())]
    if len(matches) != 1:
        raise ValueError(f"no employee named {name!r}")
    return {"name": matches[0].title(), **EMPLOYEES[matches[0]]}


def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
    """Send an email.

    Args:
        to: The recipient's address.
        subject: The subject line.
        body: The message text.
    """
    return {"status": "queued", "to": to, "subject": subject}


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    f.__name__: f
    for f in (
        get_weather,
        get_user_city,
        get_price,
        get_stock,
        convert_currency,
        get_order,
        get_flight,
        lookup_employee,
        send_email,
    )
}

# ---- the tasks ----------------------------------------------------------------------------------

Fact = float | str | tuple[str, ...]
"""A number (compared with a tolerance), a word (case-insensitive) or alternative words."""

_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` ("30,274.00" is one number; "7°C" is 7)."""
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def has_fact(text: str, fact: Fact) -> bool:
    if isinstance(fact, (int, float)):
        tolerance = max(0.011, abs(fact) * 1e-3)
        return any(abs(n - fact) <= tolerance for n in numbers_in(text))
    words = (fact,) if isinstance(fact, str) else fact
    lowered = text.casefold()
    return any(w.casefold() in lowered for w in words)


@dataclass(frozen=True)
class Task:
    id: str
    kind: Kind
    prompt: str
    tools: tuple[str, ...]
    facts: tuple[Fact, ...] = ()

    def check(self, answer: str | None, calls: int) -> bool:
        """Right or not, from the final answer and the number of tool calls made."""
        if answer is None or not answer.strip():
            return False
        if self.kind == "none" and calls:
            return False
        return all(has_fact(answer, f) for f in self.facts)


EUR = ("EUR", "€", "euro")

TASKS: tuple[Task, ...] = (
    # -- one call
    Task(
        "one-weather",
        "one",
        "What's the weather like in Oslo right now?",
        ("get_weather", "get_user_city", "convert_currency", "get_flight"),
        (7, "sleet"),
    ),
    Task(
        "one-price",
        "one",
        "How much does product B-17 cost?",
        ("get_price", "get_stock", "convert_currency", "get_order"),
        (42.5, EUR),
    ),
    Task(
        "one-user-city",
        "one",
        "Which city does our user fatima live in?",
        ("get_user_city", "get_weather", "lookup_employee"),
        ("Hanoi",),
    ),
    Task(
        "one-convert",
        "one",
        "How many Japanese yen would I get for 200 US dollars today?",
        ("convert_currency", "get_price", "get_weather"),
        (30274,),
    ),
    Task(
        "one-stock",
        "one",
        "How many units of K-204 do we have in the warehouse?",
        ("get_stock", "get_price", "get_order", "send_email"),
        (37,),
    ),
    Task(
        "one-order",
        "one",
        "What's happening with order 6120?",
        ("get_order", "get_stock", "send_email", "get_user_city"),
        ("returned",),
    ),
    Task(
        "one-gate",
        "one",
        "Which gate does flight LN-402 leave from?",
        ("get_flight", "get_weather", "get_user_city"),
        ("A7",),
    ),
    Task(
        "one-extension",
        "one",
        "What is Mira Sato's phone extension?",
        ("lookup_employee", "send_email", "get_user_city", "get_weather"),
        (2093,),
    ),
    # -- two or three independent calls
    Task(
        "ind-weather-two",
        "independent",
        "What's the weather in Oslo and in Nairobi?",
        ("get_weather", "get_flight", "get_user_city"),
        (7, "sleet", 14, "hail"),
    ),
    Task(
        "ind-convert-two",
        "independent",
        "Convert 100 EUR to USD, and also 250 GBP to USD.",
        ("convert_currency", "get_price", "get_stock"),
        (112, 327.5),
    ),
    Task(
        "ind-prices",
        "independent",
        "What do products B-17 and Z-9 cost?",
        ("get_price", "get_stock", "convert_currency", "get_order"),
        (42.5, 7.25),
    ),
    Task(
        "ind-user-cities",
        "independent",
        "Where do our users ana and bo live?",
        ("get_user_city", "lookup_employee", "get_weather"),
        ("Porto", "Tallinn"),
    ),
    Task(
        "ind-weather-three",
        "independent",
        "I'm comparing Quito, Perth and Tallinn: what's the weather in each right now?",
        ("get_weather", "convert_currency", "get_flight"),
        (11, "drizzle", 36, "dust", 2, "snow"),
    ),
    Task(
        "ind-stock",
        "independent",
        "How many units of B-17 and of Z-9 are in stock?",
        ("get_stock", "get_price", "get_order", "send_email"),
        (13, 5),
    ),
    Task(
        "ind-orders",
        "independent",
        "Can you check the status of orders 5531 and 7702?",
        ("get_order", "get_stock", "get_price", "send_email"),
        ("customs", "shipped"),
    ),
    Task(
        "ind-weather-price",
        "independent",
        "I'm flying to Oslo and want to buy a B-17 there. What's the weather in Oslo, and how "
        "much is a B-17?",
        ("get_weather", "get_price", "convert_currency", "get_flight"),
        (7, "sleet", 42.5),
    ),
    # -- two dependent calls
    Task(
        "dep-user-weather",
        "dependent",
        "What's the weather like where our user ana lives?",
        ("get_user_city", "get_weather", "lookup_employee", "get_flight"),
        (23, "fog"),
    ),
    Task(
        "dep-price-usd",
        "dependent",
        "What does product B-17 cost in US dollars?",
        ("get_price", "convert_currency", "get_stock"),
        (47.6,),
    ),
    Task(
        "dep-flight-weather",
        "dependent",
        "What's the weather at the destination of flight QX-88?",
        ("get_flight", "get_weather", "get_user_city"),
        (2, "snow"),
    ),
    Task(
        "dep-employee-weather",
        "dependent",
        "What's the weather in the city where Dmitri Ivanov's office is?",
        ("lookup_employee", "get_weather", "get_user_city", "send_email"),
        (11, "drizzle"),
    ),
    Task(
        "dep-order-stock",
        "dependent",
        "Is the product from order 5531 still in stock? How many units are left?",
        ("get_order", "get_stock", "get_price", "send_email"),
        (13,),
    ),
    Task(
        "dep-price-eur",
        "dependent",
        "How much is product K-204 in euros?",
        ("get_price", "convert_currency", "get_stock", "get_order"),
        (105.02,),
    ),
    Task(
        "dep-user-weather-2",
        "dependent",
        "Is it warm where chen lives? Tell me the temperature there.",
        ("get_user_city", "get_weather", "convert_currency"),
        (16,),
    ),
    Task(
        "dep-order-price",
        "dependent",
        "What is the price of the product in order 7702?",
        ("get_order", "get_price", "get_stock", "lookup_employee"),
        (7.25,),
    ),
    # -- no call wanted
    Task(
        "none-greeting",
        "none",
        "Hi there! How are you doing today?",
        ("get_weather", "get_user_city", "send_email"),
    ),
    Task(
        "none-capital",
        "none",
        "What is the capital of France?",
        ("get_weather", "get_user_city", "get_flight"),
        ("Paris",),
    ),
    Task(
        "none-arithmetic",
        "none",
        "What is 12 times 12?",
        ("convert_currency", "get_price", "get_stock"),
        (144,),
    ),
    Task(
        "none-haiku",
        "none",
        "Write a haiku about autumn leaves.",
        ("get_weather", "send_email", "lookup_employee"),
    ),
    Task(
        "none-author",
        "none",
        "Who wrote Romeo and Juliet?",
        ("lookup_employee", "get_user_city", "get_order"),
        ("Shakespeare",),
    ),
    Task(
        "none-thanks",
        "none",
        "Thanks a lot, that's all I needed!",
        ("get_order", "get_price", "send_email"),
    ),
    Task(
        "none-boiling",
        "none",
        "At what temperature in Celsius does water boil at sea level?",
        ("get_weather", "convert_currency", "get_flight"),
        (100,),
    ),
    Task(
        "none-book",
        "none",
        "Can you recommend a good novel to read on a long flight?",
        ("get_flight", "get_weather", "get_price"),
    ),
)

# ---- repeated calls -----------------------------------------------------------------------------


def canonical(arguments: str) -> str:
    """A call's arguments as canonical JSON (key order and spacing do not count); text that is
    not JSON stays as it is, stripped."""
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return arguments.strip()
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def count_repeats(calls: Iterable[tuple[int, str, str]]) -> int:
    """Calls ``(step, name, arguments)`` equal (name and canonical arguments) to a call of an
    earlier step, whose result was already in the conversation when the model wrote it. Refused
    calls count; a repeat within one step does not (the first one's result was not there yet)."""
    earlier: set[tuple[str, str]] = set()
    this_step: set[tuple[str, str]] = set()
    step_now: int | None = None
    repeats = 0
    for step, name, arguments in calls:
        if step != step_now:
            earlier |= this_step
            this_step, step_now = set(), step
        key = (name, canonical(arguments))
        repeats += key in earlier
        this_step.add(key)
    return repeats


# ---- the runner ---------------------------------------------------------------------------------


def run_task(llm: Any, task: Task) -> dict[str, Any]:
    """One task on a fresh ``Agent``; never raises."""
    from tooldialect import Agent, CallFinished, StepStarted

    steps = 0
    calls: list[dict[str, Any]] = []

    def on_event(event: Any) -> None:
        nonlocal steps
        if isinstance(event, StepStarted):
            steps += 1
        elif isinstance(event, CallFinished):
            calls.append(
                {
                    "step": event.step,
                    "name": event.name,
                    "arguments": event.requested_arguments or event.arguments,
                    "error": event.error,
                }
            )

    agent = Agent(
        llm,
        tools=[TOOLS[name] for name in task.tools],
        max_steps=6,
        temperature=0.0,
        max_tokens=256,
    )
    started = time.perf_counter()
    answer: str | None = None
    reason: str | None = None
    try:
        result = agent.run(task.prompt, on_event=on_event)
        outcome, answer, reason = str(result.outcome), result.answer, result.reason
        steps = len(result.steps)
    except Exception as exc:
        outcome, reason = "exception", f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    return {
        "id": task.id,
        "kind": task.kind,
        "right": task.check(answer, len(calls)),
        "outcome": outcome,
        "reason": reason,
        "answer": answer,
        "model_calls": steps,
        "tool_calls": calls,
        "repeated_calls": count_repeats((c["step"], c["name"], c["arguments"]) for c in calls),
        "seconds": round(seconds, 2),
    }


MISSES: dict[str, str] = {
    "empty": "no answer (nothing, or a run that ended without one)",
    "as_text": "the answer is a call or a template marker written as text",
    "called": "called a tool where none was wanted",
    "no_call": "answered without calling a tool (the facts made up or left out)",
    "guessed": "guessed an argument a tool could give; the tool failed and the fact was never read",
    "too_few": "called fewer tools than the question needs; a fact was never read",
    "left_out": "read every fact it needed, then left one out of the answer",
}
"""Why a task was answered wrong, first match in this order (``explain``)."""

_AS_TEXT = re.compile(r'^\s*(?:[{\[]|<[a-z_|]+>|```)|"name"\s*:', re.IGNORECASE)


def read_facts(task: Task, calls: Sequence[dict[str, Any]]) -> str:
    """The text of every tool result the run read (the tools are deterministic: run again)."""
    texts = []
    for call in calls:
        if call.get("error"):
            continue
        try:
            arguments = json.loads(call["arguments"] or "{}")
            texts.append(json.dumps(TOOLS[call["name"]](**arguments), ensure_ascii=False))
        except Exception:  # a call that fails now read nothing either
            continue
    return "\n".join(texts)


def explain(task: Task, row: dict[str, Any]) -> str | None:
    """Which of ``MISSES`` a wrong run is (``None`` for a right one)."""
    if row["right"]:
        return None
    answer, calls = row.get("answer") or "", row["tool_calls"]
    if not answer.strip():
        return "empty"
    if _AS_TEXT.search(answer):
        return "as_text"
    if task.kind == "none":
        return "called"
    if not calls:
        return "no_call"
    read = read_facts(task, calls)
    unread = [f for f in task.facts if not has_fact(answer, f) and not has_fact(read, f)]
    if unread:
        return "guessed" if any(c.get("error") == "tool_error" for c in calls) else "too_few"
    return "left_out"


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    per_kind = {
        kind: {
            "right": sum(r["right"] for r in records if r["kind"] == kind),
            "tasks": sum(r["kind"] == kind for r in records),
        }
        for kind in KINDS
    }
    n = len(records)
    return {
        "right": sum(r["right"] for r in records),
        "tasks": n,
        "per_kind": per_kind,
        "outcomes": dict(Counter(r["outcome"] for r in records).most_common()),
        "mean_model_calls": round(sum(r["model_calls"] for r in records) / n, 2) if n else 0.0,
        "repeated_calls": sum(r["repeated_calls"] for r in records),
        "misses": dict(Counter(_miss(r) for r in records if not r["right"]).most_common()),
        "seconds": round(sum(r["seconds"] for r in records), 1),
    }


def _miss(row: dict[str, Any]) -> str:
    task = next(t for t in TASKS if t.id == row["id"])
    return explain(task, row) or ""


def markdown(model: str, label: str, records: Sequence[dict[str, Any]]) -> str:
    s = summarize(records)
    name = MODEL_LABELS.get(model, model)
    lines = [
        f"### {name} ({label})",
        "",
        "| kind | right |",
        "|---|---|",
        *(f"| {k} | {v['right']} / {v['tasks']} |" for k, v in s["per_kind"].items()),
        f"| **all** | **{s['right']} / {s['tasks']}** |",
        "",
        "| outcome | tasks |",
        "|---|---|",
        *(f"| {o} | {c} |" for o, c in s["outcomes"].items()),
        "",
        f"mean model calls per task {s['mean_model_calls']}, repeated calls {s['repeated_calls']}"
        f", {s['seconds']} s",
        "",
        "| why wrong | tasks |",
        "|---|---|",
        *(f"| {MISSES[m]} | {c} |" for m, c in s["misses"].items()),
        "",
        "| task | right | why wrong | outcome | model calls | tool calls | repeated | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        called = ", ".join(f"{c['name']}({canonical(c['arguments'])})" for c in r["tool_calls"])
        called = called.replace("\n", " ") or "-"
        lines.append(
            f"| {r['id']} | {'yes' if r['right'] else 'no'} | {_miss(r) or '-'} | {r['outcome']} | "
            f"{r['model_calls']} | {called.replace('|', '/')} | {r['repeated_calls']} | "
            f"{r['seconds']} |"
        )
    return "\n".join(lines)


def git_commit(path: Path) -> dict[str, Any]:
    """The commit of the checkout holding ``path`` and whether its ``src`` has changes."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=False
        )
        return out.stdout.strip()

    top = git("rev-parse", "--show-toplevel")
    return {
        "checkout": top,
        "commit": git("rev-parse", "HEAD"),
        "src_changed": bool(git("status", "--porcelain", "--", "src")),
    }


def bench_file() -> dict[str, Any]:
    """The last commit of this file and whether it has changes since (the checkout's HEAD moves
    on while other work is committed)."""
    here = Path(__file__).resolve()

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(here.parent), *args], capture_output=True, text=True, check=False
        )
        return out.stdout.strip()

    return {
        "file_commit": git("log", "-1", "--format=%H", "--", here.name),
        "file_changed": bool(git("status", "--porcelain", "--", here.name)),
    }


def load(model: str, *, threads: int = 2) -> Any:
    from llama_cpp import Llama

    import tooldialect

    with quiet_stderr():
        return Llama(
            model_path=str(model_path(model)),
            n_ctx=4096,
            n_threads=threads,
            verbose=False,
            chat_handler=tooldialect.ToolChatHandler(),
            seed=0,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="issue 38 §7: agent tasks")
    parser.add_argument("--model", choices=sorted(MODEL_LABELS), default="qwen")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    parser.add_argument("--label", default="run")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="llama.cpp threads (1 where other work shares the cores: spinning threads starve)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--table", type=Path, default=None, help="print the tables of a results file and exit"
    )
    args = parser.parse_args(argv)
    if args.table:
        saved = json.loads(args.table.read_text(encoding="utf-8"))
        print(markdown(saved["model"], saved["label"], saved["tasks"]))
        return
    import tooldialect

    library = Path(tooldialect.__file__).resolve().parent
    print(f"tooldialect: {library}", flush=True)
    tasks = list(TASKS)
    if args.tasks:
        wanted = args.tasks.split(",")
        unknown = sorted(set(wanted) - {t.id for t in TASKS})
        if unknown:
            parser.error(f"unknown task ids: {', '.join(unknown)}")
        tasks = [t for t in TASKS if t.id in wanted]
    started = time.perf_counter()
    llm = load(args.model, threads=args.threads)
    records = []
    for task in tasks:
        record = run_task(llm, task)
        records.append(record)
        print(
            f"{task.id}: {'right' if record['right'] else 'wrong'} {record['outcome']} "
            f"{record['model_calls']} model calls, {len(record['tool_calls'])} tool calls, "
            f"{record['seconds']} s",
            flush=True,
        )
    wall = time.perf_counter() - started
    print()
    print(markdown(args.model, args.label, records))
    data = {
        "model": args.model,
        "model_label": MODEL_LABELS[args.model],
        "label": args.label,
        "library": {"path": str(library), **git_commit(library)},
        "bench": {**git_commit(Path(__file__).resolve().parent), **bench_file()},
        "machine": machine(),
        "threads": args.threads,
        "load_average": os.getloadavg(),
        "wall_seconds": round(wall, 1),
        "agent": {"max_steps": 6, "temperature": 0.0, "max_tokens": 256, "others": "defaults"},
        "summary": summarize(records),
        "tasks": records,
    }
    out = args.out or RESULTS / f"agent-tasks-{args.model}-{args.label}.json"
    write_json(out, data)
    print(f"\nwrote {out} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
