"""``/v1/messages`` for real: ``tooldialect serve`` on a loopback port with Qwen2.5-Coder-0.5B
(native hermes calls), driven by Anthropic's official Python client: a forced call batch and
streamed, a two-step tool loop, ``count_tokens`` and an error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tool_defs
from serve_process import serving
from tool_defs import anthropic_tool
from tooldialect.apps.serve import INSTALL_HINT

pytestmark = [pytest.mark.model, pytest.mark.slow]

WEATHER = anthropic_tool(tool_defs.WEATHER)
TIME = anthropic_tool(tool_defs.TIME)
HINT = "install the clients extra: pip install -e '.[clients]' (scripts/install.sh does)"
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]
# the newest SDK takes no sampling arguments; older clients send them, and the server reads them
GREEDY: dict[str, Any] = {
    "model": "qwen",
    "max_tokens": 40,
    "tools": [WEATHER, TIME],
    "extra_body": {"temperature": 0, "top_k": 1},
}


@pytest.fixture(scope="module")
def base_url(qwen_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running ``python -m tooldialect.apps.serve`` on one thread (killed at the end)."""
    pytest.importorskip("llama_cpp.server.app", reason=INSTALL_HINT)
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serving(qwen_path, log, threads=1) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[Any]:
    anthropic = pytest.importorskip("anthropic", reason=HINT)
    with anthropic.Anthropic(
        base_url=base_url, api_key="unused", max_retries=0, timeout=600
    ) as opened:
        yield opened


def stable(message: Any) -> dict[str, Any]:
    """A Message without its ids and usage (the second request reads the KV cache)."""
    out: dict[str, Any] = message.model_dump(exclude={"id", "usage"})
    for block in out["content"]:
        block.pop("id", None)
    return out


def test_forced_call_batch_and_stream_agree(client: Any) -> None:
    whole = client.messages.create(messages=ASK, tool_choice={"type": "any"}, **GREEDY)
    assert whole.type == "message" and whole.role == "assistant"
    assert whole.stop_reason == "tool_use"
    calls = [b for b in whole.content if b.type == "tool_use"]
    assert calls and calls[0].name == "get_weather" and "paris" in calls[0].input["city"].lower()
    assert whole.usage.input_tokens + (whole.usage.cache_read_input_tokens or 0) > 100
    assert whole.usage.output_tokens > 0
    with client.messages.stream(messages=ASK, tool_choice={"type": "any"}, **GREEDY) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds.count("input_json") > 1  # the arguments really streamed
    assert stable(final) == stable(whole)
    counted = client.messages.count_tokens(
        model="qwen", messages=ASK, tools=[WEATHER, TIME], tool_choice={"type": "any"}
    )
    usage = final.usage
    assert counted.input_tokens == usage.input_tokens + (usage.cache_read_input_tokens or 0)


def test_two_step_tool_loop(client: Any) -> None:
    first = client.messages.create(messages=ASK, tool_choice={"type": "any"}, **GREEDY)
    call = next(b for b in first.content if b.type == "tool_use")
    history = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "17 C, light rain"}
            ],
        },
    ]
    second = client.messages.create(messages=history, **GREEDY)
    assert second.stop_reason in ("end_turn", "tool_use", "max_tokens")
    total = second.usage.input_tokens + (second.usage.cache_read_input_tokens or 0)
    assert total > first.usage.input_tokens + (first.usage.cache_read_input_tokens or 0)
    text = "".join(b.text for b in second.content if b.type == "text")
    assert "17" in text or any(b.type == "tool_use" for b in second.content), second.content
    with client.messages.stream(messages=history, **GREEDY) as stream:
        streamed = stream.get_final_message()
    assert stable(streamed) == stable(second)


def test_refusals_are_anthropic_errors(client: Any) -> None:
    anthropic = pytest.importorskip("anthropic", reason=HINT)
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(
            model="qwen", max_tokens=5, messages=ASK, extra_body={"temperature": 3}
        )
    assert err.value.status_code == 400 and "temperature" in str(err.value)
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(messages=ASK, tool_choice={"type": "tool", "name": "nope"}, **GREEDY)
    assert "nope" in str(err.value)
