"""instructor on ``Llama.create_chat_completion_openai_v1``: every mode its llama-cpp-python docs
and users reach for extracts a small pydantic model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldialect import ToolChatHandler

pytestmark = pytest.mark.model

HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
instructor = pytest.importorskip("instructor", reason=HINT)


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(
        str(qwen_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=ToolChatHandler()
    )
    yield llm
    llm.close()


MODES = ["TOOLS", "JSON", "JSON_SCHEMA", "MD_JSON"]


@pytest.mark.parametrize("mode", MODES)
def test_instructor_mode_extracts(qwen: Any, mode: str) -> None:
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        age: int

    create = instructor.patch(
        create=qwen.create_chat_completion_openai_v1, mode=getattr(instructor.Mode, mode)
    )
    person = create(
        messages=[{"role": "user", "content": "Extract the person: Jason is 25 years old."}],
        response_model=Person,
        temperature=0,
        max_tokens=64,
        max_retries=0,
    )
    assert isinstance(person, Person)
    assert person.name.lower().startswith("jason") and person.age == 25
