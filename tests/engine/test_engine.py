"""The engine: parity with create_completion, KV reuse, special/long tokens, stops, grammars."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tooldialect.engine.base import SamplingParams
from tooldialect.engine.in_process.generate import LlamaDecoder, decoder_for
from tooldialect.engine.text import find_stop, safe_emit
from tooldialect.errors import ContextOverflowError, GrammarError
from tooldialect.grammar.build import word_pattern

GREEDY = SamplingParams(temperature=0)
PROMPT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nTell me a short story about a dragon.<|im_end|>\n<|im_start|>assistant\n"
)


@dataclass(frozen=True)
class Grammar:
    gbnf: str
    root: str = "root"
    lazy: bool = False
    trigger_words: tuple[str, ...] = ()
    trigger_patterns: tuple[str, ...] = ()


# ---- pure helpers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word",
    ["<tool_call>", "[TOOL_CALLS]", "a.b*c", "x\n{", "functools["],
    ids=["tag", "brackets", "dot-star", "newline-brace", "functools"],
)
def test_word_pattern_is_full_match_with_group_at_word(word: str) -> None:
    import re

    pattern = word_pattern(word)
    m = re.fullmatch(pattern, "hello " + word + ' {"name": 1}')
    assert m is not None and m.start(1) == len("hello ")
    assert re.fullmatch(pattern, "hello " + word[:-1]) is None  # regex characters are literal


@pytest.mark.parametrize(
    ("pending", "stops", "expected"),
    [("hello wor", ["world"], 6), ("hello", ["xyz"], 5), ("ab<|", ["<|eom|>"], 2), ("", ["a"], 0)],
    ids=["partial-word", "no-overlap", "partial-marker", "empty"],
)
def test_safe_emit_holds_back_stop_prefixes(pending: str, stops: list[str], expected: int) -> None:
    assert safe_emit(pending, stops, max(len(s) for s in stops) - 1) == expected


def test_find_stop_takes_earliest() -> None:
    assert find_stop("a STOP b END", ["END", "STOP"]) == (2, "STOP")
    assert find_stop("nothing", ["END"]) is None


# ---- on a model -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> Iterator[Any]:
    from llama_cpp import Llama

    llm = Llama(str(qwen_path), n_threads=2, n_ctx=1024, verbose=False)
    yield llm
    llm.close()


@pytest.fixture
def engine(qwen: Any) -> LlamaDecoder:
    return decoder_for(qwen)


@pytest.mark.model
def test_matches_create_completion_and_reuses_kv(qwen: Any, engine: LlamaDecoder) -> None:
    expected = qwen.create_completion(PROMPT, temperature=0, max_tokens=24)
    gen = engine.generate(PROMPT, sampling=GREEDY, max_tokens=24)
    text = gen.text()
    assert text == expected["choices"][0]["text"]
    assert gen.result.completion_tokens == expected["usage"]["completion_tokens"] == 24
    assert gen.result.prompt_tokens == expected["usage"]["prompt_tokens"]
    assert gen.result.finish_reason == "length"
    # the prompt was cached by create_completion: only one token is decoded again
    assert gen.result.last_prompt_eval_tokens == 1
    # and create_completion after us still agrees (bookkeeping left consistent)
    again = qwen.create_completion(PROMPT, temperature=0, max_tokens=24)
    assert again["choices"][0]["text"] == text


@pytest.mark.model
def test_special_and_long_tokens_are_visible(engine: LlamaDecoder, qwen: Any) -> None:
    (im_end,) = qwen.tokenize(b"<|im_end|>", add_bos=False, special=True)
    assert engine.piece(im_end) == b"<|im_end|>"
    (spaces,) = qwen.tokenize(b" " * 128, add_bos=False, special=True)
    assert engine.piece(spaces) == b" " * 128  # llama-cpp-python's 32-byte buffer gives b""


@pytest.mark.model
def test_trigger_words_become_tokens_when_one_token(engine: LlamaDecoder) -> None:
    from tooldialect.frontend.pipeline import resolve_triggers

    g = Grammar(gbnf='root ::= "x"', lazy=True, trigger_words=("<tool_call>", "functools["))
    tokens, patterns = engine.trigger_arguments(g, resolve_triggers(g))  # as the front end does
    assert tokens == [151657]
    assert patterns == [word_pattern("functools[")]


@pytest.mark.model
def test_stop_string_cuts_text(engine: LlamaDecoder) -> None:
    full = engine.generate(PROMPT, sampling=GREEDY, max_tokens=30).text()
    word = full.split()[3]
    gen = engine.generate(PROMPT, sampling=GREEDY, max_tokens=30, stop=[word])
    pieces = list(gen)
    assert "".join(pieces) == gen.result.text == full[: full.index(word)]
    assert gen.result.finish_reason == "stop" and gen.result.stopped_by == word


@pytest.mark.model
@pytest.mark.parametrize(
    ("gbnf", "allowed"),
    [('root ::= "yes" | "no"', {"yes", "no"}), ('root ::= "🙂日本"', {"🙂日本"})],
    ids=["choice", "multibyte"],
)
def test_forced_grammar_constrains(engine: LlamaDecoder, gbnf: str, allowed: set[str]) -> None:
    gen = engine.generate(PROMPT, sampling=GREEDY, max_tokens=20, grammar=Grammar(gbnf=gbnf))
    assert gen.text() in allowed
    assert gen.result.finish_reason == "stop"  # the grammar ended, so only EOG was left
    assert gen.result.stats.grammar_resamples >= 1


@pytest.mark.model
def test_lazy_grammar_constrains_after_trigger(engine: LlamaDecoder) -> None:
    # the story mentions "dragon"; once " dragon" is written the grammar forces "!!" and the end
    g = Grammar(gbnf='root ::= " dragon!!"', lazy=True, trigger_patterns=(word_pattern(" dragon"),))
    text = engine.generate(PROMPT, sampling=GREEDY, max_tokens=60, grammar=g).text()
    assert text.endswith(" dragon!!")
    assert text.count(" dragon") == 1


@pytest.mark.model
def test_penalties_and_sampling_run(engine: LlamaDecoder) -> None:
    params = SamplingParams(temperature=0.8, repeat_penalty=1.3, seed=7, logit_bias={0: -5.0})
    one = engine.generate(
        PROMPT, sampling=params, max_tokens=12, grammar=Grammar(gbnf="root ::= [a-zA-Z ]+")
    ).text()
    two = engine.generate(
        PROMPT, sampling=params, max_tokens=12, grammar=Grammar(gbnf="root ::= [a-zA-Z ]+")
    ).text()
    assert one == two  # same seed, same text
    assert one and all(c.isalpha() or c == " " for c in one)


@pytest.mark.model
def test_errors_leave_the_process_running(engine: LlamaDecoder, qwen: Any) -> None:
    with pytest.raises(GrammarError):
        engine.generate(PROMPT, grammar=Grammar(gbnf="root ::= undefined-rule"))
    with pytest.raises(GrammarError):
        engine.generate(PROMPT, grammar=Grammar(gbnf='root ::= "a"', lazy=True))
    with pytest.raises(ContextOverflowError, match="n_ctx"):
        engine.generate("word " * 2000)
    assert engine.generate(PROMPT, sampling=GREEDY, max_tokens=3).result.prompt_tokens > 0
    assert len(engine.generate(PROMPT, sampling=GREEDY, max_tokens=3).text()) > 0


@pytest.mark.model
def test_triggers_the_front_end_resolved_become_tokens_or_patterns(engine: LlamaDecoder) -> None:
    from tooldialect.engine.base import Triggers

    words = ("<tool_call>", "[[call]]")  # one token in Qwen's vocab, and several
    triggers = Triggers(
        words=words, word_patterns=tuple(word_pattern(w) for w in words), patterns=("^x(y)",)
    )
    g = Grammar(gbnf='root ::= "y"', lazy=True, trigger_words=words)
    tokens, patterns = engine.trigger_arguments(g, triggers)
    assert len(tokens) == 1 and engine.piece(tokens[0]) == b"<tool_call>"
    assert patterns == ["^x(y)", word_pattern("[[call]]")]
    with pytest.raises(GrammarError, match=r"\[\[call\]\]"):
        engine.trigger_arguments(g)  # the grammar's own words: no pattern for the long one
