"""The render budget: real templates fit with room to spare, hostile ones stop after bounded work.

Hostile templates are asserted on the work done when they stopped (steps, characters built), which
is deterministic; a thread with a generous timeout only detects a hang, it measures nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from conftest import TEMPLATES
from hostile_templates import HOSTILE, NESTED
from tooldialect import RenderBudget, RenderBudgetError, TemplateError, detect_dialect
from tooldialect.prompt import budget as tb
from tooldialect.prompt.budget import DEFAULT_BUDGET, RenderUsage, last_usage, using_budget
from tooldialect.prompt.template import ChatTemplate

HANG_GUARD_S = 60.0
"""Only a hang detector: every case below stops in well under a second on an idle machine."""


def run_guarded(fn: Callable[[], Any]) -> tuple[Any, BaseException | None, RenderUsage | None]:
    """Run ``fn`` in a daemon thread; fail the test (without hanging it) if it never returns."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:
            box["error"] = exc
        box["usage"] = last_usage()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "render hung: the budget did not stop it"
    return box.get("result"), box.get("error"), box.get("usage")


# ---------------------------------------------------------------------------------------------
# Real templates: 100 tools, 200 messages


def _tool(i: int) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Tool number {i} does a thing with several arguments. " * 3,
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "description": "first"},
                    "b": {"type": "integer", "enum": [1, 2, 3]},
                    "c": {
                        "type": "object",
                        "properties": {"x": {"type": "array", "items": {"type": "number"}}},
                    },
                    "d": {"type": "boolean"},
                },
                "required": ["a"],
            },
        },
    }


def _conversation() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for k in range(50):
        call_id = f"call{k:05d}"  # 9 alphanumerics: Mistral templates validate ids
        call = {"name": f"tool_{k}", "arguments": json.dumps({"a": "v", "b": 2})}
        messages += [
            {"role": "user", "content": f"question {k} " * 20},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": call_id, "name": call["name"], "content": "ok " * 10},
            {"role": "assistant", "content": f"answer {k} " * 20},
        ]
    return messages


TOOLS = [_tool(i) for i in range(100)]
CONVERSATION = _conversation()
assert len(CONVERSATION) == 201
REAL = sorted(p.name for p in TEMPLATES.glob("*.jinja"))


@pytest.mark.parametrize("name", REAL, ids=REAL)
def test_real_template_fits_default_budget_with_headroom(name: str) -> None:
    """Each vendored template renders 100 tools and 200 messages using under a fifth of each
    bound (templates that refuse this conversation for their own reasons are still measured)."""
    template = ChatTemplate((TEMPLATES / name).read_text(encoding="utf-8"), bos_token="<s>")
    try:
        template.render(CONVERSATION, tools=TOOLS, functions="", datetime="")
    except RenderBudgetError:
        raise
    except TemplateError:
        pass  # e.g. gemma-2 refuses tool roles; what it did before refusing is still bounded
    usage = last_usage()
    assert usage is not None
    assert usage.steps * 5 < DEFAULT_BUDGET.max_steps, usage
    assert usage.chars * 5 < DEFAULT_BUDGET.max_chars, usage


# ---------------------------------------------------------------------------------------------
# Hostile templates

HOSTILE_IDS = [case[0] for case in HOSTILE]


@pytest.mark.parametrize(("name", "source", "bound"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_template_stops_at_a_named_bound(name: str, source: str, bound: str) -> None:
    # The counted bounds are deterministic; the wall clock is lifted so that a loaded machine
    # cannot make the backstop trip first (bench/fuzz.py times the default budget).
    template = ChatTemplate(source, budget=RenderBudget(max_seconds=600))
    _, error, usage = run_guarded(lambda: template.render([{"role": "user", "content": "hi"}]))
    assert isinstance(error, RenderBudgetError), error
    assert error.bound == bound
    assert f"RenderBudget.{bound}=" in str(error)
    assert f"ToolChatHandler(render_budget=RenderBudget({bound}=...))" in str(error)
    # Bounded work: the render stopped at the bound (a step or one piece of output past it),
    # never after building what the template asked for.
    assert usage is not None
    assert usage.steps <= DEFAULT_BUDGET.max_steps + 16
    assert usage.chars <= 2 * DEFAULT_BUDGET.max_chars


def test_huge_source_is_refused_before_compiling() -> None:
    with pytest.raises(RenderBudgetError) as info:
        ChatTemplate("x" * (DEFAULT_BUDGET.max_source_chars + 1))
    assert info.value.bound == "max_source_chars"


def test_absurdly_nested_source_is_a_template_error() -> None:
    """Python's recursion limit in Jinja's parser becomes the library's error, not a crash."""
    source = "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    _, error, _ = run_guarded(lambda: ChatTemplate(source))
    assert isinstance(error, TemplateError), error
    assert "does not compile" in str(error)


def test_wall_clock_bound() -> None:
    budget = RenderBudget(max_steps=10**12, max_seconds=0.05)
    template = ChatTemplate(NESTED, budget=budget)
    _, error, usage = run_guarded(lambda: template.render([]))
    assert isinstance(error, RenderBudgetError) and error.bound == "max_seconds"
    assert usage is not None and usage.steps < 10**12


def test_budget_is_overridable_both_ways() -> None:
    source = "{% for i in range(3000) %}.{% endfor %}{{ messages[0].content }}"
    messages = [{"role": "user", "content": "hi"}]
    assert ChatTemplate(source).render(messages).endswith("hi")
    tight = ChatTemplate(source, budget=RenderBudget(max_steps=1000))
    with pytest.raises(RenderBudgetError, match="max_steps"):
        tight.render(messages)
    hostile = ChatTemplate(NESTED, budget=RenderBudget(max_steps=10**11, max_seconds=60))
    with using_budget(RenderBudget(max_steps=100)), pytest.raises(RenderBudgetError):
        ChatTemplate(source).render(messages)  # the ambient budget applies when none is given
    assert hostile.budget is not None and hostile.budget.max_steps == 10**11


def test_templates_cannot_see_or_reset_the_budget() -> None:
    probe = "{{ td_budget_loop is defined }}{{ environment is defined }}{{ _STATE is defined }}"
    assert ChatTemplate(probe).render([]) == "FalseFalseFalse"


@pytest.mark.parametrize("field", ["max_steps", "max_chars", "max_depth", "max_seconds"], ids=str)
def test_budget_fields_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        RenderBudget(**{field: 0})


def test_detection_renders_under_the_same_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Derivation renders a template dozens of times; a hostile one costs one bound, not dozens."""
    failures: list[str] = []
    real_fail = tb._fail

    def counting_fail(bound: str, budget: RenderBudget, what: str) -> RenderBudgetError:
        failures.append(bound)
        return real_fail(bound, budget, what)

    monkeypatch.setattr(tb, "_fail", counting_fail)
    source = NESTED + "{% for m in messages %}{{ m.content }}{% endfor %}"
    spec, error, _ = run_guarded(lambda: detect_dialect(source))
    assert error is None, error
    assert spec.id == "polyfill-json"
    assert 1 <= len(failures) <= 3, failures


def test_budget_does_not_change_what_real_templates_render() -> None:
    """The budgeted environment renders byte for byte what plain Jinja renders."""
    import jinja2.sandbox

    source = (TEMPLATES / "Qwen2.5-Coder-0.5B-Instruct.jinja").read_text(encoding="utf-8")
    plain = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    plain.filters["tojson"] = lambda v, **k: json.dumps(v, ensure_ascii=False, **k)
    messages = [{"role": "user", "content": "hi {{ not a template }}"}]
    ours = ChatTemplate(source).render(messages, tools=TOOLS[:3])
    theirs = plain.from_string(source).render(
        messages=messages, tools=TOOLS[:3], add_generation_prompt=True, bos_token="", eos_token=""
    )
    assert ours == theirs
