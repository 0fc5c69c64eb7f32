"""grammar_check against llama.cpp 0.3.36's sampler, and the lazy-sampler facts documented in
``grammar_check`` (full match, first non-empty group, abort on misfit)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

from conftest import model_path
from grammar_check import (
    grammar_accepts,
    lazy_grammar_accepts,
    validate_grammar,
    vocab_of,
)
from tooldialect.errors import GrammarError

G = 'root ::= "<tool_call>" [a-z]+ "</tool_call>"'


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)


@pytest.mark.model
def test_invalid_grammar_raises_instead_of_segfault(vocab_llama: Any) -> None:
    with pytest.raises(GrammarError, match="root ::= undefined-rule"):
        validate_grammar("root ::= undefined-rule", vocab=vocab_of(vocab_llama))


@pytest.mark.model
@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("<tool_call>abc</tool_call>", True),
        ("<tool_call>ab1</tool_call>", False),
        ("<tool_call>abc", False),
    ],
    ids=["complete", "bad-char", "unfinished"],
)
def test_grammar_accepts(vocab_llama: Any, text: str, ok: bool) -> None:
    assert grammar_accepts(G, text, llama=vocab_llama) is ok


@pytest.mark.model
@pytest.mark.parametrize(
    ("pattern", "text", "ok"),
    [
        # not a search: a bare group fires only if it matches the whole output so far
        ("(<tool_call>)", "hi <tool_call>abc</tool_call>", False),
        (r"^[\s\S]*?(<tool_call>)[\s\S]*", "hi <tool_call>abc</tool_call>", True),
        # the grammar starts at the first group that matched non-empty text
        (r"^[\s\S]*?(x)?(<tool_call>)[\s\S]*", "hi <tool_call>abc</tool_call>", True),
        # no group: the replay starts at the buffer start, which does not fit
        (r"^[\s\S]*?<tool_call>[\s\S]*", "hi <tool_call>abc</tool_call>", False),
        (r"^[\s\S]*?(<tool_call>)[\s\S]*", "no call here", False),
    ],
    ids=[
        "bare-group-is-full-match",
        "anywhere",
        "first-nonempty-group",
        "no-group-replays-all",
        "never-fires",
    ],
)
def test_lazy_pattern_semantics(vocab_llama: Any, pattern: str, text: str, ok: bool) -> None:
    assert lazy_grammar_accepts(G, text, llama=vocab_llama, trigger_patterns=[pattern]) is ok


@pytest.mark.model
def test_lazy_trigger_token_replays_only_its_text(vocab_llama: Any) -> None:
    tok = vocab_llama.tokenize(b"<|im_start|>", add_bos=False, special=True)
    assert len(tok) == 1
    g = 'root ::= "<|im_start|>" [a-z]+'
    assert lazy_grammar_accepts(
        g, "free text <|im_start|>abc", llama=vocab_llama, trigger_tokens=tok
    )
    assert not lazy_grammar_accepts(
        g, "free text <|im_start|>ab1", llama=vocab_llama, trigger_tokens=tok
    )


@pytest.mark.model
def test_misfitting_replay_aborts_the_process() -> None:
    """Why lazy_grammar_accepts pre-checks replays: the raw sampler kills the interpreter."""
    path = model_path("smollm2")
    code = textwrap.dedent(f"""
        import ctypes, llama_cpp
        llm = llama_cpp.Llama({str(path)!r}, vocab_only=True, verbose=False)
        pats = (ctypes.c_char_p * 1)(rb"^[\\s\\S]*?(hello)[\\s\\S]*")
        toks = (llama_cpp.llama_token * 1)()
        s = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
            llm._model.vocab, {G!r}.encode(), b"root", pats, 1, toks, 0)
        for t in llm.tokenize(b"say hello world", add_bos=False, special=True):
            llama_cpp.llama_sampler_accept(s, t)
        print("survived")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "survived" not in proc.stdout
    assert "Unexpected empty grammar stack" in proc.stderr
