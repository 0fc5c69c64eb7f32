"""The model's vocabulary as detection evidence (``dialect.vocabulary``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import model_path
from tooldialect.dialect.builtins import get_builtin
from tooldialect.dialect.spec import CallFormat, DialectSpec, JsonBody, ReasoningMarkers
from tooldialect.dialect.vocabulary import Vocabulary, fit_to_vocabulary, hinted_builtins
from tooldialect.parse import parse_output
from tooldialect.verify import detect_dialect, explain_detection

FIXTURES = Path(__file__).parent.parent / "fixtures" / "templates"

PLAIN_WORDS = ["a", "b", "c", "<", ">", "|", "/", "_", "t", "o", "l", "k", "n", "s"]


def _spec(opener: str) -> DialectSpec:
    return DialectSpec(
        id="x", origin="user", formats=[CallFormat(call_open=opener, call_close="</x>")]
    )


def test_special_tokens_and_spelling() -> None:
    vocab = Vocabulary.from_tokens(PLAIN_WORDS, special=["<|act|>", "<think>", "</think>"])
    assert not vocab.byte_level  # no byte tokens, no byte-level pieces
    assert vocab.has_special("<|act|>") and vocab.has_special(" <|act|>\n")
    assert vocab.spellable("<|act|>") and vocab.spellable("<tool>")
    assert not vocab.spellable("<ÿ>")  # a character no token holds
    assert Vocabulary.from_tokens(["Ġthe", "a"]).byte_level


def test_unspellable_trigger_words_become_the_special_token_they_start_with() -> None:
    vocab = Vocabulary.from_tokens(PLAIN_WORDS, special=["<|act|>"])
    fitted = fit_to_vocabulary(_spec("<|act|>☃"), vocab)
    assert [t.value for t in fitted.primary.effective_triggers()] == ["<|act|>"]
    # spellable openers are left alone
    assert fit_to_vocabulary(_spec("<tool>"), vocab) == _spec("<tool>")


def test_reasoning_the_template_never_shows_comes_from_special_tokens() -> None:
    vocab = Vocabulary.from_tokens(PLAIN_WORDS, special=["<|think|>", "<|/think|>"])
    fitted = fit_to_vocabulary(_spec("<tool>"), vocab)
    assert fitted.reasoning == ReasoningMarkers(open="<|think|>", close="<|/think|>")
    out = parse_output(
        '<|think|>maybe <tool>{"name": "f", "arguments": {}}</x><|/think|>ok', fitted
    )
    assert out.tool_calls == [] and out.reasoning_content is not None  # a quoted call never runs
    # a spec with reasoning of its own keeps it
    own = _spec("<tool>").model_copy(update={"reasoning": ReasoningMarkers()})
    assert fit_to_vocabulary(own, vocab).reasoning == ReasoningMarkers()


def test_a_special_token_opener_hints_a_builtin_for_a_template_that_handles_tools() -> None:
    vocab = Vocabulary.from_tokens(PLAIN_WORDS, special=["<|tool_call_start|>"])
    assert hinted_builtins(vocab, "{% for t in tools %}{{ t }}{% endfor %}")[:1] == ["lfm2"]
    assert hinted_builtins(vocab, "{{ messages }}") == []  # no tools: the polyfill stays


def test_template_only_detection_is_unchanged_without_a_vocabulary() -> None:
    """Without a vocabulary the template's own evidence decides: Qwen2.5's template renders
    hermes calls, so detection returns the hermes builtin, as before vocabularies existed."""
    source = (FIXTURES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")
    expected = get_builtin("hermes")
    assert detect_dialect(source) == expected
    assert detect_dialect(source, vocabulary=None) == expected


def test_vocabulary_decides_for_a_template_that_renders_no_call() -> None:
    """An invented tools template that only lists tools: its model's special tokens say lfm2."""
    source = (FIXTURES / "invented" / "instructions-only.jinja").read_text(encoding="utf-8")
    assert detect_dialect(source).family == "derived from the template's tool instructions"
    vocab = Vocabulary.from_tokens(
        PLAIN_WORDS, special=["<|tool_call_start|>", "<|tool_call_end|>"]
    )
    found = explain_detection(source, vocabulary=vocab)
    assert found.spec.id == "lfm2" and found.tried == "lfm2"


def test_from_gguf_reads_added_tokens() -> None:
    vocab = Vocabulary.from_gguf(model_path("qwen"))
    assert vocab.has_special("<tool_call>") and vocab.has_special("<|im_end|>")
    assert vocab.byte_level and vocab.spellable("<tool_call>\n")
    spec = fit_to_vocabulary(get_builtin("hermes"), vocab)
    assert spec.primary.effective_triggers() == get_builtin("hermes").primary.effective_triggers()


@pytest.mark.model
def test_from_llama_matches_from_gguf(smollm2_path: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    llama = llama_cpp.Llama(str(smollm2_path), vocab_only=True, verbose=False, n_threads=2)
    assert Vocabulary.from_llama(llama).special == Vocabulary.from_gguf(smollm2_path).special
    assert Vocabulary.of_llama(object()) is None


def test_json_body_spec_is_unchanged_by_a_vocabulary_without_markers() -> None:
    spec = DialectSpec(id="j", origin="user", formats=[CallFormat(body=JsonBody())])
    assert fit_to_vocabulary(spec, Vocabulary.from_tokens(PLAIN_WORDS)) == spec
