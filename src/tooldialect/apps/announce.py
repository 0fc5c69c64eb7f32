"""The one line ``chat`` and ``serve`` print at start: the model, its dialect and why.

llama.cpp's own loading output (hundreds of lines, the whole chat template included) is off
unless ``--verbose``; this line says what a user needs instead. Both commands accept every
multi-word option with ``-`` or ``_`` (``--n-ctx`` and ``--n_ctx``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..dialect.vocabulary import Vocabulary
from ..errors import ToolDialectError
from ..gguf import read_gguf_metadata
from ..prompt.fallbacks import fallback_template
from ..verify import explain_detection

__all__ = ["model_line", "spellings", "with_known_spelling"]


def model_line(path: str) -> str:
    """``model: NAME  dialect: ID (how: why)``, from the GGUF header (no weights loaded)."""
    name = Path(path).name
    try:
        info = read_gguf_metadata(path)
        source = info.chat_template
        origin = ""
        if not source:
            found = fallback_template(info.architecture)
            source, origin = (found[1], f", fallback template {found[0]}") if found else ("", "")
        detection = explain_detection(
            source,
            bos_token=info.bos_token,
            eos_token=info.eos_token,
            vocabulary=Vocabulary.from_gguf(path),
        )
    except (ToolDialectError, OSError) as exc:
        return f"model: {name}  dialect: unknown ({exc})"
    why = detection.reason or "no reason recorded"
    return f"model: {name}  dialect: {detection.spec.id} ({detection.chosen}{origin}: {why})"


def spellings(name: str) -> tuple[str, str]:
    """``("--n-ctx", "--n_ctx")`` for ``n_ctx``: both spellings of one option."""
    return f"--{name.replace('_', '-')}", f"--{name}"


def with_known_spelling(argv: Sequence[str], known: set[str]) -> list[str]:
    """``argv`` with each ``--a-b`` (or ``--a_b``, ``--a-b=v``) rewritten to the spelling in
    ``known``, so a parser that defines one spelling accepts both."""
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if flag.startswith("--") and flag not in known:
            words = flag[2:]
            for other in (f"--{words.replace('-', '_')}", f"--{words.replace('_', '-')}"):
                if other in known:
                    flag = other
                    break
        out.append(flag + eq + value)
    return out
