"""Prompt-lookup drafts on real models: on by default, an ``auto`` call whose argument quotes
the user's words is parsed the same with and without drafts, some of the draft is accepted,
streaming returns what the whole reply does, and a request that asks for logprobs is never
drafted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.workload import NOTE_TOOL

from tooldialect import ToolChatHandler
from tooldialect.engine.in_process.drafts import DraftOptions
from tooldialect.engine.in_process.generate import Engine, engine_for

pytestmark = pytest.mark.model

READ: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
NOTE: dict[str, Any] = NOTE_TOOL  # the save_note tool every bench uses
PATH_QUESTION = "Please read the file /home/alice/projects/quarterly_report_2024_final.txt for me."
NOTE_QUESTION = (
    "Save a note titled Trip saying the flight leaves from Boston Logan at 7am, tagged travel."
)


def load(path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(str(path), n_ctx=2048, n_threads=2, verbose=False, seed=0)


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Any:
    return load(qwen_path)


@pytest.fixture(scope="module")
def smollm2(smollm2_path: Path) -> Any:
    return load(smollm2_path)


def complete(llm: Any, tool: dict[str, Any], question: str, **extra: Any) -> tuple[Any, Any]:
    """One ``auto`` request through a fresh fast-forward handler: its output and last result."""
    handler = ToolChatHandler(fast_forward=True)
    out: Any = handler(
        llama=llm,
        messages=[{"role": "user", "content": question}],
        tools=[tool],
        tool_choice="auto",
        temperature=0,
        **extra,
    )
    return out, handler.last_result


def ask(llm: Any, tool: dict[str, Any], question: str, drafts: DraftOptions | None) -> Any:
    engine_for(llm).drafts = drafts
    out, last = complete(llm, tool, question, max_tokens=80)
    message = out["choices"][0]["message"]
    calls = [c["function"] for c in message.get("tool_calls") or []]
    return calls, last


@pytest.mark.parametrize(
    ("model", "tool", "question", "quoted"),
    [
        ("qwen", READ, PATH_QUESTION, "/home/alice/projects/quarterly_report_2024_final.txt"),
        ("smollm2", NOTE, NOTE_QUESTION, "Boston Logan at 7am"),
    ],
)
def test_an_auto_call_is_the_same_with_and_without_drafts(
    request: pytest.FixtureRequest, model: str, tool: dict[str, Any], question: str, quoted: str
) -> None:
    llm = request.getfixturevalue(model)
    try:
        plain, plain_result = ask(llm, tool, question, None)
        drafted, result = ask(llm, tool, question, DraftOptions())
    finally:
        engine_for(llm).drafts = DraftOptions()  # the default
    assert plain and quoted in plain[0]["arguments"]
    assert drafted == plain
    assert plain_result.draft_proposed == 0
    assert result.draft_proposed > 0 and sum(result.draft_accepted) > 0
    assert result.completion_tokens == plain_result.completion_tokens


def test_a_new_engine_drafts_by_default(qwen: Any) -> None:
    default = Engine(qwen).drafts  # a new engine, not the cached one the tests here set
    assert default == DraftOptions()
    calls, result = ask(qwen, READ, PATH_QUESTION, default)
    assert calls and result.draft_proposed > 0


def test_streaming_a_drafted_call_returns_the_whole_reply(qwen: Any) -> None:
    whole, result = ask(qwen, READ, PATH_QUESTION, DraftOptions())
    assert sum(result.draft_accepted) > 0
    args = ""
    handler = ToolChatHandler(fast_forward=True)
    stream: Any = handler(
        llama=qwen,
        messages=[{"role": "user", "content": PATH_QUESTION}],
        tools=[READ],
        tool_choice="auto",
        temperature=0,
        max_tokens=64,
        stream=True,
    )
    for chunk in stream:  # the stream runs lazily: last_result is read after it
        for d in chunk["choices"][0]["delta"].get("tool_calls") or []:
            args += (d.get("function") or {}).get("arguments") or ""
    assert args == whole[0]["arguments"]
    last: Any = handler.last_result
    assert last.draft_proposed == result.draft_proposed


def test_no_drafts_when_logprobs_are_asked(qwen: Any) -> None:
    engine_for(qwen).drafts = DraftOptions()
    out, last = complete(qwen, READ, PATH_QUESTION, max_tokens=64, logprobs=True, top_logprobs=2)
    assert out["choices"][0]["logprobs"] is not None
    assert last.draft_proposed == 0
