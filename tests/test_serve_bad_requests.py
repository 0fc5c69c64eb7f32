"""``tooldialect serve`` never answers 5xx for a client's mistake (issue 29 section 1).

llama-cpp-python's real app (routes, pydantic models, SSE, error route) behind the layer, with
``/v1/responses`` mounted, its one model a scripted ``FakeLlama`` whose chat handler is the served
``ToolChatHandler``: no GGUF. Every bad request is a 4xx with OpenAI's error object naming the
field, on both endpoints, streamed or not, and no body names a path of the server.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serve_app import post, served_app
from tool_defs import REF_CYCLE

pytestmark = pytest.mark.filterwarnings(
    "ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"
)

USER = {"role": "user", "content": "hi"}
NAMELESS = {"type": "function", "function": {"parameters": {"type": "object"}}}
RESPONSES_CYCLE = {"type": "function", **REF_CYCLE["function"]}


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Any:
    return served_app(monkeypatch, ["Sunny", " in Oslo."])


def chat(**fields: Any) -> bytes:
    return json.dumps({"messages": [USER], **fields}).encode()


def responses(**fields: Any) -> bytes:
    return json.dumps({"input": "hi", **fields}).encode()


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


def test_a_refused_request_is_one_log_line(
    app: Any, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tooldialect")
    for raw in (chat(tools=[REF_CYCLE]), chat(tools=[NAMELESS]), chat(max_tokens=-5)):
        status, _ = post(app, raw)
        assert status == 400
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 3


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_a_reply_names_the_model_by_file_name_not_path(app: Any, path: str) -> None:
    raw = chat() if path.endswith("completions") else responses()
    status, body = post(app, raw, path=path)
    assert status == 200, body
    assert json.loads(body)["model"] == "fake-model.gguf"


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
