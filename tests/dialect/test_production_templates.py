"""Invented production-style templates (tests/dialect/production_templates.py) are read.

Each template is 100-200 lines composed from independent feature axes (headers, call envelope,
section, argument rendering, macros, ``namespace()`` state, content parts, reasoning, tool
results, end of turn, system prompt, tool list, validation), a seeded pairwise covering of their
combinations. Each must be valid Jinja that renders the tool conversation as intended (its own
Python twin of the calls, every message, in order), and ``check_template`` must read its rich
call exactly, with builtins and derived only. The combinations derivation cannot read today are
strict xfails by feature axis, with the reason, so a fix flips them.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
import jinja2.ext
import pytest
from bench.corpus import CORPUS
from production_calls import render_calls
from production_templates import AXES, Production, productions

from tooldialect.conformance import check_template, conversation
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import RICH_ARGUMENTS, tool_for

PRODUCTIONS = productions()
BY_NAME = {p.name: p for p in PRODUCTIONS}

FLOOR = 29 / 29
"""The share of the sample read today (derived only, and with builtins: the same set)."""

GAPS: list[tuple[Callable[[Mapping[str, str]], bool], str]] = []
"""What derivation does not read yet, by feature axis, and why (``report.reason`` quoted)."""


def gap(production: Production) -> str:
    """Why ``production`` is not read today (``""`` when it is)."""
    return next((why for applies, why in GAPS if applies(production.choice)), "")


def _cases() -> list[Any]:
    return [
        pytest.param(
            p,
            id=p.name,
            marks=[pytest.mark.xfail(strict=True, reason=gap(p))] if gap(p) else [],
        )
        for p in PRODUCTIONS
    ]


def _pairs(choice: Mapping[str, str]) -> set[tuple[str, str, str, str]]:
    return {(a, choice[a], b, choice[b]) for a, b in itertools.combinations(AXES, 2)}


def test_sample_is_a_deterministic_pairwise_covering() -> None:
    assert 24 <= len(PRODUCTIONS) <= 40
    assert [p.source for p in productions()] == [p.source for p in PRODUCTIONS]
    assert len(BY_NAME) == len(PRODUCTIONS)
    covered = set().union(*(_pairs(p.choice) for p in PRODUCTIONS))
    every = {
        (a, va, b, vb)
        for a, b in itertools.combinations(AXES, 2)
        for va in AXES[a]
        for vb in AXES[b]
    }
    assert covered == every


@pytest.mark.parametrize("production", PRODUCTIONS, ids=[p.name for p in PRODUCTIONS])
def test_template_is_production_sized(production: Production) -> None:
    assert 100 <= production.source.count("\n") <= 200


MARKER = re.compile(r"<\|[\w/]+\|>|\[/?[A-Z]+[\] ]|</?[a-z_]+[>= ]")


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the real-template corpus is not at {CORPUS}")
def test_markers_are_invented() -> None:
    markers = set().union(*(MARKER.findall(p.source) for p in PRODUCTIONS))
    assert len(markers) >= 30
    corpus = [f.read_text(encoding="utf-8") for f in CORPUS.glob("*.jinja")]
    assert corpus
    copied = sorted(m for m in markers if any(m in text for text in corpus))
    assert not copied, f"markers that occur in real templates: {copied}"


def _in_order(text: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


@pytest.mark.parametrize("production", PRODUCTIONS, ids=[p.name for p in PRODUCTIONS])
def test_template_renders_the_conversation(production: Production) -> None:
    template = ChatTemplate(production.source, eos_token="<eos>")
    caps = template.capabilities
    assert caps.tools and caps.tool_calls and caps.tool_role and caps.parallel_calls
    assert caps.system_role
    text = template.render(conversation(), tools=[tool_for(RICH_ARGUMENTS)])
    call = render_calls(production.choice, [("qx7call01", "lookup_item", RICH_ARGUMENTS)])
    parts = ["Be brief.", "Find a lamp.", call, '{"found": 1}', "Thanks. Another?"]
    assert _in_order(text, parts), text


@pytest.mark.parametrize("production", PRODUCTIONS, ids=[p.name for p in PRODUCTIONS])
def test_template_renders_parallel_calls(production: Production) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("call00001", "first_fn", {"a": 1}),
        ("call00002", "second_fn", {"b": "x y"}),
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Two things."},
        {"role": "assistant", "content": "On it.", "tool_calls": [_call(*c) for c in calls]},
        *({"role": "tool", "tool_call_id": c[0], "content": f"done {c[1]}"} for c in calls),
    ]
    text = ChatTemplate(production.source).render(messages, add_generation_prompt=False)
    assert _in_order(text, ["On it.", render_calls(production.choice, calls)]), text
    assert _in_order(text, ["done first_fn", "done second_fn"]), text


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def _raw_render(source: str, messages: list[dict[str, Any]]) -> str:
    """Render with plain Jinja (no message normalisation, which flattens content parts)."""

    def fail(message: str) -> None:
        raise jinja2.TemplateError(message)

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.do])
    env.policies["json.dumps_function"] = json.dumps
    return env.from_string(source).render(
        messages=messages, raise_exception=fail, add_generation_prompt=True, bos_token=""
    )


@pytest.mark.parametrize(
    "production",
    [p for p in PRODUCTIONS if p.choice["content"] == "parts"],
    ids=[p.name for p in PRODUCTIONS if p.choice["content"] == "parts"],
)
def test_content_parts_render_as_text(production: Production) -> None:
    def parts(text: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": text}]

    plain = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."}]
    split = [
        {"role": "system", "content": parts("Be brief.")},
        {"role": "user", "content": parts("Hi.")},
    ]
    assert _raw_render(production.source, split) == _raw_render(production.source, plain)
    with pytest.raises(jinja2.TemplateError, match="Only text parts"):
        _raw_render(production.source, [{"role": "user", "content": [{"type": "image"}]}])


@pytest.mark.parametrize("builtins", [False, True], ids=["derived", "builtins"])
@pytest.mark.parametrize("production", _cases())
def test_own_call_is_read(production: Production, builtins: bool) -> None:
    report = check_template(production.source, builtins=builtins)
    assert report.verdict == "reads", report.reason


@pytest.mark.parametrize("builtins", [False, True], ids=["derived", "builtins"])
def test_read_rate(builtins: bool) -> None:
    read = [
        p.name
        for p in PRODUCTIONS
        if check_template(p.source, builtins=builtins).verdict == "reads"
    ]
    assert len(read) / len(PRODUCTIONS) >= FLOOR, f"read {len(read)} of {len(PRODUCTIONS)}"
