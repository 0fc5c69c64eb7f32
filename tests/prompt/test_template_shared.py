"""Shared template data: tool forms built once, never changed by a template, tools cached."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tooldialect.dialect.builtins import get_builtin
from tooldialect.frontend.render import render_prompt
from tooldialect.prompt.shared import is_shared, tool_form, tool_forms
from tooldialect.prompt.template import ChatTemplate
from tooldialect.tool_defs import normalize_tools, tools_key

USER = [{"role": "user", "content": "hi"}]


def _tools(n: int = 2, *, doc: str = "Doc.") -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": doc,
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "string", "enum": ["x", "y"]}},
                },
            },
        }
        for i in range(n)
    ]


SAY = "{% for m in messages %}{{ m.content }}\n{% endfor %}"
PRINT = SAY + "{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
MUTATING = [
    # each changes the tool data it was given, then prints it
    SAY + "{% for t in tools %}{% set _ = t.function.update({'name': 'changed'}) %}"
    "{{ t | tojson }}\n{% endfor %}",
    SAY + "{% for t in tools %}{% set _ = t.function.parameters.properties.pop('a') %}"
    "{{ t | tojson }}\n{% endfor %}",
    SAY + "{% set _ = tools[0].function.parameters.properties.a.enum.append('z') %}"
    "{% for t in tools %}{{ t | tojson }}\n{% endfor %}",
]


def test_tool_forms_are_built_once_and_registered() -> None:
    (tool,) = normalize_tools(_tools(1))
    form = tool_form(tool)
    assert tool_form(tool) is form
    assert is_shared(form) and is_shared(form["function"]["parameters"])
    assert list(form["function"]) == ["name", "description", "parameters"]
    assert not is_shared(copy.deepcopy(form))


@pytest.mark.parametrize("source", MUTATING, ids=["update", "pop", "append"])
def test_a_template_that_changes_its_tools_gets_copies(source: str) -> None:
    """The render is what a render on fresh copies gives; the shared forms stay as they were."""
    raw = _tools()
    defs = normalize_tools(raw)
    before = copy.deepcopy([tool_form(t) for t in defs])
    template = ChatTemplate(source)
    copied = ChatTemplate(source).render(USER, tools=copy.deepcopy(before))
    for _ in range(2):  # the first render retries on copies, later ones copy from the start
        assert render_prompt(template, get_builtin("hermes"), USER, tools=raw) == copied
        assert [tool_form(t) for t in defs] == before
    assert ChatTemplate(PRINT).render(USER, tools=raw) != copied  # the mutation was visible


def test_tojson_of_shared_tools_matches_a_fresh_dump() -> None:
    raw = _tools(3)
    plain = ChatTemplate(PRINT).render(USER, tools=copy.deepcopy(raw))
    for _ in range(2):
        assert render_prompt(PRINT, get_builtin("hermes"), USER, tools=raw) == plain


def test_equal_tools_give_the_same_tool_defs_and_changed_ones_do_not() -> None:
    first = normalize_tools(_tools())
    again = normalize_tools(_tools())
    assert [id(t) for t in again] == [id(t) for t in first]
    changed = normalize_tools(_tools(doc="Another doc."))
    assert changed[0] is not first[0] and changed[0].description == "Another doc."
    assert tools_key(changed) != tools_key(first)
    assert tools_key(again) == tools_key(first)
    again.pop()  # the list is the caller's; the cache keeps its own
    assert len(normalize_tools(_tools())) == 2


def test_tools_mutated_by_the_caller_are_read_again() -> None:
    raw = _tools()
    first = normalize_tools(raw)
    raw[0]["function"]["description"] = "Edited in place."
    assert normalize_tools(raw)[0].description == "Edited in place."
    assert first[0].description == "Doc."


def test_a_tool_list_seen_before_gives_its_forms_again_in_a_new_list() -> None:
    defs = normalize_tools(_tools(3))
    forms = tool_forms(defs)
    again = tool_forms(defs)
    assert again == forms and again is not forms  # the caller may change its list
    assert all(a is b for a, b in zip(again, forms, strict=True))  # the shared forms themselves
    again.append({"changed": True})
    assert len(tool_forms(defs)) == 3


def test_a_changed_tool_in_a_known_list_gets_its_own_form() -> None:
    defs = normalize_tools(_tools(3))
    forms = tool_forms(defs)
    edited = normalize_tools([*_tools(2), *_tools(3, doc="Changed.")[2:]])
    got = tool_forms(edited)
    assert got[:2] == forms[:2] and got[2] is not forms[2]
    assert got[2]["function"]["description"] == "Changed."


def test_a_form_evicted_from_the_tool_cache_is_not_served_from_the_list_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooldialect.prompt import shared

    defs = normalize_tools(_tools(3))
    forms = tool_forms(defs)
    monkeypatch.setattr(shared, "_CAPACITY", 1)
    tool_form(normalize_tools(_tools(1, doc="Other."))[0])  # evicts the three forms
    assert not is_shared(forms[0])
    monkeypatch.setattr(shared, "_CAPACITY", 4096)
    again = tool_forms(defs)
    assert again == forms and again[0] is not forms[0] and is_shared(again[0])


def test_a_request_with_a_tool_changed_in_place_never_reuses_a_stale_prompt_or_grammar() -> None:
    from tooldialect.frontend.pipeline import FrontEnd
    from tooldialect.frontend.request import ModelSetup
    from tooldialect.gguf import ModelInfo

    spec = get_builtin("hermes")
    setup = ModelSetup(
        info=ModelInfo(),
        template=ChatTemplate(PRINT),
        template_origin="user",
        spec=spec,
        engine=None,  # type: ignore[arg-type]
    )
    raw = _tools(3)
    front = FrontEnd(adapter="test")
    first = front.prepare_from(setup, USER, {"tools": raw, "tool_choice": "required"}, where="t")
    raw[1]["function"]["parameters"]["properties"]["a"]["enum"].append("zz")
    raw[1]["function"]["description"] = "Edited."
    second = front.prepare_from(setup, USER, {"tools": raw, "tool_choice": "required"}, where="t")
    assert "Edited." in second.prompt and "Edited." not in first.prompt
    assert first.grammar is not None and second.grammar is not None
    assert "zz" in second.grammar.gbnf and "zz" not in first.grammar.gbnf
    third = front.prepare_from(setup, USER, {"tools": raw, "tool_choice": "required"}, where="t")
    assert (third.prompt, third.grammar) == (second.prompt, second.grammar)
