"""No code from the model or the template ever runs, and the caller's objects are never mutated."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TEMPLATES
from tooldialect import TemplateError, ToolSpecError, detect_dialect, parse_output
from tooldialect.dialect.builtins import builtin_dialects
from tooldialect.dialect.spec import DialectSpec
from tooldialect.prompt.render import render_prompt
from tooldialect.prompt.template import ChatTemplate

SRC = Path(__file__).resolve().parent.parent / "src" / "tooldialect"
FORBIDDEN_CALLS = {"eval", "exec", "__import__", "execfile", "compile"}


def test_library_source_never_calls_eval_exec_or_compile() -> None:
    """Statically: no call to eval/exec/compile/__import__ anywhere in the package."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else ""
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    # builtins.eval(...) counts; re.compile(...) does not
                    name = func.attr if func.value.id == "builtins" else ""
                if name in FORBIDDEN_CALLS:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {name}")
    assert found == []


PAYLOADS = [
    "__import__('os').system('echo pwned')",
    "open('/etc/passwd').read()",
    "(lambda: 1)()",
    "[x for x in ().__class__.__base__.__subclasses__()]",
    "exec('x=1')",
    "os.environ",
    "1 if True else 2",
    "f'{1}'",
]

PYTHON_DIALECTS = [
    name
    for name in builtin_dialects()
    if "python" in DialectSpec.builtin(name).model_dump_json()
    or "(" in DialectSpec.builtin(name).render_call("f", {"x": 1})
]


@pytest.mark.parametrize("name", PYTHON_DIALECTS, ids=PYTHON_DIALECTS)
def test_python_style_calls_are_read_without_running_anything(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dynamically: with eval/exec (and compiling to code) booby-trapped, hostile arguments are
    read as text or refused, never run."""
    ran: list[str] = []
    real_compile = builtins.compile

    def trap(label: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            ran.append(label)
            raise AssertionError(f"{label} was called")

        return fail

    def compile_ast_only(source: Any, filename: Any, mode: Any, flags: int = 0, **kw: Any) -> Any:
        if not flags & ast.PyCF_ONLY_AST:
            ran.append("compile")
            raise AssertionError("compile to code was called")
        return real_compile(source, filename, mode, flags, **kw)

    monkeypatch.setattr(builtins, "eval", trap("eval"))
    monkeypatch.setattr(builtins, "exec", trap("exec"))
    monkeypatch.setattr(builtins, "compile", compile_ast_only)
    spec = DialectSpec.builtin(name)
    template = spec.render_call("get_weather", {"city": "SENTINEL"})
    for payload in PAYLOADS:
        text = template.replace('"SENTINEL"', payload).replace("'SENTINEL'", payload)
        result = parse_output(text, spec)
        for call in result.tool_calls:
            # whatever was read is data: strings at most, never the payload's effect
            assert "pwned" not in repr(call.arguments) or payload in repr(call.arguments)
    assert ran == []


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.environ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ lipsum.__globals__['os'].environ }}",
    "{{ raise_exception.__globals__ }}",
    "{{ range.__globals__ }}",
    "{{ strftime_now.__self__.__class__ }}",
    "{{ dict.__class__.__base__.__subclasses__() }}",
    "{{ messages.__class__.__base__ }}",
    "{{ ''.format.__globals__ }}",
    "{{ '{0.__class__.__init__.__globals__}'.format(messages) }}",
    "{{ self.__init__.__globals__ }}",
    "{% import 'os' as os %}{{ os.environ }}",
    "{% include '/etc/passwd' %}",
    "{% extends '/etc/hostname' %}",
    "{% from 'os' import environ %}{{ environ }}",
    "{{ config }}{{ request }}{{ environ }}{{ os }}",
    "{{ (messages|first).__class__.__init__ }}",
]


@pytest.mark.parametrize("source", ESCAPES, ids=[f"escape{i}" for i in range(len(ESCAPES))])
def test_template_cannot_reach_files_env_or_imports(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLDIALECT_SECRET", "s3cr3t-value")
    try:
        out = ChatTemplate(source).render([{"role": "user", "content": "hi"}])
    except TemplateError:
        return  # refused (TemplateSecurityError, or no loader for include/import)
    assert "s3cr3t-value" not in out
    assert "root:" not in out and "<class" not in out and "function" not in out


# ---- the caller's objects ------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3)
    ),
    max_leaves=8,
)
_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["system", "user", "assistant", "tool"]),
        "content": st.one_of(
            st.text(max_size=20),
            st.none(),
            st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=9)})),
        ),
    },
    optional={
        "extra": _json,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.just("call00001"),
                    "type": st.just("function"),
                    "function": st.fixed_dictionaries(
                        {
                            "name": st.sampled_from(["get_weather", "other"]),
                            "arguments": st.one_of(
                                st.dictionaries(st.text(max_size=4), _json, max_size=3),
                                st.just('{"city": "Paris"}'),
                            ),
                        }
                    ),
                }
            ),
            max_size=2,
        ),
        "reasoning_content": st.text(max_size=10),
    },
)
_tools = st.lists(
    st.builds(
        lambda name, props: {
            "type": "function",
            "function": {
                "name": name,
                "description": "d",
                "parameters": {"type": "object", "properties": props},
            },
        },
        st.sampled_from(["get_weather", "search"]),
        st.dictionaries(st.sampled_from(["a", "b"]), st.just({"type": "string"}), max_size=2),
    ),
    max_size=2,
    unique_by=lambda t: t["function"]["name"],  # type: ignore[index]  # built just above
)
MUTATION_TEMPLATES = [
    "Qwen2.5-Coder-0.5B-Instruct.jinja",  # native tools
    "SmolLM2-135M-Instruct.jinja",  # polyfill: messages are rewritten (on copies)
    "meetkai-functionary-medium-v3.2.jinja",  # string arguments
    "openai-gpt-oss-120b.jinja",  # reasoning fields
]


@pytest.mark.parametrize("name", MUTATION_TEMPLATES, ids=MUTATION_TEMPLATES)
def test_caller_objects_are_never_mutated(name: str) -> None:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    template = ChatTemplate(source)
    spec = detect_dialect(source)

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(messages=st.lists(_message, min_size=1, max_size=5), tools=_tools)
    def run(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        before = copy.deepcopy((messages, tools))
        # a template (or the history checks) may refuse a random conversation; it still must
        # not mutate it
        with contextlib.suppress(TemplateError, ToolSpecError):
            render_prompt(template, spec, messages, tools=tools)
        assert (messages, tools) == before

    run()


def test_environment_is_untouched_by_rendering() -> None:
    before = dict(os.environ)
    ChatTemplate("{{ messages[0].content }}").render([{"role": "user", "content": "x"}])
    assert dict(os.environ) == before
