"""``tooldialect serve`` never answers 5xx for a client's mistake (issue 29 section 1).

llama-cpp-python's real app (routes, pydantic models, SSE, error route) behind the layer, with
``/v1/responses`` and ``/v1/messages`` mounted, its one model a scripted ``FakeLlama`` whose chat
handler is the served ``ToolChatHandler``: no GGUF. Every bad request is a 4xx with OpenAI's error
object naming the field (Anthropic's on ``/v1/messages``), on the three endpoints, streamed or
not, and no body names a path of the server. bench/serve_bad_requests.py sends the same list to
a real ``tooldialect serve``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serve_app import MODEL_PATH, post, served_app
from tool_defs import REF_CYCLE
from tooldialect.apps.serve import INSTALL_HINT

pytestmark = pytest.mark.filterwarnings(
    "ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"
)

USER = {"role": "user", "content": "hi"}
NAMELESS = {"type": "function", "function": {"parameters": {"type": "object"}}}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
RESPONSES_CYCLE = {"type": "function", **REF_CYCLE["function"]}
CYCLE_SCHEMA = REF_CYCLE["function"]["parameters"]


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Any:
    return served_app(monkeypatch, ["Sunny", " in Oslo."])


def chat(**fields: Any) -> bytes:
    return json.dumps({"messages": [USER], **fields}).encode()


def responses(**fields: Any) -> bytes:
    return json.dumps({"input": "hi", **fields}).encode()


def messages(**fields: Any) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 8, "messages": [USER], **fields}).encode()


CHAT_BAD: list[tuple[str, bytes, str | None]] = [
    ("nameless-tool", chat(tools=[NAMELESS]), "tools"),
    ("ref-cycle", chat(tools=[REF_CYCLE]), "tools"),
    ("not-json", b'{"messages": [', None),
    ("not-utf8", b'{"messages": [{"role": "user", "content": "\xff"}]}', None),
    ("surrogate", chat(messages=[{"role": "user", "content": "\udcff"}]), "messages"),
    ("max-tokens-negative", chat(max_tokens=-5), "max_tokens"),
    ("max-tokens-zero", chat(max_tokens=0), "max_tokens"),
    ("temperature-negative", chat(temperature=-1), "temperature"),
    (
        "temperature-nan",
        b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
        "temperature",
    ),
    ("top-p", chat(top_p=5), "top_p"),
    ("tool-choise", chat(tool_choise="required"), "tool_choise"),
    ("temprature", chat(temprature=0.5), "temprature"),
    ("paralel", chat(paralel_tool_calls=False), "paralel_tool_calls"),
    # the Responses API's form: /v1/responses translates it, Chat Completions has none
    (
        "responses-choice",
        chat(tools=[TOOL], tool_choice={"type": "function", "name": "f"}),
        "tool_choice",
    ),
    ("unknown-choice", chat(tools=[TOOL], tool_choice="g"), "tool_choice"),
]

RESPONSES_BAD: list[tuple[str, bytes, str | None]] = [
    ("nameless-tool", responses(tools=[{"type": "function", "parameters": {}}]), "tools"),
    ("ref-cycle", responses(tools=[RESPONSES_CYCLE]), "tools"),
    ("not-json", b'{"input": ', None),
    ("not-utf8", b'{"input": "\xff"}', None),
    ("surrogate", responses(input="\udcff"), "input"),
    ("max-output-tokens", responses(max_output_tokens=-3), "max_output_tokens"),
    ("max-output-tokens-zero", responses(max_output_tokens=0), "max_output_tokens"),
    ("temperature-negative", responses(temperature=-1), "temperature"),
    ("temperature-nan", b'{"input": "hi", "temperature": NaN}', "temperature"),
    ("top-p", responses(top_p=5), "top_p"),
    ("tool-choise", responses(tool_choise="required"), "tool_choise"),
    ("temprature", responses(temprature=0.5), "temprature"),
]

MESSAGES_BAD: list[tuple[str, bytes, str | None]] = [
    ("nameless-tool", messages(tools=[{"input_schema": {"type": "object"}}]), "tools"),
    ("ref-cycle", messages(tools=[{"name": "loop", "input_schema": CYCLE_SCHEMA}]), "tools"),
    ("not-json", b'{"messages": [', None),
    ("not-utf8", b'{"max_tokens": 8, "messages": [{"role": "user", "content": "\xff"}]}', None),
    ("surrogate", messages(messages=[{"role": "user", "content": "\udcff"}]), "messages"),
    ("max-tokens-negative", messages(max_tokens=-5), "max_tokens"),
    ("max-tokens-zero", messages(max_tokens=0), "max_tokens"),
    ("temperature-negative", messages(temperature=-1), "temperature"),
    ("temperature-nan", messages(temperature=float("nan")), "temperature"),
    ("top-p", messages(top_p=5), "top_p"),
    ("tool-choise", messages(tool_choise={"type": "auto"}), "tool_choise"),
    ("temprature", messages(temprature=0.5), "temprature"),
    ("paralel", messages(paralel_tool_calls=False), "paralel_tool_calls"),
]

NEAREST = {
    "tool_choise": "tool_choice",
    "temprature": "temperature",
    "paralel_tool_calls": "parallel_tool_calls",
}


def with_stream(raw: bytes, stream: bool) -> bytes:
    """``raw`` with ``"stream": stream`` added where it is a JSON object (else as it is)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw
    if not stream or not isinstance(body, dict):
        return raw
    return raw.rstrip()[:-1] + b', "stream": true}'


def check_refusal(status: int, raw: bytes, param: str | None) -> dict[str, Any]:
    assert 400 <= status < 500, raw[:300]
    error = json.loads(raw)["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] == param, error
    text = raw.decode()
    assert "site-packages" not in text and 'File "' not in text and "/srv/" not in text
    if param in NEAREST:
        assert repr(NEAREST[param]) in error["message"], error["message"]
    return dict(error)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize(("raw", "param"), [c[1:] for c in CHAT_BAD], ids=[c[0] for c in CHAT_BAD])
def test_chat_bad_request_is_a_4xx_naming_the_field(
    app: Any, raw: bytes, param: str | None, stream: bool
) -> None:
    status, body = post(app, with_stream(raw, stream))
    check_refusal(status, body, param)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize(
    ("raw", "param"), [c[1:] for c in RESPONSES_BAD], ids=[c[0] for c in RESPONSES_BAD]
)
def test_responses_bad_request_is_a_4xx_naming_the_field(
    app: Any, raw: bytes, param: str | None, stream: bool
) -> None:
    status, body = post(app, with_stream(raw, stream), path="/v1/responses")
    check_refusal(status, body, param)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize(
    ("raw", "param"), [c[1:] for c in MESSAGES_BAD], ids=[c[0] for c in MESSAGES_BAD]
)
def test_messages_bad_request_is_a_4xx_naming_the_field(
    app: Any, raw: bytes, param: str | None, stream: bool
) -> None:
    status, body = post(app, with_stream(raw, stream), path="/v1/messages")
    assert 400 <= status < 500, body[:300]
    parsed = json.loads(body)
    assert parsed["type"] == "error" and parsed["error"]["type"] == "invalid_request_error"
    message = parsed["error"]["message"]
    if param is not None:
        assert message.startswith(param) or f"'{param}'" in message, message
    assert "site-packages" not in body.decode() and "/srv/" not in body.decode()


def test_a_refused_request_is_one_log_line(
    app: Any, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tooldialect")
    sent = [
        ("/v1/chat/completions", chat(tools=[REF_CYCLE])),
        ("/v1/chat/completions", chat(tools=[NAMELESS])),
        ("/v1/chat/completions", chat(max_tokens=-5)),
        ("/v1/responses", responses(temprature=1)),
        ("/v1/messages", messages(top_p=5)),
        ("/v1/messages", messages(tools=[{"name": "loop", "input_schema": CYCLE_SCHEMA}])),
    ]
    for path, raw in sent:
        status, _ = post(app, raw, path=path)
        assert status == 400
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == len(sent)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_a_reply_names_the_model_by_file_name_not_path(app: Any, path: str) -> None:
    raw = chat() if path.endswith("completions") else responses()
    status, body = post(app, raw, path=path)
    assert status == 200, body
    assert json.loads(body)["model"] == "fake-model.gguf"


def test_serve_names_a_model_by_its_file_name_unless_given_an_alias() -> None:
    pytest.importorskip("llama_cpp.server.settings", reason=INSTALL_HINT)
    from tooldialect.apps.serve import build_parser, read_settings

    def alias(*argv: str) -> str | None:
        _, models = read_settings(build_parser().parse_args(["--model", MODEL_PATH, *argv]))
        name: str | None = models[0].model_alias  # what /v1/models lists as the model's id
        return name

    assert alias() == "fake-model.gguf"
    assert alias("--model_alias", "qwen") == "qwen"


def test_good_requests_still_answer_200(app: Any) -> None:
    status, body = post(app, chat(temperature=0, top_p=1, max_tokens=8, parallel_tool_calls=True))
    assert (
        status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "Sunny in Oslo."
    )
    status, body = post(app, responses(max_output_tokens=8, temperature=0.5), path="/v1/responses")
    assert status == 200, body


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = st.sampled_from(
    [
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stream",
        "response_format",
        "stop",
        "input",
        "max_output_tokens",
        "text",
        "parallel_tool_calls",
        "logit_bias",
        "seed",
        "tool_choise",
    ]
)
BODIES = st.one_of(
    st.dictionaries(FIELDS, JSON, max_size=4).map(lambda d: json.dumps(d).encode()),
    st.fixed_dictionaries(
        {"messages": st.just([USER])},
        optional={k: JSON for k in ("tools", "tool_choice", "max_tokens", "top_p")},
    ).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=40),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=BODIES, path=st.sampled_from(["/v1/chat/completions", "/v1/responses"]))
def test_fuzzed_bodies_never_get_a_5xx(app: Any, raw: bytes, path: str) -> None:
    status, body = post(app, raw, path=path)
    assert status < 500, body[:400]
    if status >= 400:
        error = json.loads(body)["error"]
        assert "site-packages" not in json.dumps(error)
