"""``Agent(on_event=print)`` prints one short line per event (issue 40 s5): a ``FinalAnswer``
printed whole was 5 KB, most of it the transcript and an MCP tool's raw result."""

from __future__ import annotations

from tooldialect.apps.agent_events import (
    AgentResult,
    AgentStep,
    CallFinished,
    FinalAnswer,
    StepFinished,
    TextDelta,
)

RAW = {"content": [{"type": "text", "text": "x" * 4000}], "structuredContent": {"y": "z" * 4000}}


def weather_call(**changes: object) -> CallFinished:
    fields: dict[str, object] = {
        "step": 1,
        "id": "call_1",
        "name": "weather_current_weather",
        "arguments": '{"city": "Paris"}',
        "result": "18 C, cloudy",
        "seconds": 0.0123,
        "value": RAW,
    }
    fields.update(changes)
    return CallFinished(**fields)  # type: ignore[arg-type]


def run_result() -> AgentResult:
    step = AgentStep(1, {"prompt_tokens": 300, "completion_tokens": 20}, "tool_calls", 1.234, 0.01)
    step.calls.append(weather_call())
    messages = [{"role": "tool", "content": "x" * 4000}] * 3
    return AgentResult("answer", "It is 18 C and cloudy in Paris.", messages, [step])


def test_a_call_shows_name_arguments_result_and_time_not_the_raw_value() -> None:
    assert repr(weather_call()) == (
        "CallFinished(step=1, id='call_1', name='weather_current_weather', "
        "arguments='{\"city\": \"Paris\"}', result='18 C, cloudy', seconds=0.01)"
    )


def test_long_texts_are_cut_and_say_how_much_was_left_out() -> None:
    call = weather_call(result="r" * 500, error="tool_error", requested_arguments="{}")
    shown = repr(call)
    assert f"result={'r' * 60!r}...(+440 chars)" in shown
    assert "error='tool_error'" in shown and "requested_arguments='{}'" in shown
    assert len(shown) < 250


def test_a_step_shows_its_calls_by_name_and_its_token_counts() -> None:
    (step,) = run_result().steps
    assert repr(StepFinished(step)) == (
        "StepFinished(step=AgentStep(number=1, finish_reason='tool_calls', "
        "calls=[weather_current_weather], prompt_tokens=300, completion_tokens=20, "
        "model_seconds=1.23, tool_seconds=0.01))"
    )


def test_the_final_answer_is_one_short_line() -> None:
    shown = repr(FinalAnswer(run_result()))
    assert shown == (
        "FinalAnswer(result=AgentResult(outcome='answer', "
        "answer='It is 18 C and cloudy in Paris.', reason=None, steps=1, messages=3, "
        "usage={'prompt_tokens': 300, 'completion_tokens': 20, 'cached_tokens': 0}))"
    )
    assert len(shown) < 300  # was about 13 KB for this result


def test_small_events_keep_the_dataclass_repr() -> None:
    assert repr(TextDelta(2, "Hi")) == "TextDelta(step=2, text='Hi')"
