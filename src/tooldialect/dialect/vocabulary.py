"""The model's vocabulary as evidence for detection: which markers are special tokens.

A chat template is not the only witness of a wire format: the model's added tokens are. A special
token whose text is a call or reasoning marker (``<tool_call>``, ``<|tool_call_start|>``,
``<think>``) says the model was trained to write it, and a marker the model can only write as one
special token is matched as that token (llama.cpp's trigger tokens; the engine turns a trigger
word that is one token into one). :class:`Vocabulary` is that evidence, built from a GGUF file's
token list or from a loaded ``llama_cpp.Llama``; ``detect_dialect(..., vocabulary=...)`` uses it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .builtins import builtin_dialects, get_builtin
from .spec import CallFormat, DialectSpec, ReasoningMarkers, Trigger

__all__ = ["Vocabulary", "fit_to_vocabulary", "hinted_builtins", "marker_candidates"]

# llama.cpp token attributes / GGUF token types of added tokens
_ATTR_CONTROL, _ATTR_USER_DEFINED = 8, 16
_TYPE_CONTROL, _TYPE_USER_DEFINED, _TYPE_BYTE = 3, 4, 6
# how byte-level BPE and SentencePiece vocabularies write a space and a newline
_PIECE_MAP = str.maketrans({"Ġ": " ", "▁": " ", "Ċ": "\n", "ĉ": "\t"})
_REASONING_WORD = re.compile(r"think|thought|reason", re.IGNORECASE)
# texts shaped like a special token: <|x|>, the same with fullwidth bars, <x>, </x>, [X], [/X]
_MARKER_SHAPE = re.compile(
    r"<\|[^<>|\s]{1,48}\|>|<\uff5c[^<>\uff5c]{1,48}\uff5c>"
    r"|</?[A-Za-z_][\w:.\-|]{0,48}>|\[/?[A-Z][A-Z_]{1,32}\]"
)
_REASONING_WORDS = ("think", "thinking", "thought", "reasoning", "reason")
_MAX_CANDIDATES = 400


@dataclass(frozen=True)
class Vocabulary:
    """What a model can write: its special (control and user-defined) token texts, and whether
    every other text is spellable (byte-level or byte-fallback vocabularies)."""

    special: frozenset[str]
    characters: frozenset[str] = frozenset()
    """Characters plain tokens hold (unused when ``byte_level``)."""
    byte_level: bool = True
    """Every byte is a token: any text is spellable."""

    @classmethod
    def from_tokens(
        cls, texts: Iterable[str], *, special: Iterable[str] = (), byte_level: bool | None = None
    ) -> Vocabulary:
        """From token texts and the texts of its special tokens; ``byte_level`` is guessed from
        byte tokens (``<0x0A>``) or byte-level BPE pieces (``Ġ``) when not given."""
        texts = list(texts)
        chars = frozenset("".join(texts).translate(_PIECE_MAP))
        if byte_level is None:
            byte_level = any(t == "<0x0A>" or "Ġ" in t for t in texts)
        return cls(frozenset(s for s in special if s), chars, byte_level)

    @classmethod
    def from_gguf(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """From a GGUF file's ``tokenizer.ggml.tokens`` and ``token_type`` arrays."""
        from ..gguf import read_gguf_tokens

        tokens, types = read_gguf_tokens(path)
        kinds = (_TYPE_CONTROL, _TYPE_USER_DEFINED)
        special = [t for t, k in zip(tokens, types, strict=False) if k in kinds]
        byte_level = _TYPE_BYTE in types or any("Ġ" in t for t in tokens[:2000])
        return cls.from_tokens(tokens, special=special, byte_level=byte_level)

    @classmethod
    def from_llama(cls, llama: Any) -> Vocabulary:
        """From a loaded ``llama_cpp.Llama`` (its vocab, ``vocab_only=True`` is enough)."""
        model = llama._model
        texts: list[str] = []
        special: list[str] = []
        for tok in range(int(llama.n_vocab())):
            raw = model.token_get_text(tok)
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            texts.append(text)
            if int(model.token_get_attr(tok)) & (_ATTR_CONTROL | _ATTR_USER_DEFINED):
                special.append(text)
        return cls.from_tokens(texts, special=special)

    @classmethod
    def of_llama(cls, llama: Any) -> Vocabulary | None:
        """``from_llama``, or ``None`` for an object that is not a loaded ``llama_cpp.Llama``
        (test doubles, wrappers without a vocabulary)."""
        try:
            return cls.from_llama(llama)
        except (AttributeError, TypeError, ValueError):
            return None

    def has_special(self, text: str) -> bool:
        """Whether ``text`` (stripped) is one special token."""
        return text.strip() in self.special

    def spellable(self, text: str) -> bool:
        """Whether the model can write ``text``: a special token, or plain text it can spell.
        A text holding a special token's text is written with that token."""
        rest = text
        for tok in sorted((s for s in self.special if s in text), key=len, reverse=True):
            rest = rest.replace(tok, "")
        return self.byte_level or all(c in self.characters for c in rest)

    def special_prefix(self, text: str) -> str:
        """The longest special token ``text`` (stripped) starts with, or ``""``."""
        core = text.strip()
        return max((s for s in self.special if core.startswith(s)), key=len, default="")

    def reasoning_markers(self) -> ReasoningMarkers | None:
        """A ``<X>``/``</X>`` (or ``<|X|>``/``<|/X|>``) pair of special tokens naming thought."""
        for tok in sorted(self.special):
            if not _REASONING_WORD.search(tok) or "/" in tok:
                continue
            for close in (tok.replace("<", "</", 1), tok.replace("<|", "<|/", 1)):
                if close != tok and close in self.special:
                    return ReasoningMarkers(open=tok, close=close)
        return None


def _fit_format(fmt: CallFormat, vocab: Vocabulary) -> CallFormat:
    """Trigger words the vocabulary cannot spell become the special token they start with."""
    triggers = fmt.effective_triggers()
    fitted: list[Trigger] = []
    changed = False
    for t in triggers:
        if t.kind == "word" and not vocab.spellable(t.value) and vocab.special_prefix(t.value):
            fitted.append(Trigger(kind="word", value=vocab.special_prefix(t.value)))
            changed = True
        else:
            fitted.append(t)
    return fmt.model_copy(update={"triggers": fitted}) if changed else fmt


def fit_to_vocabulary(spec: DialectSpec, vocab: Vocabulary) -> DialectSpec:
    """``spec`` adjusted to what this model can write: trigger words it can spell, and reasoning
    markers its special tokens name where the spec has none (models reason in ``<think>`` that
    their template never shows; a call quoted in there must not run)."""
    formats = [_fit_format(f, vocab) for f in spec.formats]
    update: dict[str, Any] = {}
    if formats != spec.formats:
        update["formats"] = formats
    if spec.reasoning is None:
        markers = vocab.reasoning_markers()
        if markers is not None:
            update["reasoning"] = markers
    return spec.model_copy(update=update) if update else spec


def hinted_builtins(vocab: Vocabulary, template_source: str) -> list[str]:
    """Builtins whose canonical opener starts with a special token of this vocabulary, for a
    template that handles tools (longest token first): the model was trained to write it."""
    if "tools" not in template_source:
        return []
    found: list[tuple[int, str]] = []
    for name in builtin_dialects():
        spec = get_builtin(name)
        if spec.origin != "builtin":
            continue
        marker = vocab.special_prefix(spec.primary.opener())
        if len(marker) > 2:  # the opener starts with a special token (``<|tool_call_start|>[``)
            found.append((len(marker), name))
    return [name for _, name in sorted(found, key=lambda x: (-x[0], x[1]))]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


@lru_cache(maxsize=1)
def _builtin_markers() -> tuple[str, ...]:
    """Marker-shaped texts in every builtin spec (its markers, wherever the spec keeps them),
    and the common reasoning pairs, which templates often never show."""
    found: dict[str, None] = {}
    for name in builtin_dialects():
        for text in _strings(get_builtin(name).model_dump()):
            found.update(dict.fromkeys(_MARKER_SHAPE.findall(text)))
    for word in _REASONING_WORDS:
        found.update(dict.fromkeys((f"<{word}>", f"</{word}>", f"<|{word}|>", f"<|/{word}|>")))
    return tuple(found)


def marker_candidates(template_source: str, *, specs: Iterable[DialectSpec] = ()) -> list[str]:
    """Texts that may be one special token of a model with this template: every marker-shaped
    text in the template source, in ``specs`` (a dialect the caller chose) and in the builtin
    specs (bounded; the template's first). A vocabulary known only through a tokenizer (a
    llama-server) is probed for these."""
    found = dict.fromkeys(_MARKER_SHAPE.findall(template_source))
    for spec in specs:
        for text in _strings(spec.model_dump()):
            found.update(dict.fromkeys(_MARKER_SHAPE.findall(text)))
    found.update(dict.fromkeys(_builtin_markers()))
    return list(found)[:_MAX_CANDIDATES]
