"""An offline agent on a laptop: a unit converter, a calculator and a file lister as tools.

    .venv/bin/python examples/agent.py                   # Qwen2.5-Coder-0.5B, three questions
    .venv/bin/python examples/agent.py "How many feet is 3 m?"   # your own question
    .venv/bin/python examples/agent.py --model smollm2   # the polyfill path (135M: weak)

Meant for Qwen2.5-Coder-0.5B (``tooldialect models`` shows where ``make demo`` put it): the run
ends with an answer there. docs/agent.md lists how often each test model finishes.

The tools are plain Python functions; ``tooldialect.tool`` turns their type hints and docstrings
into the schemas the model sees, and ``tooldialect.Agent`` runs the loop. The calculator parses
arithmetic with ``ast`` (no ``eval``); the file lister only sees a temporary folder it fills with
sample files. Reuse them in the terminal chat:

    tooldialect chat MODEL.gguf --tools examples/agent.py:calculate examples/agent.py:list_files

Models are looked up in $TOOLDIALECT_MODELS or ~/.cache/tooldialect/models
(``tooldialect.model_path``).
"""

from __future__ import annotations

import argparse
import ast
import math
import operator
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

import tooldialect
from tooldialect import Agent, tool

# ---- unit converter ------------------------------------------------------------------------

_FACTORS: dict[str, dict[str, float]] = {
    "length": {"millimeter": 0.001, "centimeter": 0.01, "meter": 1.0, "kilometer": 1000.0,
               "inch": 0.0254, "foot": 0.3048, "yard": 0.9144, "mile": 1609.344},
    "mass": {"milligram": 1e-6, "gram": 0.001, "kilogram": 1.0, "tonne": 1000.0,
             "ounce": 0.028349523125, "pound": 0.45359237},
    "volume": {"milliliter": 0.001, "liter": 1.0, "gallon": 3.785411784, "cup": 0.2365882365},
}  # fmt: skip
# full names: small models confuse abbreviations ("mm" for miles)
Unit = Literal[
    "millimeter", "centimeter", "meter", "kilometer", "inch", "foot", "yard", "mile",
    "milligram", "gram", "kilogram", "tonne", "ounce", "pound",
    "milliliter", "liter", "gallon", "cup",
    "celsius", "fahrenheit", "kelvin",
]  # fmt: skip
_TEMPERATURE = {"celsius": (1.0, 0.0), "fahrenheit": (5 / 9, -32.0), "kelvin": (1.0, -273.15)}


@tool
def convert_units(value: float, from_unit: Unit, to_unit: Unit) -> str:
    """Convert a quantity between units of length, mass, volume or temperature.

    Args:
        value: The amount to convert.
        from_unit: The unit of the amount, singular, e.g. "mile", "kilogram", "celsius".
        to_unit: The unit to convert to, singular, e.g. "kilometer".
    """
    if from_unit in _TEMPERATURE and to_unit in _TEMPERATURE:
        scale, shift = _TEMPERATURE[from_unit]
        celsius = (value + shift) * scale
        scale, shift = _TEMPERATURE[to_unit]
        result = celsius / scale - shift
        return f"{value:g} {from_unit} = {result:.4g} {to_unit}"
    for factors in _FACTORS.values():
        if from_unit in factors and to_unit in factors:
            result = value * factors[from_unit] / factors[to_unit]
            return f"{value:g} {from_unit} = {result:.6g} {to_unit}"
    raise ValueError(f"cannot convert {from_unit} to {to_unit}: they measure different things")


# ---- calculator ----------------------------------------------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Any] = {
    name: getattr(math, name)
    for name in ("sqrt", "sin", "cos", "tan", "log", "log10", "exp", "floor", "ceil")
} | {"abs": abs, "round": round, "min": min, "max": max}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def evaluate(expression: str) -> float | int:
    """Arithmetic on numbers, + - * / // % **, parentheses, a few math functions; nothing else."""

    def visit(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return visit(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = visit(node.left), visit(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 1000:
                raise ValueError("exponent too large (at most 1000)")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](visit(node.operand))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS
            and not node.keywords
        ):
            return _FUNCTIONS[node.func.id](*(visit(a) for a in node.args))
        raise ValueError(f"not allowed in a calculation: {ast.unparse(node)!r}")

    if len(expression) > 200:
        raise ValueError("expression too long (at most 200 characters)")
    try:
        tree = ast.parse(expression.replace("^", "**").replace("×", "*"), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    return visit(tree)  # type: ignore[no-any-return]


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "(17 * 23) / 4" or "sqrt(2) * pi".

    Args:
        expression: Numbers, + - * / // % ** and parentheses; sqrt, sin, cos, tan, log, log10,
            exp, floor, ceil, abs, round, min, max; the constants pi and e.
    """
    value = evaluate(expression)
    return f"{expression} = {value:.10g}" if isinstance(value, float) else f"{expression} = {value}"


# ---- file lister over a private folder -------------------------------------------------------

_WORKSPACE: list[Path] = []
SAMPLE_FILES = {
    "notes/todo.md": "- buy milk\n- write the report\n",
    "notes/ideas.txt": "an offline agent on a laptop\n",
    "data/measurements.csv": "day,temp_c\nmon,17.5\ntue,19.0\nwed,16.2\n",
    "report.md": "# Report\n\nAll systems nominal.\n" * 20,
}


def workspace() -> Path:
    """The folder the file tools see: a temporary one filled with sample files on first use."""
    if not _WORKSPACE:
        root = Path(tempfile.mkdtemp(prefix="tooldialect-agent-"))
        for name, text in SAMPLE_FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        _WORKSPACE.append(root)
    return _WORKSPACE[0]


@tool
def list_files(pattern: str = "**/*") -> str:
    """List the files in the workspace folder with their sizes in bytes.

    Args:
        pattern: A glob pattern relative to the workspace, e.g. "*.md" or "notes/*".
    """
    root = workspace()
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ValueError("the pattern must stay inside the workspace (no '..', no absolute path)")
    found = sorted(p for p in root.glob(pattern) if p.is_file())
    if not found:
        return f"no files match {pattern!r}"
    return "\n".join(f"{p.relative_to(root).as_posix()}  {p.stat().st_size} bytes" for p in found)


# ---- the agent -------------------------------------------------------------------------------

MODELS = ("qwen", "smollm2")  # keys of tooldialect.models.MODELS
QUESTIONS = [
    "Convert 5 miles to kilometers.",
    "What is 1234 * 5678?",
    "Which markdown files are in my workspace?",
]
SYSTEM = "You are a precise assistant. Use the tools for conversions, arithmetic and files."


def show(event: tooldialect.AgentEvent) -> None:
    """Print an agent event as it happens."""
    if isinstance(event, tooldialect.TextDelta):
        print(event.text, end="", flush=True)
    elif isinstance(event, tooldialect.CallStarted):
        print(f"\n  -> {event.name}(", end="", flush=True)
    elif isinstance(event, tooldialect.ArgumentsDelta):
        print(event.delta, end="", flush=True)
    elif isinstance(event, tooldialect.CallFinished):
        print(")", flush=True)
        print(f"     {'error: ' if event.error else '= '}{event.result}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", nargs="*", help="questions (default: three samples)")
    parser.add_argument("--model", choices=sorted(MODELS), default="qwen")
    parser.add_argument("--max-steps", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        path = Path(tooldialect.model_path(args.model))
    except tooldialect.ToolDialectError as exc:  # not fetched yet: it names the fetch command
        print(exc, file=sys.stderr)
        return 1
    from llama_cpp import Llama

    handler = tooldialect.ToolChatHandler(parallel_tool_calls=args.model != "smollm2")
    llm = Llama(str(path), n_ctx=4096, n_threads=2, verbose=False, chat_handler=handler)
    agent = Agent(
        llm,
        tools=[convert_units, calculate, list_files],
        system=SYSTEM,
        max_steps=args.max_steps,
        answer_at_limit=True,  # a small model tends to repeat calls: the last step must answer
        loop_limit=1,  # one repeated call means it has its result: answer next
        temperature=0.0,
        max_tokens=256,
    )
    print(f"workspace: {workspace()}")
    for question in args.questions or QUESTIONS:
        print(f"\n> {question}")
        for event in agent.stream(question):
            show(event)
            if isinstance(event, tooldialect.FinalAnswer):
                result = event.result
                steps = ", ".join(
                    f"step {s.number}: {s.usage.get('prompt_tokens')} prompt "
                    f"({s.decoded_prompt_tokens} decoded) {s.model_seconds:.1f} s"
                    for s in result.steps
                )
                print(f"\n  [{result.outcome}; {steps}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
