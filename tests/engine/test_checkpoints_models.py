"""Tool-prefix checkpoints on Qwen2.5-0.5B: a step without tools (an agent's final answer) and
a later conversation with the same tools do not decode the tool prefix again, the reply is
the one a full prefill gives, and a reasoning template's reshaped history re-decodes only what
the template changed (counted with the engine's own figures and ``Llama.n_tokens``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import read_template
from tool_defs import WEATHER
from tooldialect import ToolChatHandler

pytestmark = pytest.mark.model

SYSTEM = {"role": "system", "content": "You are a helpful assistant with tools."}
TOOLS = [
    WEATHER,
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount of money from one currency to another.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "source": {"type": "string", "description": "ISO code, e.g. USD."},
                    "target": {"type": "string", "description": "ISO code, e.g. EUR."},
                },
                "required": ["amount", "source", "target"],
            },
        },
    },
]


def load(path: Path, handler: ToolChatHandler) -> Any:
    from llama_cpp import Llama

    return Llama(str(path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler)


def ask(llm: Any, messages: list[dict[str, Any]], **request: Any) -> tuple[Any, Any]:
    out = llm.create_chat_completion(messages=messages, temperature=0, max_tokens=6, **request)
    return out, llm.chat_handler.last_result


def test_a_step_without_tools_does_not_make_the_next_one_decode_the_tools(
    qwen_path: Path,
) -> None:
    handler = ToolChatHandler()
    llm = load(qwen_path, handler)
    first_turn = [SYSTEM, {"role": "user", "content": "Weather in Paris?"}]
    _, first = ask(llm, first_turn, tools=TOOLS)
    assert first.stats.checkpoint == "kept" and first.stats.prefix_tokens > 100
    assert first.last_prompt_eval_tokens == first.prompt_tokens
    store = handler.checkpoints(llm)
    assert store is not None and store.saves == 0  # live in the KV cache: no copy yet
    # the agent's answer step: no tools in the prompt, the KV cache now ends after the system
    _, bare = ask(llm, first_turn, tools=TOOLS, tool_choice="none")
    assert bare.prompt_tokens < first.stats.prefix_tokens
    assert store.saves == 1  # saved before this prompt overwrote it
    # back to the tools, with a new question: only what follows the tool prefix is decoded
    again_turn = [SYSTEM, {"role": "user", "content": "Convert 5 USD to EUR."}]
    out, again = ask(llm, again_turn, tools=TOOLS)
    assert (
        again.stats.checkpoint == "loaded"
        and again.stats.prefix_tokens == first.stats.prefix_tokens
    )
    assert again.last_prompt_eval_tokens == again.prompt_tokens - again.stats.prefix_tokens
    # llama-cpp-python's bookkeeping goes on from the loaded state (the last token may be unread)
    assert again.prompt_tokens <= llm.n_tokens <= again.prompt_tokens + again.completion_tokens
    assert (store.saves, store.hits, len(store)) == (1, 1, 1)
    assert 0 < store.size <= store.capacity
    # the same request on a fresh model without checkpoints writes the same reply
    plain = load(qwen_path, ToolChatHandler(prefix_checkpoints=False))
    reference, full = ask(plain, again_turn, tools=TOOLS)
    assert full.last_prompt_eval_tokens == full.prompt_tokens and full.stats.checkpoint == ""
    assert out["choices"][0]["message"] == reference["choices"][0]["message"]


def test_a_reasoning_templates_reshaped_history_re_decodes_only_what_it_changed(
    qwen_path: Path,
) -> None:
    from tooldialect.engine.in_process.prompt_cache import common_prefix

    handler = ToolChatHandler(chat_template=read_template("Qwen-Qwen3-0.6B.jinja"))
    llm = load(qwen_path, handler)
    call: dict[str, Any] = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I should look the weather up first.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    result = {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 18}'}
    history: list[dict[str, Any]] = [
        SYSTEM,
        {"role": "user", "content": "Weather in Paris?"},
        call,
        result,
    ]
    _, first = ask(llm, history, tools=TOOLS)
    assert first.stats.checkpoint == "kept"
    # a new user turn: the template drops the earlier turn's reasoning from the history
    follow = [
        *history,
        {"role": "assistant", "content": "18 C."},
        {"role": "user", "content": "Rome?"},
    ]
    live = llm._input_ids.tolist()
    engine: Any = handler.setup(llm).engine
    tokens = engine.tokenize_prompt(handler.prepare(llama=llm, messages=follow, tools=TOOLS).prompt)
    changed_at = common_prefix(live, tokens)
    assert first.stats.prefix_tokens < changed_at < first.prompt_tokens  # the template re-rendered
    _, second = ask(llm, follow, tools=TOOLS)
    assert second.last_prompt_eval_tokens == len(tokens) - changed_at
    assert second.stats.checkpoint == ""  # the KV cache held the tool prefix: nothing to load
