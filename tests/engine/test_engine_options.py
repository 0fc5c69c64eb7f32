"""Engines own their options (issue 30 s2), without a model: the request and the result are
engine-neutral, a caller's per-request option for one engine travels in ``extensions``, the
handler's options reach its ``LlamaCppEngine``'s constructor, and each request's result comes
back with it (``complete``), never through a shared attribute."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeLlama, fake_handler
from tooldialect.engine.base import Generation, GenerationRequest, GenerationResult, Triggers
from tooldialect.engine.in_process import LlamaCppEngine, LlamaCppStats
from tooldialect.engine.in_process import llama_cpp_engine as engine_module
from tooldialect.engine.in_process.checkpoints import PrefixCheckpoints
from tooldialect.engine.in_process.generate import DEFAULT_DRAFTS
from tooldialect.errors import ToolSpecError
from tooldialect.grammar.build import ToolGrammar
from tooldialect.handler import ToolChatHandler

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
ASK = [{"role": "user", "content": "Hi"}]

NEUTRAL_REQUEST = {
    "prompt",
    "grammar",
    "triggers",
    "sampling",
    "max_tokens",
    "stop",
    "logprobs",
    "bos",
    "markers",
    "prefix",
    "extensions",
}
NEUTRAL_RESULT = {
    "text",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "discarded_tokens",
    "last_prompt_eval_tokens",
    "stopped_by",
    "logprobs",
    "stats",
}


def test_the_request_and_the_result_are_engine_neutral() -> None:
    assert {f.name for f in dataclasses.fields(GenerationRequest)} == NEUTRAL_REQUEST
    assert {f.name for f in dataclasses.fields(GenerationResult)} == NEUTRAL_RESULT
    # what only the in-process engine measures is its stats object
    assert {f.name for f in dataclasses.fields(LlamaCppStats)} == {
        "prefix_tokens",
        "checkpoint",
        "grammar_resamples",
        "forced_tokens",
        "forced_positions",
        "draft_proposed",
        "draft_accepted",
    }


def test_a_logits_processor_travels_as_an_extension() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["ok"])

    def processor(ids: Any, scores: Any) -> Any:
        return scores

    handler(llama=llama, messages=ASK, logits_processor=processor)
    assert engine.jobs[-1].extensions == {"logits_processor": processor}
    handler(llama=llama, messages=ASK)
    assert engine.jobs[-1].extensions == {}


class RecordingDecoder:
    """Stands in for a ``Llama``'s decoder: records what each generation was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def generate(self, prompt: str, **options: Any) -> Generation:
        self.calls.append({"prompt": prompt, **options})
        return Generation(iter(()), GenerationResult())

    def tokenize_prompt(self, prompt: str) -> list[int]:
        return list(range(len(prompt.split())))


@pytest.fixture
def decoders(monkeypatch: pytest.MonkeyPatch) -> dict[int, RecordingDecoder]:
    """One recording decoder per ``Llama``, as ``decoder_for`` keeps one."""
    made: dict[int, RecordingDecoder] = {}

    def decoder_for(llama: Any) -> RecordingDecoder:
        return made.setdefault(id(llama), RecordingDecoder())

    monkeypatch.setattr(engine_module, "decoder_for", decoder_for)
    return made


def test_the_engine_decodes_with_its_own_options(decoders: dict[int, RecordingDecoder]) -> None:
    llama = FakeLlama(TEMPLATE)
    engine = LlamaCppEngine(llama, fast_forward=False, prompt_cache=False, drafts=None)

    def processor(ids: Any, scores: Any) -> Any:
        return scores

    engine.run(
        GenerationRequest(prompt="p", prefix="pre", extensions={"logits_processor": processor})
    )
    call = decoders[id(llama)].calls[-1]
    assert call["fast_forward"] is False and call["prompt_cache"] is False
    assert call["drafts"] is None and call["strict_calls"] is True and call["checkpoints"] is None
    assert call["logits_processor"] is processor and call["prefix"] == "pre"
    engine.run(GenerationRequest(prompt="p", extensions={"someone_elses": 1}))  # ignored
    assert decoders[id(llama)].calls[-1]["logits_processor"] is None


def test_each_handler_gives_its_engine_its_options(decoders: dict[int, RecordingDecoder]) -> None:
    llama = FakeLlama(TEMPLATE)
    plain = ToolChatHandler(fast_forward=False, prompt_cache=False, prefix_checkpoints=False)
    default = ToolChatHandler()
    engines = [h.setup(llama).engine for h in (plain, default)]
    assert all(isinstance(e, LlamaCppEngine) for e in engines)
    first, second = engines
    assert isinstance(first, LlamaCppEngine) and isinstance(second, LlamaCppEngine)
    assert (first.fast_forward, first.prompt_cache, first.checkpoints) == (False, False, None)
    # None: Llama.cache, read at each request as create_completion reads it
    assert (second.fast_forward, second.prompt_cache) == (True, None)
    assert isinstance(second.checkpoints, PrefixCheckpoints)
    assert second.checkpoints is default.checkpoints(llama)
    assert second.drafts == DEFAULT_DRAFTS and second.strict_calls
    assert first.decoder is second.decoder  # one Llama, one decoder, two sets of options
    plain(llama=llama, messages=ASK)
    default(llama=llama, messages=ASK)
    calls = decoders[id(llama)].calls
    assert [c["fast_forward"] for c in calls] == [False, True]


def test_complete_returns_each_requests_own_result() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, ["one", " two", " three"])
    short = handler.complete(llama=llama, messages=ASK, max_tokens=1, stream=True)
    whole = handler.complete(llama=llama, messages=ASK, stream=True)
    list(whole.response)
    list(short.response)  # read after a later request ran: still its own
    assert (short.result.text, short.result.finish_reason) == ("one", "length")
    assert (whole.result.text, whole.result.finish_reason) == ("one two three", "stop")


def test_last_result_is_the_latest_request_of_the_thread_that_reads_it() -> None:
    handler, llama, _ = fake_handler(TEMPLATE, ["one", " two", " three"])
    ran, read = threading.Event(), threading.Event()
    seen: list[Any] = []

    def other_thread() -> None:
        handler(llama=llama, messages=ASK, max_tokens=1)
        ran.set()
        read.wait(5)
        seen.append(handler.last_result)

    worker = threading.Thread(target=other_thread)
    worker.start()
    ran.wait(5)
    handler(llama=llama, messages=ASK)  # this thread's request, after the other's
    read.set()
    worker.join(5)
    mine = handler.last_result
    assert mine is not None and mine.text == "one two three"
    assert seen and seen[0] is not None and seen[0].text == "one"


LAZY = ToolGrammar(
    gbnf='root ::= "<tool_call>" [a-z]+',
    lazy=True,
    forced=False,
    trigger_words=["<tool_call>"],
    strict_gbnf='root ::= "<tool_call>" [a-z]+',
    strict_root="root",
)
LAZY_TRIGGERS = Triggers(words=("<tool_call>",), word_patterns=("[\\s\\S]*?(<tool_call>)",))


def test_the_engine_applies_the_grammar_as_asked_by_default(
    decoders: dict[int, RecordingDecoder],
) -> None:
    llama = FakeLlama(TEMPLATE)
    LlamaCppEngine(llama).run(GenerationRequest(prompt="p", grammar=LAZY, triggers=LAZY_TRIGGERS))
    call = decoders[id(llama)].calls[-1]
    assert call["grammar"] is LAZY and call["triggers"] == LAZY_TRIGGERS


def test_constrain_first_token_makes_a_lazy_grammar_eager(
    decoders: dict[int, RecordingDecoder],
) -> None:
    llama = FakeLlama(TEMPLATE)
    engine = LlamaCppEngine(llama, constrain="first_token")
    engine.run(GenerationRequest(prompt="p", grammar=LAZY, triggers=LAZY_TRIGGERS))
    call = decoders[id(llama)].calls[-1]
    grammar = call["grammar"]
    assert (grammar.gbnf, grammar.root, grammar.lazy) == (LAZY.gbnf, LAZY.root, False)
    assert not grammar.trigger_words and not grammar.trigger_patterns
    assert not getattr(grammar, "strict_gbnf", "")  # no lazy-only switch left to make
    assert call["triggers"] == Triggers()
    forced = LAZY.model_copy(update={"lazy": False, "forced": True, "trigger_words": []})
    engine.run(GenerationRequest(prompt="p", grammar=forced))
    assert decoders[id(llama)].calls[-1]["grammar"] is forced  # already from the first token


def test_constrain_off_decodes_without_a_grammar(decoders: dict[int, RecordingDecoder]) -> None:
    llama = FakeLlama(TEMPLATE)
    engine = LlamaCppEngine(llama, constrain="off")
    engine.run(GenerationRequest(prompt="p", grammar=LAZY, triggers=LAZY_TRIGGERS))
    call = decoders[id(llama)].calls[-1]
    assert call["grammar"] is None and call["triggers"] == Triggers()


def test_an_unknown_constrain_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(ToolSpecError, match=r"'lazy'.*request, first_token, off"):
        LlamaCppEngine(FakeLlama(TEMPLATE), constrain="lazy")  # type: ignore[arg-type]
