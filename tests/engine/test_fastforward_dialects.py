"""Fast-forward over every builtin dialect, on real vocabularies, without decoding.

A scripted "model" writes ``render_call``'s text (the canonical form a forced grammar writes)
token by token, in the tokenizer's own tokens; after each of its tokens the engine's
fast-forward appends what the grammar forces. Every forced run must be the next piece of that
text (forced text is never text the model would not have written), llama.cpp's grammar must
accept every token, and the whole reply must come out as ``render_call`` wrote it. Only the
vocabulary is loaded (``vocab_only``), so the check covers 35 dialects on two tokenizers in
seconds.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import model_path
from tooldialect.dialect.builtins import builtin_dialects, get_builtin
from tooldialect.engine.in_process.fastforward import FastForward
from tooldialect.engine.in_process.generate import decoder_for
from tooldialect.grammar.build import build_grammar

NOTE = {
    "type": "function",
    "function": {
        "name": "save_note",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "pinned": {"type": "boolean"},
                "rank": {"type": "integer"},
            },
            "required": ["title", "tags", "pinned", "rank"],
        },
    },
}
ARGS = {"title": "Lunch at noon", "tags": ["food", "team"], "pinned": True, "rank": 2}
NAMED = {"type": "function", "function": {"name": "save_note"}}
CALL_ID = {"alnum9": "a1B2c3D4e", "numeric": "12"}
"""An id each id format's grammar rule accepts."""
SPECS = list(builtin_dialects())


@pytest.fixture(scope="module", params=["smollm2", "qwen"])
def vocab(request: pytest.FixtureRequest) -> Any:
    import llama_cpp

    path = model_path(request.param)
    if not path.exists():
        pytest.skip(f"{path} is missing (make models)")
    return llama_cpp.Llama(str(path), vocab_only=True, verbose=False)


_PIECES: dict[int, dict[bytes, int]] = {}


def short_pieces(llm: Any) -> dict[bytes, int]:
    """Tokens of at most 4 bytes by their bytes (byte-fallback and byte-level pieces)."""
    engine = decoder_for(llm)
    key = id(llm)
    if key not in _PIECES:
        table: dict[bytes, int] = {}
        for t in range(int(llm.n_vocab())):
            piece = engine.piece(t)
            if 0 < len(piece) <= 4:
                table.setdefault(piece, t)
        _PIECES[key] = table
    return _PIECES[key]


def char_boundary(data: bytes, at: int) -> bool:
    return at >= len(data) or (data[at] & 0xC0) != 0x80


def rendered(spec_id: str) -> str:
    spec = get_builtin(spec_id)
    return spec.render_call("save_note", ARGS, call_id=CALL_ID.get(spec.id_format, "call_1"))


def replay(llm: Any, spec_id: str) -> tuple[str, int, int]:
    """Write render_call's text with fast-forward; returns (text, tokens, forced tokens)."""
    spec = get_builtin(spec_id)
    target = rendered(spec_id)
    grammar = build_grammar(
        spec,
        [NOTE],
        tool_choice=NAMED,
        parallel_tool_calls=False,
        argument_layout="canonical",
    )
    assert grammar is not None
    engine = decoder_for(llm)
    sampler = engine.grammar_sampler(grammar)
    ff = FastForward.create(engine, grammar)
    assert ff is not None, spec_id
    written = b""
    goal = target.encode("utf-8")
    tokens = forced_count = 0

    def take(ids: list[int], *, forced: bool) -> None:
        nonlocal written, tokens, forced_count
        for t in ids:
            piece = engine.piece(t)
            assert goal.startswith(written + piece), (spec_id, written, piece, forced)
            written += piece
            tokens += 1
            forced_count += forced

    canonical = [int(t) for t in llm.tokenize(goal, add_bos=False, special=True)]
    boundaries, offset = {}, 0
    for t in canonical:
        boundaries[offset] = t
        offset += len(engine.piece(t))
    pieces = short_pieces(llm)

    def next_token() -> int:
        """What a model writing ``goal`` under the grammar writes next."""
        at = len(written)
        rest = goal[at:]
        candidates = [boundaries[at]] if at in boundaries else []
        if char_boundary(goal, at):
            candidates.append(int(llm.tokenize(rest, add_bos=False, special=True)[0]))
        # else (or if the grammar wants another split): the longest short piece it allows
        candidates += [pieces[rest[:n]] for n in range(4, 0, -1) if rest[:n] in pieces]
        return next(t for t in candidates if sampler.allows(t))

    try:
        take(ff.start(sampler, room=512), forced=True)
        while written != goal:
            token = next_token()
            sampler.accept(token)
            take([token], forced=False)
            ff.observe(token)
            take(ff.extend(token, sampler, room=512), forced=True)
            assert tokens < 400, (spec_id, written)
    finally:
        sampler.close()
    return written.decode("utf-8"), tokens, forced_count


@pytest.mark.parametrize("spec_id", SPECS, ids=SPECS)
def test_forced_runs_are_the_models_own_text(vocab: Any, spec_id: str) -> None:
    text, tokens, forced = replay(vocab, spec_id)
    assert text == rendered(spec_id)
    # the name's tail and the argument keys are forced in every dialect
    assert forced >= 3, (spec_id, tokens, forced)
    assert forced < tokens
