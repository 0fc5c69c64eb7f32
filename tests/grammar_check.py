"""Check GBNF grammars against llama.cpp's own grammar sampler without risking the process.

llama.cpp aborts the whole process when a grammar rejects a token that is then *accepted*, and an
invalid GBNF string yields a NULL sampler that segfaults once chained. These helpers only ever
``accept`` a token after ``apply`` on a one-candidate array showed that the grammar allows it.

What the 0.3.36 lazy sampler does (``llama_sampler_init_grammar_lazy_patterns``), verified by the
tests in ``tests/grammar/test_grammar_check.py`` on the SmolLM2 vocab:

* Until a trigger fires, ``apply`` leaves every candidate alone and ``accept`` appends the token's
  text (special tokens included, as their text) to a buffer.
* After each accepted token, every trigger pattern is run with ``std::regex_match`` (ECMAScript,
  **full match of the whole buffer**, not a search), so a pattern that should fire "anywhere"
  must be written ``^[\\s\\S]*?(WORD)[\\s\\S]*``.
* When one matches, the grammar starts at the **first capture group that matched non-empty text**
  (the whole match, i.e. the buffer start, if none did): that suffix of the buffer is replayed
  into the grammar. If the replay does not fit the grammar, the C++ throws and the process aborts.
* A trigger token fires when sampled and its own text is replayed (the text before it is not).
* Once fired, the grammar constrains like a normal one; when it is complete only end-of-generation
  tokens remain allowed.

``lazy_grammar_accepts`` predicts the trigger with Python's ``re`` (same semantics for the patterns
we emit) and checks the replay on a non-lazy sampler *before* letting the lazy sampler see the
token, so a bad grammar gives ``False`` instead of a dead process.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections.abc import Sequence
from typing import Any

from tooldialect.errors import GrammarError

__all__ = ["grammar_accepts", "lazy_grammar_accepts", "validate_grammar", "vocab_of"]


def vocab_of(llama: Any) -> Any:
    """The ``llama_vocab`` pointer of a ``llama_cpp.Llama``."""
    return llama._model.vocab


def _init(vocab: Any, gbnf: str, root: str) -> Any:
    import llama_cpp

    smpl = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), root.encode("utf-8"))
    if not smpl:
        head = "\n".join(gbnf.splitlines()[:8])
        raise GrammarError(
            f"llama.cpp rejected the grammar (root {root!r}); first lines:\n{head}\n"
            "fix the GBNF (run with verbose=True to see llama.cpp's parse error)"
        )
    return smpl


def validate_grammar(gbnf: str, *, root: str = "root", vocab: Any) -> None:
    """Raise ``GrammarError`` unless llama.cpp can build a sampler for ``gbnf`` at ``root``."""
    import llama_cpp

    llama_cpp.llama_sampler_free(_init(vocab, gbnf, root))


def _allows(smpl: Any, token: int) -> bool:
    import llama_cpp

    data = (llama_cpp.llama_token_data * 1)()
    data[0].id = token  # type: ignore[assignment]
    data[0].logit = 0.0
    data[0].p = 0.0
    arr = llama_cpp.llama_token_data_array(
        data=ctypes.cast(data, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(smpl, ctypes.byref(arr))
    return not math.isinf(data[0].logit)


def _piece(vocab: Any, token: int) -> bytes:
    import llama_cpp

    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    return buf.raw[: max(0, n)]


def _tokens(llama: Any, text: str) -> list[int]:
    return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def _feed(smpl: Any, tokens: Sequence[int], eos: int | None) -> bool:
    """Accept ``tokens`` one by one while the grammar allows them; then, if ``eos`` is given,
    whether the grammar may end there."""
    import llama_cpp

    for tok in tokens:
        if not _allows(smpl, tok):
            return False
        llama_cpp.llama_sampler_accept(smpl, tok)
    return eos is None or _allows(smpl, eos)


def grammar_accepts(
    gbnf: str, text: str, *, root: str = "root", llama: Any, complete: bool = True
) -> bool:
    """Whether the grammar accepts ``text`` (all of it, and may end there when ``complete``).

    ``llama`` is any ``Llama`` (``vocab_only=True`` is enough); ``text`` is tokenized with
    ``special=True``. Raises ``GrammarError`` if the grammar itself is invalid.
    """
    import llama_cpp

    smpl = _init(vocab_of(llama), gbnf, root)
    try:
        return _feed(smpl, _tokens(llama, text), llama.token_eos() if complete else None)
    finally:
        llama_cpp.llama_sampler_free(smpl)


def _first_group_start(m: re.Match[str]) -> int:
    for i in range(1, (m.re.groups or 0) + 1):
        if m.group(i):
            return m.start(i)
    return m.start()


def lazy_grammar_accepts(
    gbnf: str,
    text: str,
    *,
    root: str = "root",
    llama: Any,
    trigger_patterns: Sequence[str] = (),
    trigger_tokens: Sequence[int] = (),
) -> bool:
    """Whether a lazy grammar accepts ``text``: free until a trigger fires, then constrained to the
    end (which must be a place the grammar may finish). ``False`` if no trigger fires.

    Uses the real lazy sampler; the replay of each trigger is checked on a plain sampler first so a
    misfit returns ``False`` rather than aborting the process.
    """
    import llama_cpp

    vocab = vocab_of(llama)
    _init_free = _init(vocab, gbnf, root)  # validates the GBNF before the lazy sampler sees it
    llama_cpp.llama_sampler_free(_init_free)
    pats = (ctypes.c_char_p * max(1, len(trigger_patterns)))()
    for i, p in enumerate(trigger_patterns):
        pats[i] = p.encode("utf-8")
    toks = (llama_cpp.llama_token * max(1, len(trigger_tokens)))(*trigger_tokens)
    smpl = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
        vocab,
        gbnf.encode("utf-8"),
        root.encode("utf-8"),
        pats,
        len(trigger_patterns),
        toks,
        len(trigger_tokens),
    )
    if not smpl:
        raise GrammarError(
            f"llama.cpp rejected the lazy grammar or a trigger pattern {list(trigger_patterns)!r}"
        )
    compiled = [re.compile(p) for p in trigger_patterns]
    try:
        buffer = b""
        fired = False
        tokens = _tokens(llama, text)
        for tok in tokens:
            if fired:
                if not _allows(smpl, tok):
                    return False
                llama_cpp.llama_sampler_accept(smpl, tok)
                continue
            piece = _piece(vocab, tok)
            if tok in trigger_tokens:
                replay = piece
            else:
                buffer += piece
                replay = None
                decoded = buffer.decode("utf-8", errors="replace")
                for rx in compiled:
                    m = rx.fullmatch(decoded)
                    if m:
                        replay = decoded[_first_group_start(m) :].encode("utf-8")
                        break
            if replay is not None:
                fired = True
                if not grammar_accepts(
                    gbnf, replay.decode("utf-8", "replace"), root=root, llama=llama, complete=False
                ):
                    return False
            llama_cpp.llama_sampler_accept(smpl, tok)
        return fired and _allows(smpl, llama.token_eos())
    finally:
        llama_cpp.llama_sampler_free(smpl)
