"""The vocabulary of the model a llama-server serves, as detection evidence.

The in-process handler reads a ``Llama``'s token list; a server only exposes its tokenizer. So:
the GGUF file itself when the server runs on this machine (``/props`` names its path, or we
launched it), checked against the server's own tokenizer; otherwise ``/tokenize`` answers, for
each candidate marker text (``dialect.vocabulary.marker_candidates``), whether the model writes
it as one special token: special tokens are split out of the text before anything else, so a
candidate that comes back as one token whose piece is the candidate is one. A round trip of rare
characters through ``/tokenize`` and ``/detokenize`` tells whether every text is spellable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ...dialect.spec import DialectSpec
from ...dialect.vocabulary import Vocabulary, marker_candidates
from ...errors import ServerError, ToolDialectError
from .http import open_post, read_json

__all__ = ["gguf_vocabulary", "probe_vocabulary", "server_vocabulary"]

_SEPARATOR = "\n\n"
_RARE = "\x01\x7f\u2603\u0f3a\U0001f9ea"
"""Characters a vocabulary without byte tokens is unlikely to hold."""
_CHECKED_SPECIALS = 8
_Failure = (ServerError, ValueError, TypeError, AttributeError, KeyError)


def _post(url: str, path: str, body: dict[str, Any], timeout: float) -> Any:
    return read_json(open_post(url, path, body, timeout=timeout))


def _pieces(url: str, text: str, *, timeout: float, parse_special: bool = True) -> list[Any]:
    """``/tokenize`` of ``text`` with pieces: ``[{"id": 7, "piece": "..."}, ...]``."""
    body = {"content": text, "add_special": False, "parse_special": parse_special}
    answer = _post(url, "/tokenize", {**body, "with_pieces": True}, timeout)
    tokens = answer["tokens"]
    if not isinstance(tokens, list):
        raise ServerError(f"/tokenize answered {str(answer)[:80]!r}, not a token list")
    return tokens


def _piece_text(token: Any) -> str:
    # a piece that is not valid UTF-8 comes as a list of bytes
    piece = token.get("piece") if isinstance(token, dict) else None
    if isinstance(piece, list):
        return bytes(int(b) & 0xFF for b in piece).decode("utf-8", "replace")
    return str(piece or "")


def _specials_among(url: str, candidates: Sequence[str], *, timeout: float) -> set[str]:
    """The candidates the server's tokenizer writes as one token (one request: special tokens
    are split out of the text first, so their neighbours do not matter)."""
    texts = [c for c in candidates if c and not c.isspace() and _SEPARATOR not in c]
    tokens = _pieces(url, _SEPARATOR.join(texts), timeout=timeout)
    pieces = {_piece_text(t) for t in tokens}
    return {c for c in texts if c in pieces}


def _byte_level(url: str, *, timeout: float) -> bool:
    tokens = _pieces(url, _RARE, timeout=timeout)
    ids = [int(t["id"]) for t in tokens]
    back = _post(url, "/detokenize", {"tokens": ids}, timeout)
    return isinstance(back, dict) and back.get("content") == _RARE


def _characters(url: str, text: str, *, timeout: float) -> frozenset[str]:
    """The characters of ``text`` that some token's piece holds (an unknown one comes back as
    the unknown token's piece)."""
    distinct = "".join(sorted(set(text)))
    held = "".join(_piece_text(t) for t in _pieces(url, distinct, timeout=timeout))
    return frozenset(c for c in distinct if c in held)


def probe_vocabulary(
    url: str, template_source: str, *, specs: Iterable[DialectSpec] = (), timeout: float = 5.0
) -> Vocabulary:
    """What ``/tokenize`` says about the marker candidates of ``template_source`` and ``specs``
    (raises ``ServerError`` or ``ValueError`` when the server does not answer as llama-server
    does)."""
    candidates = marker_candidates(template_source, specs=specs)
    special = _specials_among(url, candidates, timeout=timeout)
    if _byte_level(url, timeout=timeout):
        return Vocabulary(frozenset(special))
    chars = _characters(url, template_source + "".join(candidates), timeout=timeout)
    return Vocabulary(frozenset(special), chars, byte_level=False)


def gguf_vocabulary(path: str | os.PathLike[str]) -> Vocabulary | None:
    """``Vocabulary.from_gguf``, or ``None`` for a path that is no readable GGUF file."""
    if not Path(path).is_file():
        return None
    try:
        return Vocabulary.from_gguf(path)
    except ToolDialectError:
        return None


def _agrees(url: str, vocab: Vocabulary, *, timeout: float) -> bool:
    """Whether the server's tokenizer writes some of ``vocab``'s special tokens as one token
    each: the file on this machine is the model the server serves."""
    checked = sorted(vocab.special, key=lambda s: (-len(s), s))[:_CHECKED_SPECIALS]
    return len(_specials_among(url, checked, timeout=timeout)) == len(checked)


def server_vocabulary(
    url: str,
    props: dict[str, Any],
    template_source: str,
    *,
    model_path: str | None = None,
    specs: Iterable[DialectSpec] = (),
    timeout: float = 5.0,
) -> Vocabulary | None:
    """The vocabulary of the model the server at ``url`` serves: from ``model_path`` (the GGUF
    we launched it with) or the path its ``/props`` names, when that file is on this machine and
    agrees with the server's tokenizer; else probed through ``/tokenize`` for the markers of the
    template and of ``specs`` (a dialect the caller chose); ``None`` when the
    server cannot tell (the vocabulary is only evidence: detection works without it)."""
    try:
        for path in (model_path, props.get("model_path")):
            vocab = gguf_vocabulary(str(path)) if path else None
            if vocab is not None and (path == model_path or _agrees(url, vocab, timeout=timeout)):
                return vocab
        return probe_vocabulary(url, template_source, specs=specs, timeout=timeout)
    except _Failure:
        return None
