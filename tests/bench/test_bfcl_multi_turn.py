"""BFCL multi_turn_base bench (bench/bfcl_multi_turn.py), model-free: the OpenAI call -> BFCL
python call conversion, and BFCL's own checker on scripted models."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench import bfcl_data, bfcl_multi_turn

python_call = bfcl_multi_turn.python_call
KNOWN = {"f", "cd", "post_tweet"}

needs_wheel = pytest.mark.skipif(
    not (bfcl_data.CACHE / "bfcl").is_dir(), reason="the bfcl-eval wheel is not fetched"
)


# ---- conversion ---------------------------------------------------------------------------------

# (arguments as the model wrote them, BFCL's string: convert_to_function_call's name(k=repr(v)))
CONVERSIONS = [
    ({"folder": "document"}, "f(folder='document')"),
    ({"s": "it's"}, 'f(s="it\'s")'),
    ({"s": 'say "hi"'}, "f(s='say \"hi\"')"),
    ({"s": "both ' and \""}, "f(s='both \\' and \"')"),
    ({"s": "back\\slash\nnewline"}, "f(s='back\\\\slash\\nnewline')"),
    ({"n": 3, "x": 2.5, "neg": -1e-05}, "f(n=3,x=2.5,neg=-1e-05)"),
    ({"flag": True, "off": False, "none": None}, "f(flag=True,off=False,none=None)"),
    ({"tags": ["#a", "#b"], "empty": []}, "f(tags=['#a', '#b'],empty=[])"),
    (
        {"order": {"items": [{"sku": "B-17", "qty": 2}], "note": "x"}},
        "f(order={'items': [{'sku': 'B-17', 'qty': 2}], 'note': 'x'})",
    ),
    ({"s": "naïve ☃"}, "f(s='naïve ☃')"),
    ({}, "f()"),
]


@pytest.mark.parametrize(("arguments", "expected"), CONVERSIONS)
def test_a_call_becomes_bfcls_python_string(arguments: dict[str, Any], expected: str) -> None:
    # a JSON string, as the API gives it, or a dict
    for given in (json.dumps(arguments), arguments):
        call = python_call("f", given, known=KNOWN)
        assert call.text == expected
        assert call.runnable == expected


@pytest.mark.parametrize(("arguments", "expected"), CONVERSIONS)
def test_the_string_reads_back_as_the_arguments(arguments: dict[str, Any], expected: str) -> None:
    node = ast.parse(python_call("f", json.dumps(arguments), known=KNOWN).text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "f"
    assert not node.args
    assert {k.arg: ast.literal_eval(k.value) for k in node.keywords} == arguments


@pytest.mark.parametrize("arguments", ['{"a": ', "[1, 2]", '"text"', "not json"])
def test_arguments_that_are_not_an_object_do_not_decode(arguments: str) -> None:
    with pytest.raises(bfcl_multi_turn.DecodeError):
        python_call("f", arguments, known=KNOWN)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("unknown_tool", {"a": 1}),
        ("__import__", {"name": "os"}),
        ("f", {"a=__import__('os').getcwd(),b": 1}),
        ("f", {"not a name": 1}),
    ],
)
def test_a_call_eval_must_not_see_runs_as_the_refused_stub(
    name: str, arguments: dict[str, Any]
) -> None:
    call = python_call(name, json.dumps(arguments), known=KNOWN)
    assert call.runnable == bfcl_multi_turn.REFUSED
    assert call.text.startswith(f"{name}(")  # the record keeps what the model wrote


def test_a_messages_calls_convert_in_order() -> None:
    cd = {"name": "cd", "arguments": '{"folder": "a"}'}
    tweet = {"name": "post_tweet", "arguments": "{}"}
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "1", "type": "function", "function": cd},
            {"id": "2", "type": "function", "function": tweet},
        ],
    }
    calls = bfcl_multi_turn.python_calls(message, KNOWN)
    assert [c.text for c in calls] == ["cd(folder='a')", "post_tweet()"]


# ---- scoring with BFCL's checker ----------------------------------------------------------------


def openai_call(text: str, case: bfcl_multi_turn.MultiTurnCase, index: int) -> dict[str, Any]:
    """A ground-truth string as the model would send it (positional arguments named in the order
    of the function doc's parameters)."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    doc = next(f for f in case.functions if f["name"] == node.func.id)
    params = list(doc["parameters"]["properties"])
    args = {params[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({str(k.arg): ast.literal_eval(k.value) for k in node.keywords})
    function = {"name": node.func.id, "arguments": json.dumps(args)}
    return {"id": f"call_{index}", "type": "function", "function": function}


def scripted(
    case: bfcl_multi_turn.MultiTurnCase, answers: list[list[str]]
) -> bfcl_multi_turn.Reply:
    """A model that answers turn t's user message with ``answers[t]`` in one reply, then words."""

    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        assert tools == case.tools()
        turn = sum(m["role"] == "user" for m in messages) - 1
        if messages[-1]["role"] == "user" and answers[turn]:
            calls = [openai_call(t, case, i) for i, t in enumerate(answers[turn])]
            return {"role": "assistant", "content": None, "tool_calls": calls}
        return {"role": "assistant", "content": "Done."}

    return reply


@pytest.fixture(scope="module")
def case() -> bfcl_multi_turn.MultiTurnCase:
    cases = bfcl_multi_turn.load_cases()
    return next(c for c in cases if c.id == "multi_turn_base_0")


@needs_wheel
def test_the_slice_is_every_tenth_case_and_covers_every_backend() -> None:
    cases = bfcl_multi_turn.select(bfcl_multi_turn.load_cases())
    assert [c.id for c in cases] == [f"multi_turn_base_{10 * i}" for i in range(20)]
    assert {k for c in cases for k in c.involved_classes} == {
        "GorillaFileSystem",
        "MathAPI",
        "MessageAPI",
        "TicketAPI",
        "TradingBot",
        "TravelAPI",
        "TwitterAPI",
        "VehicleControlAPI",
    }


@needs_wheel
def test_the_run_order_groups_cases_of_the_same_backends() -> None:
    cases = bfcl_multi_turn.select(bfcl_multi_turn.load_cases())
    ordered = bfcl_multi_turn.run_order(cases)
    assert sorted(c.id for c in ordered) == sorted(c.id for c in cases)
    backends = [tuple(c.involved_classes) for c in ordered]
    # each set of backends is one run of consecutive cases
    assert len([b for i, b in enumerate(backends) if i == 0 or b != backends[i - 1]]) == len(
        set(backends)
    )
    assert [c.id for c in ordered[:3]] == [f"multi_turn_base_{i}" for i in (0, 20, 30)]


@needs_wheel
def test_a_model_replaying_the_ground_truth_is_correct(
    case: bfcl_multi_turn.MultiTurnCase,
) -> None:
    record = bfcl_multi_turn.run_case(case, scripted(case, case.ground_truth))
    assert record["correct"], record["error"]
    assert record["calls"][0] == [
        "cd(folder='document')",
        "mkdir(dir_name='temp')",
        "mv(source='final_report.pdf',destination='temp')",
    ]
    assert [len(t) for t in record["calls"]] == [len(t) for t in case.ground_truth]
    assert record["model_calls"] == 2 * len(case.turns)  # the calls, then words, per turn
    # the tool results went back: the first turn's cd reports the new directory
    assert "document" in record["steps"][0][0]["results"][0]


@needs_wheel
def test_a_wrong_call_is_wrong(case: bfcl_multi_turn.MultiTurnCase) -> None:
    answers = [list(t) for t in case.ground_truth]
    assert answers[0][1] == "mkdir(dir_name='temp')"
    answers[0][1] = "mkdir(dir_name='tmp')"
    record = bfcl_multi_turn.run_case(case, scripted(case, answers))
    assert not record["correct"]
    assert record["error_type"] == "multi_turn:instance_state_mismatch"


@needs_wheel
def test_a_turn_without_calls_is_wrong(case: bfcl_multi_turn.MultiTurnCase) -> None:
    answers = [list(t) for t in case.ground_truth]
    answers[2] = []
    record = bfcl_multi_turn.run_case(case, scripted(case, answers))
    assert record["error_type"] == "multi_turn:empty_turn_model_response"


@needs_wheel
def test_runs_do_not_share_backend_state(case: bfcl_multi_turn.MultiTurnCase) -> None:
    """BFCL keeps instances in a module's globals: a wrong run must leave nothing behind."""
    answers = [list(t) for t in case.ground_truth]
    answers[0] = ["cd(folder='document')", "mv(source='final_report.pdf', destination='x')"]
    assert not bfcl_multi_turn.run_case(case, scripted(case, answers))["correct"]
    assert bfcl_multi_turn.run_case(case, scripted(case, case.ground_truth))["correct"]
    utils = bfcl_multi_turn.bfcl_modules()[0]
    assert not [n for n in vars(utils) if n.startswith("tdbench_")]


@needs_wheel
def test_a_model_that_keeps_calling_is_force_terminated(
    case: bfcl_multi_turn.MultiTurnCase,
) -> None:
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "tool_calls": [openai_call("pwd()", case, 0)]}

    limits = bfcl_multi_turn.Limits(max_steps=3)
    record = bfcl_multi_turn.run_case(case, reply, limits=limits)
    assert record["error_type"] == "multi_turn:force_terminated"
    assert record["model_calls"] == 3
    assert record["calls"] == [["pwd()"] * 3]


@needs_wheel
def test_a_failing_model_is_recorded_not_raised(case: bfcl_multi_turn.MultiTurnCase) -> None:
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if len(messages) > 1:  # the second call overflows
            raise ValueError("Requested tokens exceed context window")
        return {"role": "assistant", "tool_calls": [openai_call("pwd()", case, 0)]}

    record = bfcl_multi_turn.run_case(case, reply)
    assert record["error_type"] == "bench:exception"
    assert "context window" in record["error"]
    assert record["model_calls"] == 1


@needs_wheel
def test_a_case_over_its_budget_is_a_timeout(case: bfcl_multi_turn.MultiTurnCase) -> None:
    limits = bfcl_multi_turn.Limits(case_cpu_seconds=-1.0)
    record = bfcl_multi_turn.run_case(case, scripted(case, case.ground_truth), limits=limits)
    assert (record["error_type"], record["model_calls"]) == ("bench:timeout", 0)


@needs_wheel
def test_a_refused_call_fails_like_an_unknown_name(case: bfcl_multi_turn.MultiTurnCase) -> None:
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "user":
            function = {"name": "__import__", "arguments": '{"name": "os"}'}
            return {"role": "assistant", "tool_calls": [{"id": "x", "function": function}]}
        return {"role": "assistant", "content": "Done."}

    record = bfcl_multi_turn.run_case(case, reply)
    step = record["steps"][0][0]
    assert step["calls"] == ["__import__(name='os')"]
    assert step["executed"] == [bfcl_multi_turn.REFUSED]
    assert step["results"][0].startswith("Error during execution: name 'refused_call'")
    assert not record["correct"]


@needs_wheel
def test_arguments_that_do_not_decode_end_the_turn(case: bfcl_multi_turn.MultiTurnCase) -> None:
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        function = {"name": "cd", "arguments": '{"folder": "docu'}
        return {"role": "assistant", "tool_calls": [{"id": "x", "function": function}]}

    record = bfcl_multi_turn.run_case(case, reply)
    assert record["model_calls"] == len(case.turns)  # one reply a turn, each ending its turn
    assert all("undecodable" in steps[0] for steps in record["steps"])
    assert record["error_type"] == "multi_turn:empty_turn_model_response"
