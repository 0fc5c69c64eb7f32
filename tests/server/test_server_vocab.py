"""The model's vocabulary as evidence on the server engine (``engine.llama_server.vocab``),
against scripted servers whose tokenizer splits special tokens out first, as llama.cpp's does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tool_defs import WEATHER_BARE as WEATHER
from tooldialect import ServerClient
from tooldialect.dialect.spec import CallFormat, DialectSpec, JsonBody
from tooldialect.dialect.vocabulary import Vocabulary, marker_candidates
from tooldialect.engine.base import SamplingParams
from tooldialect.engine.llama_server import LlamaServer
from tooldialect.engine.llama_server.llama_server_engine import completion_body
from tooldialect.engine.llama_server.vocab import probe_vocabulary, server_vocabulary
from tooldialect.verify import detect_dialect

from .fake import FakeServer

# a template that handles tools but carries no builtin's signature and never renders a call
TOOLS_TEMPLATE = (
    "{% if tools %}<|sys|>Tools: {{ tools | tojson }}<|end|>{% endif %}"
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def test_marker_candidates_hold_the_templates_markers_first_and_the_builtins() -> None:
    found = marker_candidates("{{ '<|sys|>' }}x<my_call>y[ACT]z</my_call><b")
    assert found[:4] == ["<|sys|>", "<my_call>", "[ACT]", "</my_call>"]
    assert {"<tool_call>", "<|tool_call_start|>", "<think>", "</think>"} <= set(found)
    assert "<b" not in found and len(found) == len(set(found))


def test_the_probe_finds_exactly_the_candidates_that_are_one_special_token() -> None:
    special = {"<|sys|>": True, "<|end|>": True, "<think>": False, "</think>": False, "<x>": True}
    with FakeServer(template=TOOLS_TEMPLATE, special=special) as server:
        vocab = probe_vocabulary(server.url, TOOLS_TEMPLATE)
    # "<x>" is special but no candidate: nothing asks for it
    assert vocab.special == {"<|sys|>", "<|end|>", "<think>", "</think>"}
    assert vocab.byte_level  # every character round-trips


def test_a_vocabulary_without_byte_tokens_is_seen_as_one() -> None:
    known = "".join(sorted(set(TOOLS_TEMPLATE))) + "abc"
    with FakeServer(template=TOOLS_TEMPLATE, special={"<|end|>": True}, known_chars=known) as s:
        vocab = probe_vocabulary(s.url, TOOLS_TEMPLATE)
    assert not vocab.byte_level
    assert vocab.spellable("<|end|>{%") and not vocab.spellable("☃")


def _client_spec(server: FakeServer, **options: Any) -> DialectSpec:
    return ServerClient(server.url, **options).setup().spec


def test_a_special_token_opener_hints_the_wire_format_as_in_process() -> None:
    special = {"<|tool_call_start|>": True, "<|tool_call_end|>": True, "<|end|>": True}
    with FakeServer(template=TOOLS_TEMPLATE, special=special) as server:
        spec = _client_spec(server)
    without = detect_dialect(TOOLS_TEMPLATE)
    in_process = detect_dialect(TOOLS_TEMPLATE, vocabulary=Vocabulary(frozenset(special)))
    assert spec == in_process and spec.id != without.id  # the vocabulary changed the answer
    assert "<|tool_call_start|>" in spec.primary.opener()


def test_reasoning_the_template_never_shows_comes_from_the_servers_tokens() -> None:
    with FakeServer(template=TOOLS_TEMPLATE, special={"<think>": False, "</think>": False}) as s:
        spec = _client_spec(s)
    assert spec.reasoning is not None
    assert (spec.reasoning.open, spec.reasoning.close) == ("<think>", "</think>")
    with FakeServer(template=TOOLS_TEMPLATE) as plain:
        assert _client_spec(plain).reasoning is None


def test_a_special_token_inside_a_marker_is_preserved_in_the_servers_output() -> None:
    """The opener ``<|act|>[`` is no single token, so the server would not preserve it: the
    special token it starts with must be, or the server drops it from the reply text."""
    spec = DialectSpec(
        id="act",
        origin="user",
        formats=[CallFormat(call_open="<|act|>[", call_close="]", body=JsonBody())],
    )
    with FakeServer(template=TOOLS_TEMPLATE, special={"<|act|>": True}) as server:
        client = ServerClient(server.url, dialect=spec)
        request = client.frontend.generation_request(
            client.prepare(messages=ASK, tools=[WEATHER]),
            sampling=SamplingParams(),
        )
    assert client.setup().vocabulary is not None
    assert "<|act|>" in completion_body(request)["preserved_tokens"]


def test_trigger_words_the_vocabulary_cannot_spell_become_its_special_token() -> None:
    """A vocabulary without byte tokens and without ``[``: the hinted builtin's trigger word
    ``<|tool_call_start|>[`` cannot be written, so the trigger is the special token alone."""
    special = {"<|tool_call_start|>": True, "<|tool_call_end|>": True}
    known = "".join(sorted(set(TOOLS_TEMPLATE) - {"["})) + "abcdefghijklmnopqrstuvwxyz"
    with FakeServer(template=TOOLS_TEMPLATE, special=special, known_chars=known) as s:
        client = ServerClient(s.url)
        spec = client.setup().spec
    vocab = client.setup().vocabulary
    assert (
        vocab is not None and not vocab.byte_level and not vocab.spellable("<|tool_call_start|>[")
    )
    assert "<|tool_call_start|>[" in spec.primary.opener()
    assert [t.value for t in spec.primary.effective_triggers()] == ["<|tool_call_start|>"]
    # the in-process reading of the same tokens gives the same spec
    in_process = Vocabulary.from_tokens(list(known), special=special, byte_level=False)
    assert detect_dialect(TOOLS_TEMPLATE, vocabulary=in_process) == spec


def test_a_server_we_launched_is_read_from_its_gguf(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    read: list[str] = []

    def from_gguf(path: str) -> Vocabulary:
        read.append(str(path))
        return Vocabulary(frozenset({"<|tool_call_start|>"}))

    monkeypatch.setattr(Vocabulary, "from_gguf", staticmethod(from_gguf))
    with FakeServer(template=TOOLS_TEMPLATE, model="/elsewhere/m.gguf") as server:
        port = int(server.url.rsplit(":", 1)[1])
        launched = LlamaServer(gguf, binary="/bin/true", port=port)
        client = ServerClient(launched)
        spec = client.setup().spec
    assert read == [str(gguf)]  # the file, not the probe (this server has no special tokens)
    assert client.setup().vocabulary == Vocabulary(frozenset({"<|tool_call_start|>"}))
    assert "<|tool_call_start|>" in spec.primary.opener()


def test_a_gguf_on_this_machine_is_used_only_when_the_server_agrees(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    file_vocab = Vocabulary(frozenset({"<|a|>", "<|b|>"}))
    monkeypatch.setattr(Vocabulary, "from_gguf", staticmethod(lambda p: file_vocab))
    with FakeServer(template=TOOLS_TEMPLATE, model=str(gguf), special={"<|a|>": True}) as s:
        props = {"model_path": str(gguf)}
        # the server writes <|b|> as several tokens: another model's file, so the server is asked
        probed = server_vocabulary(s.url, props, TOOLS_TEMPLATE)
    assert probed is not None and probed != file_vocab
    with FakeServer(template=TOOLS_TEMPLATE, special={"<|a|>": True, "<|b|>": True}) as s:
        assert server_vocabulary(s.url, {"model_path": str(gguf)}, TOOLS_TEMPLATE) == file_vocab


def _garbage(text: str, parse_special: bool) -> Any:
    return [1]  # ids without pieces


def test_a_server_that_cannot_tokenize_gives_no_vocabulary_and_detection_goes_on() -> None:
    assert server_vocabulary("http://127.0.0.1:9", {}, TOOLS_TEMPLATE, timeout=0.5) is None
    with FakeServer(template=TOOLS_TEMPLATE, special={"<|tool_call_start|>": True}) as server:
        server.tokenize = _garbage  # type: ignore[method-assign]
        client = ServerClient(server.url)
        assert client.setup().vocabulary is None
        assert client.setup().spec == detect_dialect(TOOLS_TEMPLATE)
