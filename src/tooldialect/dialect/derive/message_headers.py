"""Deriving ``MessageHeaders``: templates whose assistant turns are header-addressed messages.

A harmony-like template writes every assistant message as the generation prompt's tail (the
*start*, ``<|begin|>assistant``), a header of tokens (`` to=user``, ``<|ch|>final``), a body
marker (``<|body|>``), the body and an end marker. Derivation reads the header of three renders:

* a plain answer turn: the answer's header tokens, the body marker and the answer's end;
* the probe call: the token whose word is the probe's name is the recipient (its prefix is the
  recipient prefix, a namespace before the name a call prefix); where no token names the tool, a
  token whose word differs from the answer's (`` to=tools``) is a recipient whose body holds
  the calls;
* a turn with reasoning (``reasoning_content``, then ``thinking``): the word that differs from
  the answer's names reasoning, as a recipient (`` to=analysis``) or a channel (``<|ch|>think``).

The spec keeps its derived call formats (grammars write them); ``messages`` is only added when the
spec with it still reads the template's own renders (``validate``).
"""

from __future__ import annotations

import re
from typing import Any

from ..bodies import render_body
from ..ports import CallReader
from ..spec import DialectSpec, MessageHeaders
from .acceptance import validate
from .lexemes import is_marker, lex
from .probes import (
    PLAIN,
    PROBE_NAME,
    THINK_TEXT,
    Probe,
    assistant_turn,
    call_region,
    probe_call,
    render_probe,
)

__all__ = ["with_messages"]

_TOKEN = re.compile(r"(\s*(?:<[^<>\s]{1,48}>|\w+=|[^\w\s<]{1,3})?\s*)([\w.\-:]+)")
"""One header token: a prefix (a special token, ``to=``, ``>>``, ``@``) and its word."""

_Tokens = list[tuple[str, str]]
_WORD = re.compile(r"\w+")


def _start(prompt: str) -> str | None:
    """The generation prompt's tail that opens an assistant message: its last marker and the
    role word after it (``<|begin|>assistant``)."""
    lx = lex(prompt.rstrip())
    words = 0
    for i in range(len(lx) - 1, -1, -1):
        if is_marker(lx[i]):
            return "".join(lx[i:]).strip() if words else None
        if _WORD.fullmatch(lx[i]):
            words += 1
        elif not lx[i].isspace() or words > 2:
            return None
    return None


def _header(text: str, *, bare: bool = False) -> tuple[_Tokens, str] | None:
    """``text`` (a header and its body marker) as tokens and the body marker; ``bare``: a
    header of no token (the body marker alone) counts too."""
    lx = lex(text.rstrip())
    if not lx or not is_marker(lx[-1]):
        return None
    body_open = lx[-1]
    head = text.rstrip()[: -len(body_open)]
    tokens: _Tokens = []
    p = 0
    while head[p:].strip():
        m = _TOKEN.match(head, p)
        if m is None or not (m.group(1).strip() or tokens):  # a bare word only after a token
            return None
        tokens.append((m.group(1), m.group(2)))
        p = m.end()
    return (tokens, body_open) if tokens or bare else None


def _single_end(text: str) -> str | None:
    """The one marker ``text`` is made of (with whitespace), else ``None``."""
    lx = [x for x in lex(text) if not x.isspace()]
    return lx[0] if len(lx) == 1 and is_marker(lx[0]) else None


def _word_of(tokens: _Tokens, prefix: str) -> str:
    return next((w for p, w in tokens if p.strip() == prefix.strip()), "")


def _recipient(call: _Tokens, answer: _Tokens) -> tuple[str, str, str] | None:
    """``(prefix, namespace, generic)``: the recipient prefix, a namespace written before the
    tool's name, or the word of a recipient whose body holds the calls."""
    for prefix, word in call:
        if word.endswith(PROBE_NAME):
            return prefix, word[: -len(PROBE_NAME)], ""
    for prefix, word in call:
        other = _word_of(answer, prefix)
        if other and other != word:
            return prefix, "", word
    return None


def _reasoning(probe: Probe, start: str, body_open: str) -> tuple[_Tokens, str] | None:
    """The header tokens and end of a reasoning message, from a render with reasoning."""
    for key in ("reasoning_content", "thinking"):
        for turn in ({"content": PLAIN}, {"calls": [probe_call(0)]}):
            extra: dict[str, Any] = {key: THINK_TEXT}
            text = render_probe(probe.renderer, probe.shape, assistant_turn(**turn, **extra))
            at = text.rfind(THINK_TEXT) if text else -1
            if text is None or at < 0:
                continue
            s = text.rfind(start, 0, at)
            got = _header(text[s + len(start) : at]) if s >= 0 else None
            if got is None or got[1] != body_open:
                continue
            rest = text[at + len(THINK_TEXT) :]
            end = next((x for x in lex(rest) if not x.isspace()), "")
            if is_marker(end):
                return got[0], end
    return None


def _closes_call(spec: DialectSpec, marker: str) -> bool:
    """Whether ``marker`` closes the call's body (``</invoke>``): no end of a message."""
    written = [x for x in lex(render_body(spec.primary.body, PROBE_NAME, {}, "", 0)) if x.strip()]
    return bool(written) and written[-1] == marker


def derive_headers(probe: Probe, spec: DialectSpec) -> MessageHeaders | None:
    """The ``MessageHeaders`` of ``probe``'s template, or ``None`` if its turns are not
    header-addressed messages."""
    start = _start(probe.prompt or "")
    region = call_region(probe, probe.one)
    if start is None or PLAIN not in region.plain:
        return None
    a_text, a_tail = region.plain.split(PLAIN, 1)
    answer = _header(a_text, bare=True)  # an unaddressed answer: `<|begin|>assistant<|body|>`
    # where every message ends with the turn's end, the region stops before it
    a_end = _single_end(a_tail) if a_tail.strip() else probe.plain_end
    if answer is None or a_end is None:
        return None
    tokens, body_open = answer
    at = region.text.find(body_open)
    call = _header(region.text[: at + len(body_open)]) if at >= 0 else None
    c_end = next((x for x in reversed(lex(region.text)) if not x.isspace()), "")
    if c_end and (not is_marker(c_end) or _closes_call(spec, c_end)):
        # the region stops at the call's own closer: the message ends as the turn does
        c_end = probe.plain_end or ""
    if call is None or call[1] != body_open or not is_marker(c_end):
        return None
    rec = _recipient(call[0], tokens)
    if rec is None:
        return None
    prefix, namespace, generic = rec
    if not tokens and generic:
        return None  # neither an addressed answer nor a tool named: too little to go by
    answer_word = _word_of(tokens, prefix)
    names = {"reasoning": ["analysis"], "answer": [answer_word] if answer_word else []}
    ends = [a_end, c_end]
    channel, reasoning_ends = "", []
    thought = _reasoning(probe, start, body_open)
    if thought is not None:
        r_tokens, r_end = thought
        ends.append(r_end)
        reasoning_ends = [r_end]
        word = _word_of(r_tokens, prefix)
        if word and word != answer_word:
            names["reasoning"] = [word]
        else:  # a channel token names thought
            for p, w in r_tokens:
                if p.strip() != prefix.strip() and w != _word_of(tokens, p):
                    channel, names["reasoning"] = p, [w]
                    break
    return MessageHeaders(
        start=start,
        body_open=body_open,
        ends=list(dict.fromkeys(ends)),
        reasoning_ends=reasoning_ends,
        recipient=prefix,
        channel=channel,
        reasoning_names=names["reasoning"],
        answer_names=list(dict.fromkeys([*names["answer"], "assistant", "user", "final"])),
        call_prefixes=[namespace] if namespace else [],
        call_recipients=[generic] if generic else [],
    )


def with_messages(spec: DialectSpec, probe: Probe, *, reader: CallReader) -> DialectSpec:
    """``spec`` with the template's ``MessageHeaders`` when it has them and the spec with them
    still reads the template's own renders; else ``spec`` unchanged."""
    try:
        headers = derive_headers(probe, spec)
    except (ValueError, IndexError):
        return spec
    if headers is None:
        return spec
    framed = spec.model_copy(update={"messages": headers})
    return framed if validate(framed, probe, reader=reader) else spec
