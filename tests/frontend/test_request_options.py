"""Per-request template variables and options, which ``Llama.create_chat_completion`` cannot
forward, reach the template through ``tooldialect.create_chat_completion`` and handler options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tooldialect
from conftest import read_template

# SmolLM2's own ChatML template, plus a line that shows the template variable under test.
PROBE_TEMPLATE = (
    "{% if enable_thinking is defined %}<|im_start|>system\nthinking={{ enable_thinking }}"
    "<|im_end|>\n{% endif %}" + read_template("SmolLM2-135M-Instruct.jinja")
)
USER = [{"role": "user", "content": "Say hi."}]


@pytest.fixture(scope="module")
def llm(smollm2_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    handler = tooldialect.ToolChatHandler(
        chat_template=PROBE_TEMPLATE, template_kwargs={"enable_thinking": True}
    )
    model = Llama(str(smollm2_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler)
    yield model
    model.close()


def prompt_of(llm: Any, **request: Any) -> str:
    prepared = llm.chat_handler.prepare(llama=llm, messages=USER, **request)
    return str(prepared.prompt)


@pytest.mark.model
def test_handler_template_kwargs_apply_to_every_request(llm: Any) -> None:
    assert "thinking=True" in prompt_of(llm)


@pytest.mark.model
@pytest.mark.parametrize(
    "request_options",
    [{"enable_thinking": False}, {"chat_template_kwargs": {"enable_thinking": False}}],
    ids=["keyword", "chat_template_kwargs"],
)
def test_request_keywords_override_handler_options(llm: Any, request_options: Any) -> None:
    assert "thinking=False" in prompt_of(llm, **request_options)
    response = tooldialect.create_chat_completion(
        llm, messages=USER, max_tokens=2, temperature=0, **request_options
    )
    assert isinstance(response, dict)
    assert response["usage"]["prompt_tokens"] == len(
        llm.tokenize(prompt_of(llm, **request_options).encode(), add_bos=False, special=True)
    )


@pytest.mark.model
def test_create_chat_completion_needs_a_tool_handler(smollm2_path: Path) -> None:
    from llama_cpp import Llama

    plain = Llama(str(smollm2_path), n_threads=2, n_ctx=512, verbose=False)
    with pytest.raises(tooldialect.ToolSpecError, match="ToolChatHandler"):
        tooldialect.create_chat_completion(plain, messages=USER)
    plain.close()
