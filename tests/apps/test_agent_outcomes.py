"""A run always ends with an outcome, whatever the model writes (issue 38 section 6).

The model's raw text goes through the real handler (template, parser, front end) on a scripted
engine, so a call cut at ``max_tokens``, broken or invalid arguments, an unknown tool, text after a
call and the rest reach ``Agent`` as they would from a GGUF. Measured on Qwen2.5-Coder-0.5B before
the fix: a call cut by ``max_tokens`` went back into the history and the next step raised
``ToolSpecError: messages[1].tool_calls[0].function.arguments is not JSON`` out of ``Agent.run``.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_script import Reply, ScriptedLlama, add, calls, text
from conftest import ROOT as CONFTEST_ROOT
from conftest import read_template
from fake_engine import FakeEngine, FakeLlama
from tooldialect import Agent, AgentResult, CallFinished, FinalAnswer, ToolChatHandler, tool
from tooldialect.engine.base import Generation, GenerationRequest
from tooldialect.prompt.request_messages import validate_messages

QWEN = "Qwen2.5-Coder-0.5B-Instruct.jinja"  # hermes: <tool_call>{"name", "arguments"}</tool_call>
OUTCOMES = {"answer", "max_steps", "length", "loop"}
ROOT = CONFTEST_ROOT

Script = list[str]
"""One reply, as the engine's token pieces."""


class StepEngine(FakeEngine):
    """Replays one script per request (``"Done."`` once they run out); a step given as
    ``(script, n)`` is cut after ``n`` pieces with finish reason ``length``, as ``max_tokens``
    cuts a real reply."""

    def __init__(self, steps: Sequence[Script | tuple[Script, int]]) -> None:
        super().__init__()
        self.steps = list(steps)

    def run(self, request: GenerationRequest) -> Generation:
        step = self.steps.pop(0) if self.steps else ["Done", "."]
        script, cut = step if isinstance(step, tuple) else (step, None)
        self.script = list(script)
        if cut is not None:
            request = dataclasses.replace(request, max_tokens=max(cut, 1))
        return super().run(request)


def pieces(text: str, size: int = 3) -> Script:
    return [text[i : i + size] for i in range(0, len(text), size)]


def hermes_call(name: str, arguments: Any) -> str:
    """A call as Qwen2.5 writes it; ``arguments`` as text is written as it is (broken JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


class Record:
    """The tools of a run, and every call that really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.ran.append(("add", {"a": a, "b": b}))
            return a + b

        @tool
        def echo(text: str) -> str:
            """Say the text back."""
            self.ran.append(("echo", {"text": text}))
            return text

        self.tools = [add, echo]


def make_agent(
    steps: Sequence[Script | tuple[Script, int]],
    *,
    template: str = QWEN,
    **options: Any,
) -> tuple[Agent, Record, StepEngine]:
    handler = ToolChatHandler()
    llama = FakeLlama(read_template(template))
    llama.chat_handler = handler  # type: ignore[attr-defined]
    engine = StepEngine(steps)
    handler.setup(llama, engine=engine)
    record = Record()
    return Agent(llama, tools=record.tools, **options), record, engine


def check_ends_well(agent: Agent, result: AgentResult) -> None:
    """An outcome, a transcript the next request accepts, and a conversation that goes on."""
    assert isinstance(result, AgentResult) and result.outcome in OUTCOMES
    validate_messages(result.messages)
    more = agent.run([*result.messages, {"role": "user", "content": "And now?"}])
    assert more.outcome in OUTCOMES


# ---- the measured crash --------------------------------------------------------------------------

CUT = pieces('Sure.<tool_call>\n{"name": "add", "arguments": {"a": 1, "b"')


def test_a_call_cut_at_max_tokens_ends_the_run_with_length_and_never_runs() -> None:
    agent, record, engine = make_agent([[*CUT, ": 2}}\n</tool_call>"]], max_tokens=len(CUT))
    events = list(agent.stream("1+2?"))
    assert isinstance(events[-1], FinalAnswer)
    result = events[-1].result
    assert result.outcome == "length" and result.answer is None
    assert "cut at max_tokens inside a call to 'add'" in (result.reason or "")
    assert record.ran == [] and len(engine.jobs) == 1  # not run, no second step
    finished = [e for e in events if isinstance(e, CallFinished)]
    assert [(f.name, f.error, f.arguments) for f in finished] == [("add", "cut", '{"a": 1, "b"')]
    assert result.steps[0].calls == finished and result.steps[0].finish_reason == "length"
    # the reply's text stays, its cut call does not: the next request takes the transcript
    assert result.messages[-1] == {"role": "assistant", "content": "Sure."}
    check_ends_well(agent, result)


def test_a_cut_reply_runs_none_of_its_calls_even_the_complete_ones() -> None:
    first = hermes_call("add", {"a": 1, "b": 2})
    script = pieces(f'{first}\n<tool_call>\n{{"name": "echo", "arguments": {{"text": "hel')
    agent, record, _ = make_agent([script], max_tokens=len(script))
    result = agent.run("go")
    assert result.outcome == "length" and record.ran == []
    assert [c.error for c in result.steps[0].calls] == ["cut", "cut"]
    assert "'echo'" in (result.reason or "")
    check_ends_well(agent, result)


def test_a_reply_cut_after_its_calls_runs_them() -> None:
    """Cut in the text after a complete call: the call is whole, so it runs and the run goes on."""
    script = pieces(hermes_call("add", {"a": 1, "b": 2}) + "\nI will now explain at length")
    agent, record, _ = make_agent([(script, len(script) - 2), ["3", "."]])
    result = agent.run("1+2?")
    assert record.ran == [("add", {"a": 1, "b": 2})]
    assert result.outcome == "answer" and result.answer == "3."
    check_ends_well(agent, result)


@pytest.mark.model
def test_the_measured_crash_on_qwen_ends_with_length(qwen_path: Path) -> None:
    """Qwen2.5-Coder-0.5B at temperature 0 writes this note's arguments past 24 tokens: the
    step raised ``arguments is not JSON`` from its own history before."""
    from llama_cpp import Llama

    @tool
    def write_note(title: str, body: str) -> str:
        """Save a note.

        Args:
            title: The note's title.
            body: The full text of the note.
        """
        return "saved"

    handler = ToolChatHandler()
    llm = Llama(str(qwen_path), n_ctx=2048, n_threads=2, verbose=False, chat_handler=handler)
    agent = Agent(llm, tools=[write_note], max_tokens=24, temperature=0.0, max_steps=3)
    ask = "Save a note titled Groceries listing milk, eggs, bread, butter, apples and coffee."
    result = agent.run(ask)
    assert result.outcome == "length" and result.steps[0].finish_reason == "length"
    assert [c.error for c in result.steps[0].calls] == ["cut"]
    assert "'write_note'" in (result.reason or "")
    validate_messages(result.messages)


# ---- every kind of bad output, through the real parser -------------------------------------------

BAD_OUTPUTS: dict[str, Script] = {
    "invalid-json": pieces(hermes_call("add", '{"a": 1, "b": }')),
    "invalid-for-schema": pieces(hermes_call("add", {"a": "one", "b": [2]})),
    "missing-argument": pieces(hermes_call("add", {"a": 1})),
    "unknown-tool": pieces(hermes_call("subtract", {"a": 1, "b": 2})),
    "text-after-call": pieces(hermes_call("add", {"a": 1, "b": 2}) + "\nThat should do it."),
    "text-before-call": pieces("Let me add.\n" + hermes_call("add", {"a": 1, "b": 2})),
    "empty": [],
    "half-open-marker": pieces('<tool_call>\n{"name": "add", "argu'),
    "name-not-a-string": pieces('<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>'),
    "arguments-a-string": pieces(hermes_call("add", '"a=1, b=2"')),
    "arguments-a-list": pieces(hermes_call("add", "[1, 2]")),
    "many-calls": pieces(
        "\n".join(hermes_call("add", {"a": i, "b": i}) for i in range(12))
        + hermes_call("echo", {"text": "x" * 50})
        + hermes_call("add", {"a": 0, "b": 0})  # a repeat: decoding stops here
        + hermes_call("echo", {"text": "never read"})
    ),
    "close-without-open": pieces('{"a": 1}}\n</tool_call>\n</tool_call>'),
}


@pytest.mark.parametrize("name", BAD_OUTPUTS, ids=list(BAD_OUTPUTS))
@pytest.mark.parametrize("cut", [None, "middle"], ids=["whole", "cut"])
def test_bad_outputs_end_with_an_outcome(name: str, cut: str | None) -> None:
    script = BAD_OUTPUTS[name]
    step: Script | tuple[Script, int] = (script, len(script) // 2) if cut else script
    agent, record, _ = make_agent([step, script, ["Done", "."]], max_steps=3)
    result = agent.run("go")
    check_ends_well(agent, result)
    for name_, args in record.ran:  # whatever ran, ran with arguments its schema takes
        assert name_ in ("add", "echo") and args


@pytest.mark.parametrize(
    ("name", "errors"),
    [
        ("invalid-for-schema", ["invalid_arguments"]),
        ("missing-argument", ["invalid_arguments"]),
        ("unknown-tool", ["unknown_tool"]),
        ("text-after-call", [None]),
        ("text-before-call", [None]),
    ],
)
def test_failed_calls_go_back_to_the_model_and_the_run_answers(
    name: str, errors: list[str | None]
) -> None:
    agent, record, engine = make_agent([BAD_OUTPUTS[name], ["Done", "."]])
    result = agent.run("go")
    assert [c.error for c in result.steps[0].calls] == errors
    assert result.outcome == "answer" and result.answer == "Done."
    assert len(engine.jobs) == 2
    assert record.ran == ([("add", {"a": 1, "b": 2})] if errors == [None] else [])


def test_many_calls_run_once_each_in_order() -> None:
    agent, record, _ = make_agent([BAD_OUTPUTS["many-calls"], ["Done", "."]])
    result = agent.run("go")
    assert result.outcome == "answer"
    assert record.ran[:12] == [("add", {"a": i, "b": i}) for i in range(12)]
    assert record.ran[12:] == [("echo", {"text": "x" * 50})]  # nothing after the repeat


class CheckedLlama(ScriptedLlama):
    """A client that streams what it is given (no parser to repair it) and, like the front end,
    refuses a request whose history it would refuse."""

    def create_chat_completion(self, **request: Any) -> Any:
        validate_messages(request["messages"])
        return super().create_chat_completion(**request)


@pytest.mark.parametrize(
    ("reply", "written"),
    [
        (calls(("add", '{"a": 1, "b":')), "{}"),
        (calls(("add", "[1, 2]")), "{}"),
        (calls(("add", '"a=1"')), "{}"),
        (calls(("add", "")), ""),
        (calls(("", '{"a": 1}'), ("add", '{"a": 1, "b": 2}')), '{"a": 1, "b": 2}'),
    ],
    ids=["broken-json", "a-list", "a-string", "empty", "no-name"],
)
def test_a_client_s_broken_call_is_recorded_so_the_next_request_takes_it(
    reply: Reply, written: str
) -> None:
    """Without a parser in between (any OpenAI-shaped client), arguments that are not a JSON
    object are not run, and the transcript holds ``{}`` for them; a call without a name is
    dropped."""
    llm = CheckedLlama([reply, text("Done.")])
    result = Agent(llm, tools=[add]).run("go")
    assert result.outcome == "answer" and len(llm.requests) == 2
    (call,) = result.messages[1]["tool_calls"]
    assert call["function"] == {"name": "add", "arguments": written}
    validate_messages(result.messages)


def test_a_client_s_cut_call_ends_the_run() -> None:
    llm = CheckedLlama([{**calls(("add", '{"a": 1, "b')), "finish": "length"}])
    result = Agent(llm, tools=[add]).run("go")
    assert result.outcome == "length" and result.answer is None and len(llm.requests) == 1
    assert result.messages[-1] == {"role": "assistant", "content": ""}
    assert [c.error for c in result.steps[0].calls] == ["cut"]


# ---- a cut at every point, in several dialects ---------------------------------------------------

DIALECT_CALLS = {
    QWEN: hermes_call("add", {"a": 1, "b": 2}),
    "SmolLM2-135M-Instruct.jinja": hermes_call("add", {"a": 1, "b": 2}),  # polyfill
    "meta-llama-Llama-3.1-8B-Instruct.jinja": '{"name": "add", "parameters": {"a": 1, "b": 2}}',
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": (
        '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}}]'
    ),
    "Qwen3-Coder.jinja": (
        "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n"
        "<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"
    ),
}


@pytest.mark.parametrize("template", DIALECT_CALLS, ids=list(DIALECT_CALLS))
def test_a_call_cut_anywhere_never_runs_cut_and_never_raises(template: str) -> None:
    script = pieces(DIALECT_CALLS[template], 2)
    for cut in range(1, len(script) + 1):
        agent, record, _ = make_agent([(script, cut), ["3", "."]], template=template)
        result = agent.run("1+2?")
        check_ends_well(agent, result)
        assert record.ran in ([], [("add", {"a": 1, "b": 2})]), (cut, record.ran)


# ---- fuzz: arbitrary model outputs for several steps ---------------------------------------------

TEXT = st.lists(
    st.sampled_from([*'ab {}[]":,\n<>/=', "<tool_call>", "</tool_call>", '"name"', '"arguments"']),
    max_size=8,
).map("".join)
GOOD_ARGS = st.fixed_dictionaries({"a": st.integers(-3, 3), "b": st.integers(-3, 3)})
ODD_ARGS = st.dictionaries(st.sampled_from(["a", "b", "text", "x"]), st.integers() | st.text())
RAW_ARGS = st.sampled_from(['{"a": 1, "b": ', "{", "[]", '"x"', "null", "{}}", '{"a": 1} junk'])


@st.composite
def calls_text(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["add", "echo", "nope", "", "add\n"]))
    args = draw(GOOD_ARGS | ODD_ARGS | RAW_ARGS)
    written = hermes_call(name, args)
    if draw(st.booleans()):  # a call left open or cut inside
        written = written[: draw(st.integers(0, len(written)))]
    return written


@st.composite
def replies(draw: st.DrawFn) -> Script | tuple[Script, int]:
    text = "".join(draw(st.lists(TEXT | calls_text(), max_size=5)))
    size = draw(st.integers(1, 6))
    script = pieces(text, size)
    if draw(st.booleans()):
        return script
    return (script, draw(st.integers(1, max(len(script), 1))))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(
    steps=st.lists(replies(), min_size=1, max_size=4),
    max_steps=st.integers(1, 4),
    answer_at_limit=st.booleans(),
    loop_limit=st.sampled_from([None, 1, 3]),
    choice=st.sampled_from(["auto", "required"]),
)
def test_fuzzed_model_outputs_always_end_with_an_outcome(
    steps: list[Script | tuple[Script, int]],
    max_steps: int,
    answer_at_limit: bool,
    loop_limit: int | None,
    choice: str,
) -> None:
    agent, record, _ = make_agent(
        steps,
        max_steps=max_steps,
        answer_at_limit=answer_at_limit,
        loop_limit=loop_limit,
        tool_choice=choice,
    )
    result = agent.run("go")
    assert len(result.steps) <= max_steps
    last = result.steps[-1]
    if any(c.error == "cut" for c in last.calls):
        assert result.outcome == "length" and last.finish_reason == "length"
    for name, args in record.ran:
        assert (name == "add" and set(args) == {"a", "b"}) or (name == "echo" and "text" in args)
    check_ends_well(agent, result)


# ---- tooldialect chat on the same outputs --------------------------------------------------------


def chat(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    steps: list[Any],
    lines: str,
    *flags: str,
) -> tuple[str, str]:
    """``tooldialect chat`` on a fake model replaying ``steps``: (stdout, stderr)."""
    import llama_cpp

    from tooldialect.apps.chat import configure_parser, run_chat

    def fake_llama(*, model_path: str, chat_handler: ToolChatHandler, **_: Any) -> FakeLlama:
        llama = FakeLlama(read_template(QWEN), model_path=model_path)
        llama.chat_handler = chat_handler  # type: ignore[attr-defined]
        chat_handler.setup(llama, engine=StepEngine(steps))
        return llama

    monkeypatch.setattr(llama_cpp, "Llama", fake_llama)
    parser = argparse.ArgumentParser()
    configure_parser(parser)
    tools = f"{ROOT / 'examples' / 'agent.py'}:calculate"
    args = parser.parse_args(["/models/fake.gguf", "--tools", tools, *flags])
    assert run_chat(args, stdin=io.StringIO(lines)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def calculate(expression: str) -> str:
    return hermes_call("calculate", {"expression": expression})


def test_chat_survives_a_cut_call_and_the_conversation_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = pieces('<tool_call>\n{"name": "calculate", "arguments": {"expression": "12 *', 2)
    steps = [cut, pieces(calculate("6 * 7")), pieces("It is 42.")]
    out, err = chat(monkeypatch, capsys, steps, "12 * 34?\n6 * 7?\n", "--max-tokens", str(len(cut)))
    assert "tooldialect chat:" not in err  # no error reached the user
    assert "cut: Not run: the reply was cut at max_tokens" in out
    assert "[reply cut at --max-tokens]" in out
    assert "= 6 * 7 = 42" in out and "It is 42." in out


@pytest.mark.parametrize("name", BAD_OUTPUTS, ids=list(BAD_OUTPUTS))
def test_chat_on_bad_outputs_reports_no_error(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = BAD_OUTPUTS[name]
    steps = [(script, max(len(script) // 2, 1)), script, pieces("Done.")]
    out, err = chat(monkeypatch, capsys, steps, "go\nagain\n", "--max-steps", "2")
    assert "tooldialect chat:" not in err
    assert out.count("you> ") == 2
