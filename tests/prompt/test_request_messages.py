"""Whole conversations reach the prompt: legacy function calling, malformed history, system turns
folded where a template has no place for them, no message lost (no model)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conftest import read_template
from fake_engine import FakeEngine, fake_handler
from server.fake import FakeServer
from tooldialect.dialect.builtins import get_builtin
from tooldialect.engine.base import SamplingParams
from tooldialect.errors import ToolSpecError
from tooldialect.frontend.render import render_prompt
from tooldialect.frontend.request import ModelSetup
from tooldialect.gguf import ModelInfo
from tooldialect.handler import ToolChatHandler
from tooldialect.prompt.request_messages import canonical_messages
from tooldialect.prompt.template import ChatTemplate
from tooldialect.server_client import ServerClient
from tooldialect.verify import detect_dialect

USER = {"role": "user", "content": "What is the weather in Oslo?"}
SYSTEM = {"role": "system", "content": "Answer like a pirate."}
# not tool_defs.WEATHER: the model test below decodes from a prompt with this description
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def _call(
    name: str = "get_weather", call_id: str | None = "call_1", args: Any = '{"city": "Oslo"}'
) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id is not None:
        call["id"] = call_id
    return call


def _calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


RESULT = "Sunny, 21 C, light wind from the west"


# ---- legacy function calling, canonical -------------------------------------------------------

CANONICAL = [
    (
        "function-result-bound-to-its-call",
        [USER, _calls(_call()), {"role": "function", "name": "get_weather", "content": RESULT}],
        {"role": "tool", "name": "get_weather", "content": RESULT, "tool_call_id": "call_1"},
    ),
    (
        "latest-unanswered-call-of-that-name",
        [
            USER,
            _calls(_call(call_id="a"), _call("get_time", "b", "{}"), _call(call_id="c")),
            {"role": "tool", "tool_call_id": "c", "content": "first"},
            {"role": "function", "name": "get_weather", "content": RESULT},
        ],
        {"role": "tool", "name": "get_weather", "content": RESULT, "tool_call_id": "a"},
    ),
    (
        "legacy-function-call-turn",
        [
            USER,
            {"role": "assistant", "content": None, "function_call": _call()["function"]},
            {"role": "function", "name": "get_weather", "content": RESULT},
        ],
        {"role": "tool", "name": "get_weather", "content": RESULT, "tool_call_id": "call1"},
    ),
    (
        "call-without-id",
        [
            USER,
            _calls(_call(call_id=None)),
            {"role": "function", "name": "get_weather", "content": "x"},
        ],
        {"role": "tool", "name": "get_weather", "content": "x"},
    ),
]


@pytest.mark.parametrize(
    ("messages", "last"), [c[1:] for c in CANONICAL], ids=[c[0] for c in CANONICAL]
)
def test_legacy_function_messages_become_bound_tool_results(
    messages: list[dict[str, Any]], last: dict[str, Any]
) -> None:
    out = canonical_messages(messages)
    assert out[-1] == last
    assert len(out) == len(messages)
    if "function_call" in messages[1]:
        assert out[1]["tool_calls"][0]["id"] == "call1" and "function_call" not in out[1]


# ---- malformed history: named, in the handler and the server engine alike -------------------

MALFORMED = [
    (
        "args-not-json",
        [USER, _calls(_call(args='{"city": Oslo}'))],
        "messages[1].tool_calls[0].function.arguments is not JSON",
    ),
    (
        "args-not-object",
        [USER, _calls(_call(args="[1]"))],
        "messages[1].tool_calls[0].function.arguments must be a JSON object",
    ),
    (
        "legacy-args",
        [
            USER,
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{"},
            },
        ],
        "messages[1].function_call.arguments is not JSON",
    ),
    (
        "result-without-call",
        [USER, {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
        "messages[1].tool_call_id 'call_1' matches no earlier",
    ),
    (
        "result-before-any-call",
        [USER, {"role": "tool", "content": "x"}],
        "messages[1] is a tool result, but no earlier",
    ),
    (
        "unknown-id",
        [USER, _calls(_call()), {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
        "messages[2].tool_call_id 'call_9'",
    ),
    (
        "id-of-a-later-call",
        [USER, {"role": "tool", "tool_call_id": "call_1", "content": "x"}, _calls(_call())],
        "messages[1].tool_call_id",
    ),
    (
        "function-without-call",
        [USER, {"role": "function", "name": "get_weather", "content": "x"}],
        "messages[1] (role 'function', name 'get_weather')",
    ),
    (
        "function-answered-twice",
        [
            USER,
            _calls(_call()),
            {"role": "function", "name": "get_weather", "content": "x"},
            {"role": "function", "name": "get_weather", "content": "y"},
        ],
        "messages[3] (role 'function'",
    ),
    (
        "function-without-name",
        [USER, _calls(_call()), {"role": "function", "content": "x"}],
        "messages[2].name is missing",
    ),
]


def _setup(source: str, spec: Any = None) -> ModelSetup:
    template = ChatTemplate(source)
    return ModelSetup(
        info=ModelInfo(name="test"),
        template=template,
        template_origin="user",
        spec=spec or detect_dialect(source),
        engine=FakeEngine(),
    )


def _handler_prepare(setup: ModelSetup, messages: list[dict[str, Any]]) -> Any:
    handler, llama, _ = fake_handler(setup.template.source)
    return handler.prepare(llama=llama, messages=messages, tools=[WEATHER])


def _server_prepare(setup: ModelSetup, messages: list[dict[str, Any]]) -> Any:
    client = ServerClient("http://127.0.0.1:9")
    setattr(client, "setup", lambda: setup)  # noqa: B010 - no server: the setup is given
    return client.prepare(messages=messages, tools=[WEATHER])


@pytest.mark.parametrize("prepare", [_handler_prepare, _server_prepare], ids=["handler", "server"])
@pytest.mark.parametrize(
    ("messages", "says"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_history_is_refused_naming_message_and_field(
    prepare: Any, messages: list[dict[str, Any]], says: str
) -> None:
    setup = _setup(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"))
    with pytest.raises(ToolSpecError) as info:
        prepare(setup, messages)
    assert says in str(info.value)


# ---- rendered: every message reaches the prompt ----------------------------------------------

FUNCTION_HISTORY = [
    USER,
    _calls(_call()),
    {"role": "function", "name": "get_weather", "content": RESULT},
]


@pytest.mark.parametrize(
    "name",
    [
        "Qwen2.5-Coder-0.5B-Instruct.jinja",
        "Qwen-Qwen2.5-7B-Instruct.jinja",
        "SmolLM2-135M-Instruct.jinja",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
    ],
)
def test_a_function_result_reaches_the_prompt_as_a_tool_result(name: str) -> None:
    source = read_template(name)
    spec = detect_dialect(source)
    prompt = render_prompt(source, spec, FUNCTION_HISTORY, tools=[WEATHER])
    assert RESULT in prompt
    as_tool = [*FUNCTION_HISTORY[:2], {"role": "tool", "tool_call_id": "call_1", "content": RESULT}]
    assert prompt == render_prompt(source, spec, as_tool, tools=[WEATHER])


def test_prepare_request_renders_the_bound_function_result() -> None:
    setup = _setup(read_template("Qwen2.5-Coder-0.5B-Instruct.jinja"))
    request = _handler_prepare(setup, FUNCTION_HISTORY)
    assert "<tool_response>\n" + RESULT in request.prompt


WIZARD = {"role": "wizard", "content": "Cast a spell on the forecast."}


@pytest.mark.parametrize(
    "name",
    [
        "Qwen2.5-Coder-0.5B-Instruct.jinja",
        "Qwen-Qwen3-0.6B.jinja",
        "deepseek-ai-DeepSeek-V3.1.jinja",
        "openai-gpt-oss-120b.jinja",
        "microsoft-Phi-3.5-mini-instruct.jinja",  # polyfilled
    ],
)
def test_a_role_the_template_does_not_render_is_refused_naming_the_message(name: str) -> None:
    source = read_template(name)
    with pytest.raises(ToolSpecError, match=r"messages\[1\] \(role 'wizard'\) does not reach"):
        render_prompt(source, detect_dialect(source), [USER, WIZARD], tools=[WEATHER])


REFUSED_BEFORE_DECODING = [
    ("lost-role", [USER, WIZARD], r"messages\[1\] \(role 'wizard'\) does not reach"),
    *[
        (c[0], c[1], re.escape(c[2]))
        for c in MALFORMED
        if c[0] in ("args-not-json", "result-without-call", "unknown-id")
    ],
]


@pytest.mark.parametrize(
    ("messages", "says"),
    [c[1:] for c in REFUSED_BEFORE_DECODING],
    ids=[c[0] for c in REFUSED_BEFORE_DECODING],
)
@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize("engine", ["handler", "server"])
def test_a_refused_conversation_raises_before_anything_is_decoded(
    engine: str, stream: bool, messages: list[dict[str, Any]], says: str
) -> None:
    """A streamed request is refused by the call itself (not by a later ``next``), before the
    engine ran: the caller never holds a stream that breaks off."""
    source = read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")  # renders no 'wizard' turn
    if engine == "handler":
        handler, llama, fake = fake_handler(source, ["never sent"])
        with pytest.raises(ToolSpecError, match=says):
            handler(llama=llama, messages=messages, tools=[WEATHER], stream=stream)
        assert fake.jobs == []
        return
    with FakeServer(template=source) as srv:
        client = ServerClient(srv.url)
        with pytest.raises(ToolSpecError, match=says):
            client.create_chat_completion(messages=messages, tools=[WEATHER], stream=stream)
        assert srv.requests == []  # no /completion went out


@pytest.mark.parametrize(
    ("name", "turn"),
    [
        ("SmolLM2-135M-Instruct.jinja", "<|im_start|>wizard\nCast a spell"),
        ("meta-llama-Llama-3.1-8B-Instruct.jinja", "<|start_header_id|>wizard<|end_header_id|>"),
    ],
)
def test_a_role_the_template_renders_is_kept(name: str, turn: str) -> None:
    source = read_template(name)  # both print any role as a turn of that name
    prompt = render_prompt(source, detect_dialect(source), [USER, WIZARD], tools=[WEATHER])
    assert turn in prompt


def test_text_the_template_rewrites_is_not_mistaken_for_a_loss() -> None:
    source = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content | upper }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    prompt = render_prompt(source, get_builtin("polyfill-json"), [USER])
    assert USER["content"].upper() in prompt


# ---- system turns folded ----------------------------------------------------------------------

RAISES_ON_SYSTEM = (
    "{% for m in messages %}{% if m.role == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>\n{{ c.function | tojson }}\n"
    "</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DROPS_SYSTEM_WITH_TOOLS = RAISES_ON_SYSTEM.replace(
    "{{ raise_exception('System role not supported') }}{% endif %}",
    "{% endif %}{% if m.role != 'system' or not tools %}",
).replace("<|im_end|>\n{% endfor %}", "<|im_end|>\n{% endif %}{% endfor %}")


@pytest.mark.parametrize(
    ("source", "spec"),
    [
        (RAISES_ON_SYSTEM, "hermes"),
        (RAISES_ON_SYSTEM, "polyfill-json"),
        (DROPS_SYSTEM_WITH_TOOLS, "hermes"),
        (read_template("google-gemma-2-2b-it.jinja"), None),
    ],
    ids=["raises-native", "raises-polyfill", "drops-with-tools", "gemma2"],
)
@pytest.mark.parametrize("role", ["system", "developer"])
def test_system_turns_are_folded_into_the_first_user_turn(
    source: str, spec: Any, role: str
) -> None:
    dialect = get_builtin(spec) if spec else detect_dialect(source)
    messages = [{"role": role, "content": SYSTEM["content"]}, USER]
    prompt = render_prompt(source, dialect, messages, tools=[WEATHER])
    assert SYSTEM["content"] in prompt and USER["content"] in prompt
    assert prompt.index(SYSTEM["content"]) < prompt.index(USER["content"])
    if role == "system":  # a template may render developer turns as they are (drops-with-tools)
        assert f"<|im_start|>{role}" not in prompt


# ---- with a model -----------------------------------------------------------------------------


@pytest.mark.model
def test_qwen_answers_a_legacy_function_result_it_can_see(qwen_path: Any) -> None:
    """The result Qwen2.5's template used to drop is in the prompt the model decodes, and the
    reply ends at the template's end-of-turn marker, which never reaches content."""
    from llama_cpp import Llama

    handler = ToolChatHandler()
    llm: Any = Llama(str(qwen_path), n_threads=2, n_ctx=2048, verbose=False, chat_handler=handler)
    history = [
        {"role": "system", "content": "Answer in one short sentence."},
        *FUNCTION_HISTORY,
    ]
    assert RESULT in handler.prepare(llama=llm, messages=history, tools=[WEATHER]).prompt
    reply: Any = llm.create_chat_completion(
        messages=history, tools=[WEATHER], temperature=0.0, max_tokens=48
    )
    message = reply["choices"][0]["message"]
    assert "<|im_end|>" not in (message.get("content") or "")
    prepared = handler.prepare(llama=llm, messages=history, tools=[WEATHER])
    job = handler.frontend.generation_request(prepared, sampling=SamplingParams())
    assert "<|im_end|>" in job.stop


@pytest.mark.parametrize(
    ("name", "turn"),
    [
        # no branch for developer: it becomes the system turn (replacing the default one)
        (
            "Qwen2.5-Coder-0.5B-Instruct.jinja",
            "<|im_start|>system\nAnswer like a pirate.<|im_end|>",
        ),
        # developer is a role of its own there: kept as the template renders it
        ("openai-gpt-oss-120b.jinja", "<|start|>developer<|message|># Instructions\n\nAnswer like"),
    ],
)
def test_a_developer_turn_reaches_the_prompt(name: str, turn: str) -> None:
    source = read_template(name)
    messages = [{"role": "developer", "content": SYSTEM["content"]}, USER]
    assert turn in render_prompt(source, detect_dialect(source), messages)
