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
from tooldialect.engine.in_process import LlamaCppEngine
from tooldialect.engine.in_process.drafts import DraftOptions
from tooldialect.engine.in_process.generate import DEFAULT_DRAFTS

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


def complete(
    llm: Any,
    tool: dict[str, Any],
    question: str,
    drafts: DraftOptions | None = DEFAULT_DRAFTS,
    **extra: Any,
) -> tuple[Any, Any]:
    """One ``auto`` request through a fresh fast-forward handler whose engine takes ``drafts``:
    its output and the engine's stats."""
    handler = ToolChatHandler(fast_forward=True)
    handler.setup(llm, engine=LlamaCppEngine(llm, drafts=drafts))
    done = handler.complete(
        llama=llm,
        messages=[{"role": "user", "content": question}],
        tools=[tool],
        tool_choice="auto",
        temperature=0,
        **extra,
    )
    return done.response, done.result


def ask(llm: Any, tool: dict[str, Any], question: str, drafts: DraftOptions | None) -> Any:
    out, last = complete(llm, tool, question, drafts, max_tokens=80)
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
    plain, plain_result = ask(llm, tool, question, None)
    drafted, result = ask(llm, tool, question, DraftOptions())
    assert plain and quoted in plain[0]["arguments"]
    assert drafted == plain
    assert plain_result.stats.draft_proposed == 0
    assert result.stats.draft_proposed > 0 and sum(result.stats.draft_accepted) > 0
    assert result.completion_tokens == plain_result.completion_tokens


def test_a_new_engine_drafts_by_default(qwen: Any) -> None:
    default = LlamaCppEngine(qwen).drafts
    assert default == DraftOptions()
    calls, result = ask(qwen, READ, PATH_QUESTION, default)
    assert calls and result.stats.draft_proposed > 0


def test_streaming_a_drafted_call_returns_the_whole_reply(qwen: Any) -> None:
    whole, result = ask(qwen, READ, PATH_QUESTION, DraftOptions())
    assert sum(result.stats.draft_accepted) > 0
    args = ""
    handler = ToolChatHandler(fast_forward=True)  # drafts by default
    done = handler.complete(
        llama=qwen,
        messages=[{"role": "user", "content": PATH_QUESTION}],
        tools=[READ],
        tool_choice="auto",
        temperature=0,
        max_tokens=64,
        stream=True,
    )
    stream: Any = done.response
    for chunk in stream:  # the stream runs lazily: its result is read after it
        for d in chunk["choices"][0]["delta"].get("tool_calls") or []:
            args += (d.get("function") or {}).get("arguments") or ""
    assert args == whole[0]["arguments"]
    assert done.result.stats.draft_proposed == result.stats.draft_proposed


def test_no_drafts_when_logprobs_are_asked(qwen: Any) -> None:
    out, last = complete(qwen, READ, PATH_QUESTION, max_tokens=64, logprobs=True, top_logprobs=2)
    assert out["choices"][0]["logprobs"] is not None
    assert last.stats.draft_proposed == 0


STANDUP_QUESTION = (  # bench/auto_spread.py's "long unquoted string"
    "Save a note titled Standup saying that the release moves to Friday because the payment "
    "tests still fail on the staging server, and that Maria owns the fix."
)


def test_no_draft_from_a_match_of_punctuation_and_one_word(qwen: Any) -> None:
    """After ``"body": "`` the tail ``": "The`` matched the tool's own description ("The
    full text of the note."), a first draft that kept nothing; drafts now wait for two words
    in the matched tail, and the first one copies the user's words."""
    calls, result = ask(qwen, NOTE, STANDUP_QUESTION, DraftOptions())
    assert calls and "payment tests still fail" in calls[0]["arguments"]
    assert result.stats.draft_accepted[0] > 0, result.stats.draft_accepted
