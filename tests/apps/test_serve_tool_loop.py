"""Issue 38's acceptance test: through ``tooldialect serve``, a two-step tool loop with the official
``openai`` and ``anthropic`` clients on Qwen2.5-Coder-0.5B ends in a worded answer after the tool
result, with no system prompt and ``tool_choice`` left at auto (never sent).

Each loop is the one a client writes itself: the user asks for the weather in Paris, the model
calls ``get_weather``, the test runs the tool and sends its result back the way that API carries
it (Chat Completions: the assistant message with ``tool_calls`` and a ``tool`` message; Messages:
``tool_use`` then ``tool_result`` blocks; Responses: the ``function_call`` item then its
``function_call_output``). The second reply must answer in words: no call, a normal stop, text
that is not the call written as text. Unsteered, the model calls ``get_weather`` again at that
point (tests/test_steering.py); steering (src/tooldialect/frontend/steering.py) takes that call
back and reminds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serve_process import serving
from tool_defs import WEATHER
from tooldialect.apps.serve import INSTALL_HINT

pytestmark = [pytest.mark.model, pytest.mark.slow]

HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
ASK = "What's the weather in Paris?"
MAX_TOKENS = 128
FUNCTION = WEATHER["function"]
ANTHROPIC_WEATHER = {
    "name": FUNCTION["name"],
    "description": FUNCTION["description"],
    "input_schema": FUNCTION["parameters"],
}
RESPONSES_WEATHER = {"type": "function", **FUNCTION}
CALL_AS_TEXT = ('"name"', "get_weather(", "<tool_call>")
"""What a call written as text shows: its JSON body, a Python-style call, the template's tag."""


def get_weather(city: str) -> str:
    """The tool the client runs."""
    return json.dumps({"city": city, "temperature_c": 7, "conditions": "sleet"})


def is_paris(arguments: dict[str, Any]) -> bool:
    return "paris" in str(arguments.get("city", "")).lower()


def assert_worded(text: str) -> None:
    """A non-empty answer in words, not the call written as text."""
    assert text.strip(), repr(text)
    for sign in CALL_AS_TEXT:
        assert sign not in text, f"{sign!r} in {text!r}"


@pytest.fixture(scope="module")
def base_url(qwen_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One running ``python -m tooldialect.apps.serve`` for the module (killed at the end); its
    root URL (``/v1/messages`` for Anthropic's client, ``/v1`` for OpenAI's)."""
    pytest.importorskip("llama_cpp.server.app", reason=INSTALL_HINT)
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serving(qwen_path, log) as url:
        yield url


@pytest.fixture(scope="module")
def openai_client(base_url: str) -> Any:
    openai = pytest.importorskip("openai", reason=HINT)
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=900)


@pytest.fixture(scope="module")
def anthropic_client(base_url: str) -> Iterator[Any]:
    anthropic = pytest.importorskip("anthropic", reason=HINT)
    with anthropic.Anthropic(
        base_url=base_url, api_key="unused", max_retries=0, timeout=900
    ) as opened:
        yield opened


def test_chat_completions_loop_ends_in_words(openai_client: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": ASK}]
    first = openai_client.chat.completions.create(
        model="qwen", messages=messages, tools=[WEATHER], temperature=0, max_tokens=MAX_TOKENS
    )
    turn = first.choices[0].message
    print("step 1:", first.choices[0].finish_reason, turn.model_dump(exclude_none=True))
    assert first.choices[0].finish_reason == "tool_calls", turn
    assert turn.tool_calls, turn
    sent = turn.model_dump(exclude_none=True)
    sent.setdefault("content", None)  # what OpenAI clients send for a call-only turn
    messages.append(sent)
    for call in turn.tool_calls:
        assert call.function.name == "get_weather", call
        arguments = json.loads(call.function.arguments)
        assert is_paris(arguments), call
        result = get_weather(**arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    second = openai_client.chat.completions.create(
        model="qwen", messages=messages, tools=[WEATHER], temperature=0, max_tokens=MAX_TOKENS
    )
    choice = second.choices[0]
    print("step 2:", choice.finish_reason, choice.message.model_dump(exclude_none=True))
    assert not choice.message.tool_calls, choice.message
    assert choice.finish_reason == "stop", choice
    assert_worded(choice.message.content or "")


def test_messages_loop_ends_in_words(anthropic_client: Any) -> None:
    # the newest SDK takes no sampling arguments; the server reads them from the body
    greedy: dict[str, Any] = {
        "model": "qwen",
        "max_tokens": MAX_TOKENS,
        "tools": [ANTHROPIC_WEATHER],
        "extra_body": {"temperature": 0, "top_k": 1},
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": ASK}]
    first = anthropic_client.messages.create(messages=messages, **greedy)
    print("step 1:", first.stop_reason, [b.model_dump() for b in first.content])
    assert first.stop_reason == "tool_use", first.content
    uses = [b for b in first.content if b.type == "tool_use"]
    assert uses, first.content
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    results = []
    for use in uses:
        assert use.name == "get_weather" and is_paris(use.input), use
        content = get_weather(**use.input)
        results.append({"type": "tool_result", "tool_use_id": use.id, "content": content})
    messages.append({"role": "user", "content": results})

    second = anthropic_client.messages.create(messages=messages, **greedy)
    print("step 2:", second.stop_reason, [b.model_dump() for b in second.content])
    assert not [b for b in second.content if b.type == "tool_use"], second.content
    assert second.stop_reason == "end_turn", second
    texts = [b.text for b in second.content if b.type == "text"]
    assert texts, second.content
    assert_worded("".join(texts))


def test_responses_loop_ends_in_words(openai_client: Any) -> None:
    greedy: dict[str, Any] = {
        "model": "qwen",
        "tools": [RESPONSES_WEATHER],
        "temperature": 0,
        "max_output_tokens": MAX_TOKENS,
    }
    items: list[dict[str, Any]] = [{"role": "user", "content": ASK}]
    first = openai_client.responses.create(input=items, **greedy)
    print("step 1:", first.status, [i.model_dump(exclude_none=True) for i in first.output])
    assert first.status == "completed", first
    calls = [i for i in first.output if i.type == "function_call"]
    assert calls, first.output
    items += [i.model_dump(exclude_none=True) for i in first.output]  # the client's own loop
    for call in calls:
        assert call.name == "get_weather", call
        arguments = json.loads(call.arguments)
        assert is_paris(arguments), call
        output = get_weather(**arguments)
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})

    second = openai_client.responses.create(input=items, **greedy)
    print("step 2:", second.status, [i.model_dump(exclude_none=True) for i in second.output])
    assert not [i for i in second.output if i.type == "function_call"], second.output
    assert second.status == "completed", second
    assert [i for i in second.output if i.type == "message"], second.output
    assert_worded(second.output_text)
