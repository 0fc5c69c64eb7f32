"""Steering while decoding (``frontend.steering``): a call begun in a variant format is written
in the template's own, and no call the conversation answered is written again. Driven through
the real handler, parser and grammars on a scripted engine that answers each run by what it is
asked (forced grammar, ban grammar, or the request's lazy one)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeEngine, FakeLlama
from tool_defs import WEATHER_BARE as WEATHER
from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.engine.base import Generation, GenerationRequest, GenerationResult
from tooldialect.engine.in_process.stats import LlamaCppStats
from tooldialect.errors import ContextOverflowError
from tooldialect.frontend.steering import ANSWER, REMINDER, answered_calls, call_key
from tooldialect.grammar.build import no_call_start
from tooldialect.handler import ToolChatHandler

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")  # hermes: <tool_call> JSON
PARIS = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
OSLO = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
ANSWERED: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "7 C, sleet"},
]

Script = Callable[[GenerationRequest], list[str]]


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class ByJob(FakeEngine):
    """Answers each run with ``script(job)``: the steered runs differ by grammar and prompt."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.by_job = script

    def run(self, request: GenerationRequest) -> Generation:
        self.jobs.append(request)
        result = GenerationResult(prompt_tokens=self.prompt_tokens, last_prompt_eval_tokens=3)
        return Generation(self._pieces(request, list(self.by_job(request)), result), result)


def kind_of(job: GenerationRequest) -> str:
    if job.grammar is None:
        return "free"
    if "tail ::=" in job.grammar.gbnf:
        return "ban"
    return "lazy" if job.grammar.lazy else "forced"


def handler_with(script: Script, **options: Any) -> tuple[ToolChatHandler, FakeLlama, ByJob]:
    handler = ToolChatHandler(**options)
    llama = FakeLlama(TEMPLATE)
    engine = ByJob(script)
    handler.setup(llama, engine=engine)
    return handler, llama, engine


def complete(
    handler: ToolChatHandler, llama: FakeLlama, messages: list[dict[str, Any]], **request: Any
) -> dict[str, Any]:
    out: Any = handler(llama=llama, messages=messages, tools=[WEATHER], **request)
    return dict(out)


def streamed(
    handler: ToolChatHandler, llama: FakeLlama, messages: list[dict[str, Any]], **request: Any
) -> dict[str, Any]:
    """The message the chunks of a streamed reply add up to."""
    chunks: Any = handler(llama=llama, messages=messages, tools=[WEATHER], stream=True, **request)
    content = ""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        content += delta.get("content") or ""
        for call in delta.get("tool_calls") or []:
            got = calls.setdefault(call["index"], {"name": "", "arguments": ""})
            got["name"] += call.get("function", {}).get("name") or ""
            got["arguments"] += call.get("function", {}).get("arguments") or ""
    return {"content": content, "calls": [calls[i] for i in sorted(calls)]}


def calls_of(out: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    message = out["choices"][0]["message"]
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message.get("tool_calls") or []
    ]


# ---- a call in a variant format is written in the template's own --------------------------


def fenced_then_native(job: GenerationRequest) -> list[str]:
    if kind_of(job) == "lazy":  # the model's free choice: a fenced JSON call, then the end
        fenced = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'
        return pieces(fenced)
    return pieces(PARIS + "\n" + OSLO)  # in the template's own format it writes both


def test_a_call_in_a_variant_format_is_rewritten_in_the_primary_one() -> None:
    handler, llama, engine = handler_with(fenced_then_native)
    out = complete(handler, llama, [{"role": "user", "content": "Paris and Oslo?"}])
    assert calls_of(out) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    assert [kind_of(j) for j in engine.jobs] == ["lazy", "forced"]
    # the second run goes on from where the call started: the prompt, nothing of the fence
    assert engine.jobs[1].prompt == engine.jobs[0].prompt
    assert out["choices"][0]["finish_reason"] == "tool_calls"


def test_without_steering_the_variant_call_is_read_as_written() -> None:
    handler, llama, engine = handler_with(fenced_then_native, steer_calls=False)
    out = complete(handler, llama, [{"role": "user", "content": "Paris and Oslo?"}])
    assert calls_of(out) == [("get_weather", {"city": "Paris"})]
    assert len(engine.jobs) == 1


def test_the_rewind_goes_back_to_where_the_capture_starts() -> None:
    def script(job: GenerationRequest) -> list[str]:
        if kind_of(job) == "lazy":  # hermes reads a fence as a call at the reply's start only
            return pieces('\n\n```json\n{"name": "get_weather", "arguments": {"ci')
        return pieces(OSLO)

    handler, llama, engine = handler_with(script)
    out = complete(handler, llama, [{"role": "user", "content": "Oslo?"}])
    assert calls_of(out) == [("get_weather", {"city": "Oslo"})]
    assert engine.jobs[1].prompt == engine.jobs[0].prompt + "\n\n"


def test_prose_is_not_held_back_while_no_trigger_can_start() -> None:
    handler, llama, _ = handler_with(lambda job: pieces("Sunny in Oslo. ```json\n{} ok"))
    chunks: Any = handler(
        llama=llama, messages=[{"role": "user", "content": "Oslo?"}], tools=[WEATHER], stream=True
    )
    contents = [c["choices"][0]["delta"].get("content") for c in chunks]
    assert "".join(c or "" for c in contents) == "Sunny in Oslo. ```json\n{} ok"
    assert len([c for c in contents if c]) > 3  # streamed as it came, not held to the end


def test_a_call_in_the_primary_format_is_left_alone() -> None:
    handler, llama, engine = handler_with(lambda job: pieces(PARIS))
    out = complete(handler, llama, [{"role": "user", "content": "Paris?"}])
    assert calls_of(out) == [("get_weather", {"city": "Paris"})]
    assert len(engine.jobs) == 1


# ---- no call the conversation answered ---------------------------------------------------


def repeat_then_answer(job: GenerationRequest) -> list[str]:
    kind = kind_of(job)
    if kind == "ban":
        return ["It", " is"]  # the ban only chooses the start: the request's grammar goes on
    if kind == "lazy" and job.prompt.endswith("It"):
        return pieces(" is 7 C with sleet in Paris.")
    return pieces(PARIS)  # the small model's loop: the answered call again


def test_an_answered_call_is_taken_back_and_the_model_answers() -> None:
    handler, llama, engine = handler_with(repeat_then_answer)
    out = complete(handler, llama, ANSWERED)
    message = out["choices"][0]["message"]
    assert "tool_calls" not in message
    assert message["content"] == "It is 7 C with sleet in Paris."
    assert out["choices"][0]["finish_reason"] == "stop"
    # taken back: reminded (it repeats the call anyway), then banned from starting a call
    # there, then on as asked
    assert [kind_of(j) for j in engine.jobs] == ["lazy", "lazy", "ban", "lazy"]
    assert REMINDER not in engine.jobs[0].prompt and REMINDER in engine.jobs[1].prompt
    # the user's question comes with it: reminded of "my question" alone, a small model
    # answered the reminder
    assert f"{REMINDER} My question: Weather in Paris?" in engine.jobs[1].prompt
    assert engine.jobs[2].prompt == engine.jobs[1].prompt
    assert engine.jobs[3].prompt == engine.jobs[1].prompt + "It"


def test_a_reminded_model_may_make_a_different_call() -> None:
    def script(job: GenerationRequest) -> list[str]:
        return pieces(OSLO if REMINDER in job.prompt else PARIS)  # a dependent call

    handler, llama, engine = handler_with(script)
    out = complete(handler, llama, ANSWERED)
    assert calls_of(out) == [("get_weather", {"city": "Oslo"})]
    assert [kind_of(j) for j in engine.jobs] == ["lazy", "lazy"]


def test_a_reminded_model_answers_and_the_conversation_is_not_changed() -> None:
    def script(job: GenerationRequest) -> list[str]:
        return pieces("7 C and sleet." if REMINDER in job.prompt else PARIS)

    handler, llama, engine = handler_with(script)
    messages = [dict(m) for m in ANSWERED]
    out = complete(handler, llama, messages)
    assert out["choices"][0]["message"] == {"role": "assistant", "content": "7 C and sleet."}
    assert messages == ANSWERED and len(engine.jobs) == 2


def test_a_reply_of_nothing_after_a_result_is_asked_for_an_answer() -> None:
    def silent(job: GenerationRequest) -> list[str]:
        return pieces("It is 7 C with sleet.") if ANSWER in job.prompt else []

    handler, llama, engine = handler_with(silent)
    out = complete(handler, llama, ANSWERED)
    assert out["choices"][0]["message"]["content"] == "It is 7 C with sleet."
    assert [ANSWER in job.prompt for job in engine.jobs] == [False, True]
    # once a reply: asked again, the model may still say nothing
    handler, llama, engine = handler_with(lambda job: [])
    assert complete(handler, llama, ANSWERED)["choices"][0]["message"]["content"] in ("", None)
    assert len(engine.jobs) == 2
    # with no tool result in the conversation, nothing is asked
    handler, llama, engine = handler_with(lambda job: [])
    complete(handler, llama, [{"role": "user", "content": "Hi"}])
    assert len(engine.jobs) == 1


def test_opting_out_keeps_the_repeated_call() -> None:
    handler, llama, _ = handler_with(repeat_then_answer, steer_calls=False)
    out = complete(handler, llama, ANSWERED)
    assert calls_of(out) == [("get_weather", {"city": "Paris"})]


def test_a_different_call_after_a_result_is_kept() -> None:
    handler, llama, engine = handler_with(lambda job: pieces(OSLO))
    out = complete(handler, llama, ANSWERED)
    assert calls_of(out) == [("get_weather", {"city": "Oslo"})]
    assert len(engine.jobs) == 1


def test_an_answered_call_after_a_new_one_ends_the_reply() -> None:
    handler, llama, engine = handler_with(lambda job: pieces(OSLO + "\n" + PARIS))
    out = complete(handler, llama, ANSWERED)
    assert calls_of(out) == [("get_weather", {"city": "Oslo"})]
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    assert len(engine.jobs) == 1


def test_the_same_call_twice_in_one_reply_is_written_once() -> None:
    handler, llama, _ = handler_with(lambda job: pieces(OSLO + "\n" + OSLO + "\n" + OSLO))
    out = complete(handler, llama, [{"role": "user", "content": "Oslo?"}], tool_choice="required")
    assert calls_of(out) == [("get_weather", {"city": "Oslo"})]


def test_a_forced_call_is_not_taken_back() -> None:
    handler, llama, engine = handler_with(lambda job: pieces(PARIS))
    out = complete(handler, llama, ANSWERED, tool_choice="required")
    assert calls_of(out) == [("get_weather", {"city": "Paris"})]
    assert len(engine.jobs) == 1


def test_a_model_that_insists_ends_after_the_rewinds() -> None:
    def script(job: GenerationRequest) -> list[str]:
        return ["\n"] if kind_of(job) == "ban" else pieces(PARIS)

    handler, llama, engine = handler_with(script)
    out = complete(handler, llama, ANSWERED)
    assert "tool_calls" not in out["choices"][0]["message"]
    assert len(engine.jobs) <= 1 + 2 * 3  # MAX_REWINDS bans, each with its resume


def test_a_rewound_run_the_engine_refuses_ends_the_reply_without_an_error() -> None:
    class Full(ByJob):
        def run(self, request: GenerationRequest) -> Generation:
            if REMINDER in request.prompt:  # the reminder does not fit the context
                raise ContextOverflowError("the prompt is longer than the context")
            return super().run(request)

    handler = ToolChatHandler()
    llama = FakeLlama(TEMPLATE)
    handler.setup(llama, engine=Full(lambda job: pieces(PARIS)))
    out = complete(handler, llama, ANSWERED)
    assert out["choices"][0]["message"] == {"role": "assistant", "content": ""}
    assert out["choices"][0]["finish_reason"] == "stop"


def test_the_token_limit_bounds_the_reply_not_what_was_taken_back() -> None:
    handler, llama, engine = handler_with(repeat_then_answer)
    out = complete(handler, llama, ANSWERED, max_tokens=100)
    # the repeated call (taken back at its start) leaves the whole limit to the next runs
    assert [job.max_tokens for job in engine.jobs[1:3]] == [100, 100]
    assert engine.jobs[3].max_tokens == 99  # the ban run's one token is kept
    usage = out["usage"]
    rejected = usage["completion_tokens_details"]["rejected_prediction_tokens"]
    # twice the call up to where it was judged (its JSON's end)
    assert rejected == 2 * len(pieces(PARIS[: PARIS.index("}}") + 2]))
    kept = usage["completion_tokens"] - rejected
    assert kept == 1 + len(pieces(" is 7 C with sleet in Paris."))  # "It", then the answer


def test_a_reply_cut_at_its_limit_after_a_rewind_says_length() -> None:
    def long_answer(job: GenerationRequest) -> list[str]:
        if kind_of(job) == "lazy" and job.prompt.endswith("It"):
            return pieces("x" * 300)
        return repeat_then_answer(job)

    limit = len(pieces(PARIS)) + 3  # room for the repeated call, not for the long answer
    handler, llama, engine = handler_with(long_answer)
    out = complete(handler, llama, ANSWERED, max_tokens=limit)
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["choices"][0]["message"]["content"] == "It" + "x" * 3 * (limit - 1)
    assert engine.jobs[-1].max_tokens == limit - 1
    rejected = out["usage"]["completion_tokens_details"]["rejected_prediction_tokens"]
    assert out["usage"]["completion_tokens"] - rejected == limit


def test_usage_has_no_rejected_tokens_when_nothing_was_taken_back() -> None:
    handler, llama, _ = handler_with(lambda job: pieces(PARIS))
    out = complete(handler, llama, [{"role": "user", "content": "Paris?"}])
    assert "completion_tokens_details" not in out["usage"]
    assert out["usage"]["completion_tokens"] == len(pieces(PARIS))


# ---- streaming equals batch ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "messages"),
    [
        (fenced_then_native, [{"role": "user", "content": "Paris and Oslo?"}]),
        (repeat_then_answer, ANSWERED),
        (lambda job: pieces(OSLO + "\n" + PARIS), ANSWERED),
    ],
    ids=["variant", "answered", "answered-after-new"],
)
def test_streaming_equals_batch(script: Script, messages: list[dict[str, Any]]) -> None:
    handler, llama, _ = handler_with(script)
    batch = complete(handler, llama, messages)["choices"][0]["message"]
    handler, llama, _ = handler_with(script)
    stream = streamed(handler, llama, messages)
    assert stream["content"] == (batch.get("content") or "")
    expected = [
        {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in batch.get("tool_calls") or []
    ]
    assert stream["calls"] == expected


class Accounted(ByJob):
    """A ``ByJob`` that keeps logprob entries (one a piece, as a stream reads them: growing)
    and an in-process engine's stats (one draft a run)."""

    def run(self, request: GenerationRequest) -> Generation:
        gen = super().run(request)
        gen.result.stats = LlamaCppStats(draft_proposed=2, draft_accepted=[1])
        if request.logprobs is None:
            return gen
        entries: list[dict[str, Any]] = []
        gen.result.logprobs = entries

        def noted() -> Iterator[str]:
            for piece in gen:
                entries.append({"token": piece, "logprob": -0.5, "bytes": None})
                yield piece

        return Generation(noted(), gen.result)


@pytest.mark.parametrize(
    "script", [fenced_then_native, repeat_then_answer], ids=["variant", "answered"]
)
def test_logprobs_and_stats_are_of_the_reply_in_batch_and_stream(script: Script) -> None:
    messages = ANSWERED if script is repeat_then_answer else [{"role": "user", "content": "P?"}]
    handler, llama, engine = ToolChatHandler(), FakeLlama(TEMPLATE), Accounted(script)
    handler.setup(llama, engine=engine)
    out = complete(handler, llama, messages, logprobs=True)
    tokens = [e["token"] for e in out["choices"][0]["logprobs"]["content"]]
    last = handler.last_result
    assert last is not None and "".join(tokens) == last.text  # only the kept tokens, in order
    runs = len(engine.jobs)
    assert runs > 1 and last.stats.draft_accepted == [1] * runs
    chunks: Any = handler(
        llama=llama, messages=messages, tools=[WEATHER], stream=True, logprobs=True
    )
    streamed = [
        e["token"] for c in chunks for e in (c["choices"][0]["logprobs"] or {}).get("content", [])
    ]
    assert streamed == tokens


def test_a_call_streams_as_written_where_nothing_could_take_it_back() -> None:
    def deltas(messages: list[dict[str, Any]]) -> int:
        handler, llama, _ = handler_with(lambda job: pieces(OSLO))
        chunks: Any = handler(llama=llama, messages=messages, tools=[WEATHER], stream=True)
        return sum(1 for c in chunks for _ in c["choices"][0]["delta"].get("tool_calls") or [])

    fresh = deltas([{"role": "user", "content": "Oslo?"}])  # name, then argument pieces
    # after an answered call, the call waits until judged: name and arguments come at once
    assert deltas(ANSWERED) == 2 < fresh


# ---- the pieces ---------------------------------------------------------------------------


def test_answered_calls_pair_results_by_id_and_by_position() -> None:
    call = {"function": {"name": "f", "arguments": '{"a": 1.0}'}}
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "tool_calls": [{"id": "x", **call}, {"id": "y", **call}]},
        {"role": "tool", "tool_call_id": "y", "content": "1"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "content": "2"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "h", "arguments": "{}"}}]},
    ]
    assert answered_calls(messages) == {("f", '{"a": 1}'), ("g", "{}")}  # h has no result


def test_call_keys_ignore_key_order_and_integral_floats_but_not_cut_arguments() -> None:
    assert call_key("f", '{"b": 2.0, "a": [1]}') == call_key("f", {"a": [1], "b": 2})
    assert call_key("f", '{"a": 1') is None
    assert call_key("f", '{"a": 1}') != call_key("g", '{"a": 1}')


@pytest.mark.parametrize("name", sorted(builtin_dialects()))
def test_the_ban_refuses_every_format_s_start_and_llama_cpp_accepts_it(name: str) -> None:
    from tooldialect.dialect.bodies import render_body
    from tooldialect.grammar.forced import GbnfAutomaton

    llama_cpp = pytest.importorskip("llama_cpp")
    spec = get_builtin(name)
    grammar = no_call_start(spec)
    starts = [f.opener() or render_body(f.body, "f", {}, "c", 0) for f in spec.formats]
    if grammar is None:  # every format starts as prose can: nothing to ban
        assert all(s.lstrip()[:1].isalnum() for s in starts)
        return
    llama_cpp.LlamaGrammar.from_string(grammar.gbnf, verbose=False)
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    for start in starts:
        if not start.lstrip()[:1].isalnum():
            assert automaton.viable(" " + start.lstrip()) is False, start
    # a call written as text (JSON, markup, a code fence) is no answer in words either
    for text in ('{"name": "f"}', '>{"name": "f"}', "```json", "[1]", "<tool_response>"):
        assert automaton.viable(text) is False, text
    for answer in ("The answer", "42 degrees", "**Oslo**: 7 C", "- sleet", "Été"):
        assert automaton.viable(answer) is True, answer


# ---- on a real model ------------------------------------------------------------------------


@pytest.mark.model
def test_qwen_answers_after_the_result_instead_of_calling_again(qwen_path: Any) -> None:
    """Qwen2.5-Coder-0.5B, greedy, after its call's result: unsteered it calls again (the loop
    of issue 38); steered, the reply holds no answered call and answers in words."""
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(str(qwen_path), n_ctx=2048, n_threads=2, verbose=False, seed=0)
    replies = {}
    for steer in (False, True):
        handler = ToolChatHandler(steer_calls=steer, prefix_checkpoints=False)
        out: Any = handler(
            llama=llm, messages=ANSWERED, tools=[WEATHER], temperature=0.0, max_tokens=96
        )
        replies[steer] = out["choices"][0]["message"]
    unsteered = [c["function"] for c in replies[False].get("tool_calls") or []]
    assert {"name": "get_weather", "arguments": '{"city": "Paris"}'} in unsteered
    assert not replies[True].get("tool_calls")
    assert "get_weather" not in (replies[True]["content"] or "")
    assert replies[True]["content"].strip()
