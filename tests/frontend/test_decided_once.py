"""Each fact of a request decided in one place (issue 40 section 1), checked on the source (read
with ``ast``, nothing imported for it) and by counting what one request calls.

What ``tool_choice`` means is read off its mode only in ``tool_defs.ToolChoice``; its forms are
read by one function (``normalize_tool_choice``; the API converters translate their own forms
into it); a request's keys are checked once (``ChatOptions.build``); whether the dialect can
force a call is asked once (``grammar.build.call_grammar``); the adapters' options and their
defaults are written once (``FrontEndOptions``). A debt below is an exception with its reason:
it fails once it is no longer needed, so the list only shrinks.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from conftest import read_template
from fake_engine import fake_handler
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import ServerClient, ToolChatHandler
from tooldialect.errors import OptionError
from tooldialect.frontend import options as options_module
from tooldialect.frontend.chat_request import ChatRequest
from tooldialect.frontend.options import ChatOptions, FrontEndKeywords, FrontEndOptions
from tooldialect.frontend.pipeline import FrontEnd
from tooldialect.frontend.request import prepare_request
from tooldialect.grammar import build as grammar_build
from tooldialect.tool_defs import ToolChoice, ToolDef

SRC = Path(__file__).resolve().parents[2] / "src"

MODE_READ_DEBTS: dict[str, str] = {}
"""Modules besides ``tool_defs`` still comparing a choice's mode, with why."""


@functools.cache
def parsed() -> tuple[tuple[str, ast.Module], ...]:
    found = []
    for path in sorted((SRC / "tooldialect").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return tuple(found)


def modules() -> Iterator[tuple[str, ast.Module]]:
    """Every module of the package, by name, parsed once per test session."""
    yield from parsed()


def _is_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and all(map(_is_text, node.elts))


def mode_reads(tree: ast.Module) -> list[str]:
    """Comparisons of a ``.mode`` with a literal (``choice.mode == "none"``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            mode = any(isinstance(s, ast.Attribute) and s.attr == "mode" for s in sides)
            if mode and any(_is_text(s) for s in sides):
                found.append(ast.unparse(node))
    return found


def calls_of(tree: ast.Module, name: str) -> list[str]:
    """The enclosing function of each call to ``name`` (``"<module>"`` outside any)."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else where
            if isinstance(child, ast.Call):
                func = child.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    found.append(where)
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_only_tool_choice_reads_its_mode() -> None:
    """``"none"``, ``"auto"``, ``"named"``... are compared in ``ToolChoice`` alone: the prompt
    (``shows_tools``), the grammar (``reads_calls``, ``forced``, ``callable_tools``), the parser
    (``reads_calls``) and the parallel calls (``allows_several``) ask it."""
    readers = {name: found for name, tree in modules() if (found := mode_reads(tree))}
    assert "tooldialect.tool_defs" in readers
    assert set(readers) - {"tooldialect.tool_defs"} == set(MODE_READ_DEBTS), readers
    for debt in MODE_READ_DEBTS:
        assert readers.get(debt), f"{debt} no longer reads a mode: delete its debt"


def test_none_is_decided_in_one_place() -> None:
    """The six places of the issue's review (``request.py`` twice, ``build.py``,
    ``response.py`` three times) now ask ``ToolChoice.reads_calls``; ``"none"`` is compared once
    outside the steering's debt."""
    comparisons = [
        (name, read) for name, tree in modules() for read in mode_reads(tree) if "'none'" in read
    ]
    assert [n for n, _ in comparisons if n not in MODE_READ_DEBTS] == ["tooldialect.tool_defs"]


def test_forcibility_is_asked_once() -> None:
    sites = {name: calls_of(tree, "ensure_forcible") for name, tree in modules()}
    assert {n: s for n, s in sites.items() if s} == {"tooldialect.grammar.build": ["call_grammar"]}


KEY_CHECKS = {
    "tooldialect.frontend.options": "a request's keys (ChatOptions.build), the only check of them",
    "tooldialect.apps.agent": "the Agent's own keyword set, when it is made",
    "tooldialect.apps.serve": "an HTTP chat body's fields, before the server reads them",
    "tooldialect.apps.responses.convert": "a Responses body's fields",
}


def test_a_requests_keys_are_checked_once() -> None:
    """The issue counted two checks of one request (``options.py``, ``request.py``); what is
    left checks different key sets, one each."""
    sites = {name: calls_of(tree, "check_known_keys") for name, tree in modules()}
    assert {n for n, s in sites.items() if s} == set(KEY_CHECKS)
    assert sites["tooldialect.frontend.options"] == ["build"]


def test_tool_choice_forms_are_read_by_one_function() -> None:
    """``tool_choice`` shapes were parsed in five modules; now ``normalize_tool_choice`` reads
    the handler's forms, and only the converter of the API whose forms they are knows the
    others (``allowed_tools`` appears nowhere else in code)."""
    mentions = set()
    for name, tree in modules():
        nodes = list(ast.walk(tree))
        docstrings = {
            id(n.body[0].value)
            for n in nodes
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in nodes:
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and "allowed_tools" in text and id(node) not in docstrings:
                mentions.add(name)
    assert mentions == {"tooldialect.tool_defs", "tooldialect.apps.responses.convert"}
    agent = dict(modules())["tooldialect.apps.agent"]
    assert calls_of(agent, "normalize_tool_choice") == ["__init__"]


def test_prepare_request_takes_the_typed_request() -> None:
    params = inspect.signature(prepare_request).parameters
    assert list(params) == ["setup", "request", "argument_layout", "verbatim_history"]
    assert params["request"].annotation in (ChatRequest, "ChatRequest")
    assert all(p.kind is not p.VAR_KEYWORD for p in params.values())


def test_the_options_reach_the_pipeline_typed() -> None:
    hints = typing.get_type_hints(ChatOptions)
    assert hints["choice"] is ToolChoice
    assert hints["tools"] == tuple[ToolDef, ...]
    untyped = [n for n, h in hints.items() if h == Mapping[str, Any]]
    assert untyped == ["template_variables"]  # free-form by nature: the template's variables
    built = ChatOptions.build(
        {"tools": [WEATHER], "tool_choice": "get_weather", "response_format": {"type": "text"}},
        where="test",
    )
    assert built.choice == ToolChoice(mode="named", name="get_weather")
    assert built.tools[0].name == "get_weather" and built.answer_schema is None


# ---- the adapters' options, written once --------------------------------------------------------


def test_the_front_end_options_are_written_once() -> None:
    fields = typing.get_type_hints(FrontEndOptions)
    assert typing.get_type_hints(FrontEndKeywords) == fields  # the same names and types
    for adapter in (ToolChatHandler.__init__, ServerClient.__init__, FrontEnd.__init__):
        restated = set(inspect.signature(adapter).parameters) & set(fields)
        assert restated == set(), f"{adapter.__qualname__} restates {restated}"


def test_every_option_reaches_the_front_end_by_keyword() -> None:
    given: dict[str, Any] = {
        "dialect": "hermes",
        "chat_template": "{{ messages }}",
        "template_kwargs": {"a": 1},
        "parallel_tool_calls": False,
        "fallback": False,
        "verbatim_history": False,
        "render_budget": None,
        "argument_layout": "canonical",
        "invalid_arguments": "raise",
        "steer_calls": False,
    }
    assert set(given) == {f.name for f in dataclasses.fields(FrontEndOptions)}
    handler = ToolChatHandler(**given)
    client = ServerClient("http://127.0.0.1:9", **given)  # nothing listens: never reached
    for front in (handler.frontend, client.frontend):
        assert front.options == FrontEndOptions(**given)
        assert front.dialect is not None and front.dialect.id == "hermes"
    with pytest.raises(OptionError, match="'verbatim_histroy'; did you mean 'verbatim_history'"):
        ToolChatHandler(verbatim_histroy=False)  # type: ignore[call-arg]


# ---- one request normalises its tools and choice once --------------------------------------------


def test_one_request_reads_its_tools_and_choice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counts: dict[str, int] = {}

    def counted(where: Any, name: str) -> None:
        real = getattr(where, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = f"{where.__name__}.{name}"
            counts[key] = counts.get(key, 0) + 1
            return real(*args, **kwargs)

        monkeypatch.setattr(where, name, wrapper)

    for module in (options_module, grammar_build):
        counted(module, "normalize_tools")
        counted(module, "normalize_tool_choice")
    counted(grammar_build, "ensure_forcible")
    template = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    handler, llama, _ = fake_handler(template, ['<tool_call>\n{"name": "get_weather", ', "}"])
    handler(
        llama=llama,
        messages=[{"role": "user", "content": "x"}],
        tools=[WEATHER],
        tool_choice="required",
    )
    assert counts == {
        "tooldialect.frontend.options.normalize_tools": 1,
        "tooldialect.frontend.options.normalize_tool_choice": 1,
        "tooldialect.grammar.build.ensure_forcible": 1,
    }
