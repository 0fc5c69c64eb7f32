"""The builtin registry: every family's spec as data, rendered exactly, persisted, consistent."""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from tooldialect.dialect.builtins import Signature, builtin, builtin_dialects, get_builtin
from tooldialect.dialect.families import hermes as hermes_family
from tooldialect.dialect.spec import DialectSpec, JsonBody, format_template
from tooldialect.errors import DialectError

TEMPLATES = Path(__file__).parent.parent / "fixtures" / "templates"

# What each builtin writes for get_weather(city="Paris", days=2) with call id "abcDEF123" (file
# golden_renders.json): the
# canonical layout, character for character (markers checked against the templates named in each
# builtin's docstring; tests/dialect/test_templates.py checks them against the rendered templates).
GOLDEN_RENDER: dict[str, str] = json.loads(
    (Path(__file__).parent / "golden_renders.json").read_text(encoding="utf-8")
)

IDS = builtin_dialects()


def test_every_builtin_has_a_golden_render() -> None:
    assert sorted(GOLDEN_RENDER) == IDS


@pytest.mark.parametrize("name", IDS, ids=IDS)
def test_render_call_is_exact(name: str) -> None:
    spec = get_builtin(name)
    assert (
        spec.render_call("get_weather", {"city": "Paris", "days": 2}, call_id="abcDEF123")
        == (GOLDEN_RENDER[name])
    )


@pytest.mark.parametrize("name", IDS, ids=IDS)
def test_builtin_is_well_formed(name: str) -> None:
    spec = get_builtin(name)
    assert spec.id == name
    assert spec.origin == ("polyfill" if spec.polyfill is not None else "builtin")
    assert spec.family and spec.description
    # forcible unless argued otherwise
    assert spec.forcible or spec.unforcible_reason
    # the canonical layout starts with the opener the lazy grammar triggers on
    text = spec.render_call("get_weather", {"city": "Paris"}, call_id="abcDEF123")
    assert text.startswith(spec.primary.opener())
    if spec.reasoning is not None:
        assert spec.reasoning.open and spec.reasoning.close
        assert spec.reasoning.open != spec.reasoning.close


@pytest.mark.parametrize("name", IDS, ids=IDS)
def test_triggers_fire_on_the_rendered_call(name: str) -> None:
    spec = get_builtin(name)
    for fmt in spec.formats:
        one = spec.model_copy(update={"formats": [fmt]})
        text = one.render_call("get_weather", {"city": "Paris"}, call_id="abcDEF123")
        triggers = fmt.effective_triggers()
        if not triggers:
            continue
        fired = []
        for t in triggers:
            if t.kind == "word":
                fired.append(t.value in text)
            else:
                rx = re.compile(_with_names(t.value))
                assert rx.groups >= 1, f"{name}: pattern {t.value!r} needs a capture group"
                m = rx.search(text)
                # the grammar starts at the first group: it must be where the emission starts
                fired.append(m is not None and m.start(1) == len(text) - len(text.lstrip()))
        assert any(fired), f"{name}: no trigger of {fmt.opener()!r} fires on {text!r}"


def _with_names(pattern: str, names: tuple[str, ...] = ("get_weather",)) -> str:
    """A trigger pattern with ``{name}`` bound to the tools' names, as the grammar builder does."""
    return format_template(pattern, name="(?:" + "|".join(map(re.escape, names)) + ")")


def test_functionary_v3_2_trigger_skips_prose_channel() -> None:
    (trigger,) = get_builtin("functionary-v3.2").primary.triggers
    pattern = _with_names(trigger.value)
    assert re.search(pattern, ">>>all\nHello there.\n") is None
    assert re.search(pattern, ">>>all\nHi\n>>>get_weather\n{") is not None
    assert re.search(pattern, ">>>print\n{") is None  # not a tool: no replay the grammar rejects


def test_llama_3_trigger_fires_only_where_the_grammar_can_follow() -> None:
    (trigger,) = get_builtin("llama-3").primary.triggers
    pattern = _with_names(trigger.value)
    m = re.search(pattern, ' {"name": "get_weather", "parameters": {}}')
    assert m is not None and m.group(1).startswith("{")
    assert re.search(pattern, 'Sure: {"name": "x"}') is None
    # the grammar writes no "type" key, so a trigger firing on one would replay a misfit
    assert re.search(pattern, '{"type": "function", "name": "get_weather"}') is None


@pytest.mark.parametrize("name", IDS, ids=IDS)
def test_spec_round_trips_through_json(name: str) -> None:
    spec = get_builtin(name)
    again = DialectSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    assert again.render_call("f", {"a": [1, None]}, call_id="abcDEF123") == spec.render_call(
        "f", {"a": [1, None]}, call_id="abcDEF123"
    )


@pytest.mark.parametrize("name", IDS, ids=IDS)
def test_spec_with_unknown_fields_still_loads(name: str) -> None:
    spec = get_builtin(name)
    data = json.loads(spec.model_dump_json())
    data["from_the_future"] = {"anything": True}
    data["formats"][0]["new_layout_field"] = 1
    data["formats"][0]["body"]["new_body_field"] = "x"
    assert DialectSpec.model_validate_json(json.dumps(data)) == spec


def test_native_ids() -> None:
    kimi = get_builtin("kimi-k2")
    assert kimi.new_id(name="get_weather", index=3) == "functions.get_weather:3"
    assert "functions.get_weather:1<|tool_call_argument_begin|>" in kimi.render_call(
        "get_weather", {}, index=1
    )
    for name in ("mistral-nemo", "mistral-small-3.2", "mistral-v11"):
        assert re.fullmatch(r"[A-Za-z0-9]{9}", get_builtin(name).new_id())
    assert get_builtin("command-r7b").new_id(index=2) == "2"


def test_one_call_families() -> None:
    singles = sorted(n for n in IDS if not get_builtin(n).parallel_calls)
    assert singles == ["gigachat", "gpt-oss"]


def test_unknown_builtin_lists_valid_names() -> None:
    with pytest.raises(DialectError, match=r"unknown dialect 'nope'.*hermes.*qwen3-coder"):
        get_builtin("nope")
    with pytest.raises(DialectError, match=r"unknown dialect 'nope'.*hermes.*qwen3-coder"):
        DialectSpec.builtin("nope")
    assert DialectSpec.builtin("hermes") is get_builtin("hermes")


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(DialectError, match="duplicate builtin dialect id 'hermes'"):
        builtin(hermes_family.hermes)
    with pytest.raises(DialectError, match="duplicate"):
        builtin(signatures=[Signature(("x",))])(hermes_family.hermes)


def test_signature_matching() -> None:
    sig = Signature(("<a>", "<b>"), none_of=("<c>",))
    assert sig.matches("..<b>..<a>..")
    assert not sig.matches("<a> only")
    assert not sig.matches("<a><b><c>")


def _family_functions() -> list[tuple[str, object]]:
    """Every zero-argument function returning a DialectSpec in the registry and families."""
    modules = [
        importlib.import_module(f"tooldialect.dialect.families.{m}")
        for m in ("hermes", "json_envelope", "tagged", "element", "python_call")
    ]
    found: list[tuple[str, object]] = []
    for mod in modules:
        for fname, fn in inspect.getmembers(mod, inspect.isfunction):
            sig = inspect.signature(fn)
            returns_spec = sig.return_annotation in ("DialectSpec", DialectSpec)
            if fn.__module__ == mod.__name__ and returns_spec and not sig.parameters:
                found.append((fname, fn))
    return found


FAMILY_FUNCTIONS = _family_functions()


def test_one_function_per_builtin() -> None:
    assert len(FAMILY_FUNCTIONS) == len(IDS)


@pytest.mark.parametrize(
    "fn", [f for _, f in FAMILY_FUNCTIONS], ids=[n for n, _ in FAMILY_FUNCTIONS]
)
def test_docstring_names_its_template(fn: object) -> None:
    doc = " ".join((inspect.getdoc(fn) or "").split())
    named = re.findall(r"[\w.-]+\.jinja", doc)
    lower = doc.lower()
    if "no template in the corpus" in lower or "no tool support" in lower or "emulated" in lower:
        return
    assert named, f"{fn}: docstring names no template and does not say there is none"
    for file in named:
        if "*" not in file:
            assert (TEMPLATES / file).exists(), f"{file} is not in tests/fixtures/templates"


def test_json_bodies_use_their_keys() -> None:
    body = get_builtin("command-r7b").primary.body
    assert isinstance(body, JsonBody)
    assert (body.name_key, body.arguments_key, body.id_key, body.id_first) == (
        "tool_name",
        "parameters",
        "tool_call_id",
        True,
    )
