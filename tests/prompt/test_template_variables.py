"""The variables a template reads are found once, in the walk that compiles it (issue 20: no
second parse per template); they must equal what ``jinja2.meta`` finds by parsing again."""

from __future__ import annotations

from pathlib import Path

import pytest
from jinja2 import meta

from conftest import TEMPLATES as TEMPLATE_DIR
from tooldialect import ChatTemplate

TEMPLATES = sorted(TEMPLATE_DIR.glob("*.jinja"))


def _meta_variables(template: ChatTemplate) -> frozenset[str]:
    env = template._template.environment  # the one it parses in
    return frozenset(meta.find_undeclared_variables(env.parse(template.source)))


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_variables_found_while_compiling_equal_jinja_meta(path: Path) -> None:
    template = ChatTemplate(path.read_text())
    assert template.variables == _meta_variables(template)


def test_variables_are_not_shared_between_templates() -> None:
    # two texts compiled one after the other: each keeps its own reads (one environment each)
    first = ChatTemplate("{{ messages[0].content }}{{ tools_in_a }}")
    second = ChatTemplate("{% for m in messages %}{{ m.content }}{{ only_b }}{% endfor %}")
    assert first.variables == {"messages", "tools_in_a"}
    assert second.variables == {"messages", "only_b"}
    assert ChatTemplate(first.source).variables == {"messages", "tools_in_a"}


def test_set_and_loop_names_and_globals_are_not_read() -> None:
    template = ChatTemplate(
        "{% set x = 1 %}{% for m in messages %}{{ m }}{{ x }}{{ loop.index }}{% endfor %}"
        "{{ raise_exception('no') if flag else '' }}"
        "{% macro f(a) %}{{ a }}{{ inner }}{% endmacro %}"
    )
    assert template.variables == {"messages", "flag", "inner"}
