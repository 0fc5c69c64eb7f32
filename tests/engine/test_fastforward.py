"""Fast-forward on a model: forced tokens are the tokens the model writes itself.

Decoded one token at a time, a fast-forwarded generation must equal the plain one token for
token (the seam tokenization is canonical and llama.cpp's grammar stays in step). Decoded as a
batch, the logits of the next sampled token can differ in the last bits (llama.cpp computes a
multi-token batch with other kernels), so greedy text may differ there; that is measured in
bench/fastforward.py, not asserted here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import ToolChatHandler
from tooldialect.engine.in_process import LlamaCppEngine, LlamaCppStats

NOTE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "save_note",
        "description": "Save a note.",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "body": {"type": "string"},
                "pinned": {"type": "boolean"},
            },
            "required": ["title", "body", "pinned"],
        },
    },
}
MESSAGES = [{"role": "user", "content": "Save a pinned note titled Lunch: we meet at noon."}]


@pytest.fixture(scope="module")
def llm(smollm2_path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), n_threads=2, n_ctx=2048, verbose=False)


def single_token_evals(llm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decode generated batches token by token (prompts stay batched)."""
    batched = llm.eval

    def eval_one_by_one(tokens: list[int]) -> None:
        if len(tokens) > 16:
            batched(tokens)
            return
        for t in tokens:
            batched([t])

    monkeypatch.setattr(llm, "eval", eval_one_by_one)


def stats_of(result: Any) -> LlamaCppStats:
    assert isinstance(result.stats, LlamaCppStats)
    return result.stats


def run(
    llm: Any, *, fast_forward: bool, drafts: bool = True, **request: Any
) -> tuple[str, int, Any]:
    handler = ToolChatHandler(fast_forward=fast_forward)
    engine = handler.setup(llm).engine
    assert isinstance(engine, LlamaCppEngine)
    if not drafts:
        engine.drafts = None
    done = handler.complete(llama=llm, messages=MESSAGES, temperature=0, max_tokens=40, **request)
    return done.result.text, stats_of(done.result).forced_tokens, done.response


@pytest.mark.model
@pytest.mark.parametrize(
    "request_options",
    [
        {"tools": [NOTE], "tool_choice": "required"},
        {
            "tools": [NOTE, WEATHER],
            "tool_choice": {"type": "function", "function": {"name": "save_note"}},
        },
        {"tools": [NOTE, WEATHER], "tool_choice": "auto"},
    ],
    ids=["required", "named", "auto"],
)
def test_forced_tokens_are_the_models_own(
    llm: Any, monkeypatch: pytest.MonkeyPatch, request_options: dict[str, Any]
) -> None:
    plain, plain_forced, _ = run(llm, fast_forward=False, **request_options)
    single_token_evals(llm, monkeypatch)
    # drafts decode with llama_decode itself, in batches: off, so every token is one eval
    fast, forced, _ = run(llm, fast_forward=True, drafts=False, **request_options)
    assert plain_forced == 0
    assert fast == plain
    if "<tool_call>" in plain:
        assert forced > 0


@pytest.mark.model
def test_batched_fast_forward_streams_what_it_returns(llm: Any) -> None:
    request: dict[str, Any] = {"tools": [NOTE], "tool_choice": "required"}
    text, forced, response = run(llm, fast_forward=True, **request)
    assert forced > 0
    calls = response["choices"][0]["message"]["tool_calls"]
    assert calls and calls[0]["function"]["name"] == "save_note"
    handler = ToolChatHandler(fast_forward=True)
    done = handler.complete(
        llama=llm, messages=MESSAGES, temperature=0, max_tokens=40, stream=True, **request
    )
    chunks: list[Any] = list(done.response)
    assert done.result.text == text
    names = "".join(
        (d.get("function") or {}).get("name") or ""
        for c in chunks
        for d in c["choices"][0]["delta"].get("tool_calls") or []
    )
    assert names.startswith("save_note")


@pytest.mark.model
def test_a_forced_call_is_fast_forwarded_from_its_first_token(llm: Any) -> None:
    """SmolLM2's polyfilled opener holds no added token: it is decoded with the prompt."""
    handler = ToolChatHandler(fast_forward=True)
    done = handler.complete(
        llama=llm,
        messages=MESSAGES,
        tools=[NOTE],
        tool_choice="required",
        temperature=0,
        max_tokens=40,
    )
    out: Any = done.response
    res = done.result
    assert stats_of(res).forced_positions[:3] == [1, 2, 3]
    assert res.text.startswith('<tool_call>\n{"name": "save_note", "arguments": {"title": "')
    # the forced opener goes into the prompt's batch but is not booked as prompt
    assert res.last_prompt_eval_tokens <= res.prompt_tokens
    assert out["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "save_note"


@pytest.mark.model
def test_an_added_token_is_left_to_the_model(qwen_path: Path) -> None:
    """Qwen's <tool_call> is an added token: the model writes it (whole or spelled) itself,
    and fast-forward takes over after it."""
    from llama_cpp import Llama

    qwen = Llama(str(qwen_path), n_threads=2, n_ctx=2048, verbose=False)
    added = {int(t) for t in qwen.tokenize(b"<tool_call></tool_call>", add_bos=False, special=True)}
    handler = ToolChatHandler(fast_forward=True)
    done = handler.complete(
        llama=qwen,
        messages=MESSAGES,
        tools=[NOTE],
        tool_choice={"type": "function", "function": {"name": "save_note"}},
        temperature=0,
        max_tokens=60,
    )
    out: Any = done.response
    res, stats = done.result, stats_of(done.result)
    assert stats.forced_tokens > 0
    assert 1 not in stats.forced_positions
    completion = [int(t) for t in qwen.input_ids[res.prompt_tokens : qwen.n_tokens]]
    forced = {completion[p - 1] for p in stats.forced_positions if p <= len(completion)}
    assert not forced & added
    assert out["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "save_note"


@pytest.mark.model
def test_a_request_with_logprobs_samples_every_token(llm: Any) -> None:
    """Forced tokens have no distribution: with logprobs nothing is fast-forwarded, and every
    completion token has its own entry (fast-forward is on by default otherwise)."""
    request: dict[str, Any] = {
        "tools": [NOTE],
        "tool_choice": "required",
        "temperature": 0,
        "max_tokens": 30,
    }
    handler = ToolChatHandler()
    first = handler.complete(llama=llm, messages=MESSAGES, **request)
    assert stats_of(first.result).forced_tokens > 0
    done = handler.complete(llama=llm, messages=MESSAGES, logprobs=True, top_logprobs=1, **request)
    out: Any = done.response
    res = done.result
    assert stats_of(res).forced_tokens == 0
    entries = out["choices"][0]["logprobs"]["content"]
    assert len(entries) == res.completion_tokens
