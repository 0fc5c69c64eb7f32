"""The lazy-grammar invariant llama.cpp's process depends on: whatever a trigger captures is
replayed into the grammar, and a replay the grammar rejects aborts the process. So for every
builtin, every trigger, and any output (a call to a real tool, a call to an unknown function,
pretty-printed JSON), each point where the trigger fires must replay text the grammar accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from grammar_check import grammar_accepts
from tooldialect import DialectSpec, build_grammar, builtin_dialects

pytestmark = pytest.mark.model

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def vocab(smollm2_path: Any) -> Any:
    from llama_cpp import Llama

    return Llama(str(smollm2_path), vocab_only=True, verbose=False)


def outputs(spec: DialectSpec, index: int) -> list[str]:
    """Texts a model could write in format ``index``: a real call, an unknown function, and the
    real call with its JSON pretty-printed."""
    one = spec.model_copy(update={"formats": [spec.formats[index]]})
    good = one.render_call("get_weather", {"city": "Paris"})
    bad = one.render_call("print", {"city": "Paris"})
    pretty = good.replace('{"', '{\n  "').replace(', "', ',\n  "')
    fmt = spec.formats[index]
    # a tokenizer may merge an envelope marker's last character with following whitespace
    # (">\n\n"); an opener that is the start of a body head is followed by the name instead
    envelope = (fmt.section_open or fmt.call_open).strip()
    spaced = good.replace(envelope, envelope + "\n\n", 1) if envelope else good
    return [good, bad, pretty, spaced, "Sure! " + good]


def fired_replays(pattern: str, text: str) -> list[str]:
    """What llama.cpp replays when ``pattern`` (full-match) first fires on a prefix of ``text``:
    from the first capture group to the end of the token that completed the match, which may
    carry following whitespace (merged whitespace tokens are common). A token that carries the
    next word as well cannot be defended against by any grammar and is not modelled."""
    rx = re.compile(pattern)
    for end in range(1, len(text) + 1):
        m = rx.fullmatch(text[:end])
        if m is None:
            continue
        starts = [
            m.start(g) for g in range(1, (rx.groups or 0) + 1) if m.start(g) >= 0 and m.group(g)
        ]
        start = starts[0] if starts else 0
        # the trigger fires once; later tokens are sampled under the grammar
        extra = len(text[end : end + 3]) - len(text[end : end + 3].lstrip())
        return [text[start : end + n] for n in range(extra + 1)]
    return []


CASES = [
    (sid, i)
    for sid in builtin_dialects()
    for i, fmt in enumerate(DialectSpec.builtin(sid).formats)
    if fmt.effective_triggers()
]


@pytest.mark.parametrize("layout", ["free", "canonical"], ids=["free", "canonical"])
@pytest.mark.parametrize(("spec_id", "index"), CASES, ids=[f"{s}-fmt{i}" for s, i in CASES])
def test_every_trigger_replays_text_the_grammar_accepts(
    vocab: Any, spec_id: str, index: int, layout: Any
) -> None:
    spec = DialectSpec.builtin(spec_id)
    grammar = build_grammar(spec, [TOOL], tool_choice="auto", argument_layout=layout)
    assert grammar is not None
    patterns = grammar.lazy_patterns()
    fired = 0
    for text in outputs(spec, index):
        for pattern in patterns:
            for replay in fired_replays(pattern, text):
                fired += 1
                assert grammar_accepts(
                    grammar.gbnf, replay, root=grammar.root, llama=vocab, complete=False
                ), (
                    pattern,
                    replay,
                )
    assert fired, "no trigger fired on the format's own rendered call"
