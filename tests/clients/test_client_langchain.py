"""LangChain's ``ChatLlamaCpp`` driving the handler through ``chat_format="tooldialect"``:
bind_tools with a dict, a bare name and no tool_choice (its streaming path), .stream() equal to
.invoke(), a ToolMessage turn, with_structured_output."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tooldialect
from tool_defs import WEATHER

pytestmark = pytest.mark.model

HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
pytest.importorskip("langchain_core", reason=HINT)
pytest.importorskip("langchain_community", reason=HINT)

ASK = "What's the weather in Paris?"


def chat_model(path: Path, **options: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.chat_models import ChatLlamaCpp

    tooldialect.register()
    return ChatLlamaCpp(
        model_path=str(path),
        n_threads=2,
        n_ctx=2048,
        temperature=0,
        max_tokens=48,
        verbose=False,
        model_kwargs={"chat_format": "tooldialect"},
        **options,
    )


@pytest.fixture(scope="module")
def qwen_lc(qwen_path: Path) -> Iterator[Any]:
    model = chat_model(qwen_path)
    yield model
    model.client.close()


def only_call(message: Any) -> dict[str, Any]:
    assert len(message.tool_calls) == 1, message
    call = message.tool_calls[0]
    assert call["name"] == "get_weather" and isinstance(call["args"].get("city"), str)
    return dict(call)


@pytest.mark.parametrize(
    "tool_choice",
    [{"type": "function", "function": {"name": "get_weather"}}, "get_weather"],
    ids=["dict", "bare-name"],
)
def test_bind_tools_forced(qwen_lc: Any, tool_choice: Any) -> None:
    bound = qwen_lc.bind_tools([WEATHER], tool_choice=tool_choice)
    only_call(bound.invoke(ASK))


def test_bind_tools_auto_stream_equals_invoke(qwen_lc: Any) -> None:
    bound = qwen_lc.bind_tools([WEATHER])
    whole = only_call(bound.invoke(ASK))
    total = None
    for chunk in bound.stream(ASK):
        total = chunk if total is None else total + chunk
    assert total is not None
    streamed = only_call(total)
    assert (streamed["name"], streamed["args"]) == (whole["name"], whole["args"])


def test_streaming_model_without_tool_choice(qwen_path: Path) -> None:
    """ChatLlamaCpp(streaming=True) routes invoke() through its stream path when no tool_choice."""
    model = chat_model(qwen_path, streaming=True)
    try:
        only_call(model.bind_tools([WEATHER]).invoke(ASK))
    finally:
        model.client.close()


def test_tool_message_turn(qwen_lc: Any) -> None:
    """A ToolMessage turn reaches the model's template as a tool result; the reply is a valid
    message (Qwen2.5-0.5B sometimes calls again: model behaviour, so either outcome is checked)."""
    from langchain_community.chat_models.llamacpp import _convert_message_to_dict
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = qwen_lc.bind_tools([WEATHER])
    first = bound.invoke(ASK)
    call = only_call(first)
    turn = [HumanMessage(ASK), first, ToolMessage("18 C and sunny", tool_call_id=call["id"])]
    request = tooldialect.register().prepare(
        llama=qwen_lc.client, messages=[_convert_message_to_dict(m) for m in turn], tools=[WEATHER]
    )
    assert "<tool_response>\n18 C and sunny\n</tool_response>" in request.prompt
    reply = bound.invoke(turn)
    if reply.tool_calls:
        only_call(reply)
    else:
        assert isinstance(reply.content, str) and reply.content.strip()


def test_with_structured_output(qwen_lc: Any) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        """A city and its country."""

        city: str
        country: str

    got = qwen_lc.with_structured_output(City).invoke("Paris is the capital of France.")
    assert isinstance(got, City) and got.city and got.country
    assert json.loads(got.model_dump_json())
