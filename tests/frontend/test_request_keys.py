"""One typed request (issue 30 section 1): every entry point refuses an unknown key, naming the
nearest field, and takes every keyword llama-cpp-python passes to a chat handler."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import tooldialect
from conftest import read_template
from fake_engine import fake_handler
from tool_defs import REF_CYCLE
from tooldialect.errors import ToolSpecError, UnsupportedSchemaError
from tooldialect.frontend.options import (
    LLAMA_CPP_KEYWORDS,
    REQUEST_KEYS,
    ChatOptions,
    RequestOptions,
)

TEMPLATE = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
ASK = [{"role": "user", "content": "hi"}]
TYPOS = [
    ("tool_choise", "tool_choice"),
    ("temprature", "temperature"),
    ("paralel_tool_calls", "parallel_tool_calls"),
    ("max_token", "max_tokens"),
]


@pytest.mark.parametrize(("typo", "meant"), TYPOS)
def test_the_handler_refuses_an_unknown_key_naming_the_nearest(typo: str, meant: str) -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["Hi."])
    with pytest.raises(ToolSpecError, match=f"{typo!r}; did you mean {meant!r}") as caught:
        handler(llama=llama, messages=ASK, **{typo: 1})
    assert caught.value.param == typo
    assert engine.jobs == []  # nothing decoded


@pytest.mark.parametrize(("typo", "meant"), TYPOS)
def test_create_chat_completion_refuses_an_unknown_key(typo: str, meant: str) -> None:
    handler, llama, _ = fake_handler(TEMPLATE, ["Hi."])
    with pytest.raises(ToolSpecError, match=repr(meant)):
        bad: Any = {typo: 1}  # typed Any: mypy refuses the typo itself (Unpack[RequestOptions])
        tooldialect.create_chat_completion(llama, messages=ASK, handler=handler, **bad)


@pytest.mark.parametrize(("typo", "meant"), TYPOS)
def test_server_client_refuses_an_unknown_key_before_any_request(typo: str, meant: str) -> None:
    client = tooldialect.ServerClient("http://127.0.0.1:9")  # nothing listens: never reached
    with pytest.raises(ToolSpecError, match=repr(meant)):
        bad: Any = {typo: 1}
        client.create_chat_completion(messages=ASK, **bad)


def test_agent_refuses_an_unknown_key() -> None:
    from tooldialect.apps.agent import Agent

    with pytest.raises(ToolSpecError, match="'parallel_tool_calls'"):
        Agent(object(), paralel_tool_calls=False)
    Agent(object(), parallel_tool_calls=False, temperature=0.0)  # known keys pass


def test_prepare_refuses_an_unknown_key() -> None:
    handler, llama, _ = fake_handler(TEMPLATE)
    with pytest.raises(ToolSpecError, match="'tool_choice'"):
        handler.prepare(llama=llama, messages=ASK, tool_choise="required")


def test_known_extras_still_work_and_are_honoured() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["Hi."])
    out: Any = handler(
        llama=llama,
        messages=ASK,
        temperature=0.0,
        max_tokens=4,
        parallel_tool_calls=False,
        chat_template_kwargs={"x": 1},
        enable_thinking=False,
        tfs_z=1.0,
    )
    assert out["choices"][0]["message"]["content"] == "Hi."
    assert engine.jobs[0].sampling.temperature == 0.0 and engine.jobs[0].max_tokens == 4


def test_every_keyword_llama_cpp_passes_is_taken() -> None:
    """``Llama.create_chat_completion`` called for real (unbound, on the fake model): what it
    passes to the handler is ``LLAMA_CPP_KEYWORDS``, and the handler takes all of it."""
    llama_cpp = pytest.importorskip("llama_cpp")
    seen: dict[str, Any] = {}
    handler, llama, _ = fake_handler(TEMPLATE, ["Hi."])

    def recording(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return handler(**kwargs)

    fake: Any = llama
    fake.chat_handler = recording
    fake._chat_handlers = {}
    fake.chat_format = None
    out = functools.partial(llama_cpp.Llama.create_chat_completion, fake)(messages=ASK)
    assert out["choices"][0]["message"]["content"] == "Hi."
    assert set(seen) - {"llama", "messages"} == set(LLAMA_CPP_KEYWORDS)
    assert set(LLAMA_CPP_KEYWORDS) <= REQUEST_KEYS


def test_the_option_list_is_written_once() -> None:
    from tooldialect.engine.base import SamplingParams

    sampling = set(SamplingParams.__dataclass_fields__) - {"penalty_last_n"}
    assert sampling <= REQUEST_KEYS
    assert set(RequestOptions.__annotations__) == REQUEST_KEYS


def test_nan_is_refused_in_process() -> None:
    with pytest.raises(ToolSpecError, match="temperature") as caught:
        ChatOptions.build({"temperature": float("nan")}, where="test")
    assert caught.value.param == "temperature"


def test_a_lone_surrogate_is_a_tool_spec_error_naming_the_message() -> None:
    handler, llama, engine = fake_handler(TEMPLATE, ["Hi."])
    messages = [*ASK, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "\udcff"}]
    with pytest.raises(ToolSpecError, match=r"messages\[2\]") as caught:
        handler(llama=llama, messages=messages)
    assert caught.value.param == "messages" and engine.jobs == []


def test_a_ref_cycle_without_structure_is_refused_naming_tool_and_pointer() -> None:
    from tooldialect.dialect.builtins import get_builtin
    from tooldialect.grammar import build_grammar
    from tooldialect.tool_defs import normalize_tools

    tools = normalize_tools([REF_CYCLE])
    with pytest.raises(UnsupportedSchemaError, match="tool 'loop'") as caught:
        build_grammar(get_builtin("hermes"), tools)
    assert caught.value.pointer == "/properties/x"
    assert "#/$defs/a -> #/$defs/b -> #/$defs/a" in str(caught.value)
