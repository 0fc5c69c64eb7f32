"""Compiled templates on disk: a new process loads the code instead of compiling the template."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from tooldialect.prompt import code_cache, template
from tooldialect.prompt.template import ChatTemplate

SOURCE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
    "{% if tools %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}<|a|>{% endif %}"
)
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TOOLDIALECT_CACHE_DIR", str(tmp_path))
    template._compile.cache_clear()
    template._read_variables.cache_clear()
    yield tmp_path
    template._compile.cache_clear()
    template._read_variables.cache_clear()


def _fresh(source: str) -> ChatTemplate:
    """As a new process sees it: nothing compiled in memory."""
    template._compile.cache_clear()
    template._read_variables.cache_clear()
    return ChatTemplate(source)


def test_a_second_process_loads_the_code_and_renders_the_same(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _fresh(SOURCE)
    want = first.render(MESSAGES, add_generation_prompt=True)
    files = list(cache.glob("*.jinjac"))
    assert len(files) == 1
    compiled: list[str] = []
    original: Any = jinja2.Environment.compile

    def counting(self: jinja2.Environment, source: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(source)
        return original(self, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    second = _fresh(SOURCE)
    assert second.render(MESSAGES, add_generation_prompt=True) == want
    assert compiled == []  # loaded, not compiled
    assert second.variables == first.variables
    assert {"messages", "tools", "add_generation_prompt"} <= second.variables


def test_each_template_text_has_its_own_file(cache: Path) -> None:
    _fresh(SOURCE).render(MESSAGES)
    other = SOURCE.replace("<|a|>", "<|assistant|>")
    assert _fresh(other).render(MESSAGES, add_generation_prompt=True).endswith("<|assistant|>")
    assert len(list(cache.glob("*.jinjac"))) == 2
    assert _fresh(SOURCE).render(MESSAGES, add_generation_prompt=True).endswith("<|a|>")


@pytest.mark.parametrize("garbage", [b"", b"\x00\x01not marshal", b"\xe9\x02\x00\x00\x00"])
def test_a_damaged_file_is_compiled_again_and_replaced(cache: Path, garbage: bytes) -> None:
    want = _fresh(SOURCE).render(MESSAGES, add_generation_prompt=True)
    (path,) = cache.glob("*.jinjac")
    path.write_bytes(garbage)
    assert _fresh(SOURCE).render(MESSAGES, add_generation_prompt=True) == want
    assert path.read_bytes() != garbage


def test_an_empty_setting_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLDIALECT_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() is None
    _fresh(SOURCE).render(MESSAGES)
    assert list(tmp_path.rglob("*.jinjac")) == []
    template._compile.cache_clear()


def test_an_unwritable_directory_only_costs_a_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TOOLDIALECT_CACHE_DIR", str(blocker / "sub"))
    assert _fresh(SOURCE).render(MESSAGES, add_generation_prompt=True).endswith("<|a|>")
    template._compile.cache_clear()


def test_a_template_that_does_not_compile_is_not_cached(cache: Path) -> None:
    from tooldialect.errors import TemplateError

    with pytest.raises(TemplateError):
        _fresh("{% for x in %}")
    assert list(cache.glob("*.jinjac")) == []
