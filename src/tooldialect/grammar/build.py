"""Tool-call grammars from a ``DialectSpec``: lazy for ``tool_choice="auto"``, forced otherwise.

Generic over the spec: envelope markers come from ``CallFormat``, bodies from their body kind
(``bodies/``), and each tool's arguments from its own JSON Schema, so a call to ``f`` must
carry ``f``'s arguments.

Choices:

* Markers' leading/trailing whitespace is optional (parsers tolerate its absence); the stripped
  marker text is exact.
* Element and python bodies take arguments in the order the schema declares them; required ones
  must appear, optional ones may be skipped; no undeclared arguments. JSON arguments follow the
  rules of ``schema``.
* ``argument_layout="canonical"`` allows inside argument values exactly the whitespace
  ``render_call`` writes (``{"k": v, "k2": [1, 2]}``), so separators are forced text. A forced
  grammar (``required``/named) then writes the whole call exactly as ``render_call`` does,
  markers included; a lazy grammar's envelope keeps its bounded optional whitespace, because
  its trigger replays the model's own text into it.
* A lazy grammar's root is the alternatives of every format that has a trigger; each alternative
  starts with its trigger text, because llama.cpp replays the text from the trigger into it.
* With ``spec.reasoning``, word triggers become patterns that only match after the reasoning block
  (``reasoning_open=True``: after its close; otherwise after a closed block at the start, or
  anywhere when the reply does not start with one). See ``trigger_pattern``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..dialect.spec import (
    DialectSpec,
    ReasoningMarkers,
    Trigger,
    format_template,
)
from ..errors import UnsupportedToolChoiceError
from ..tool_defs import ToolChoice, ToolDef, ToolLike, normalize_tool_choice, normalize_tools
from .codec import ArgumentLayout
from .formats import format_rule
from .gbnf import GbnfBuilder, escape_char, optional_edges, until
from .strict_form import strict_call_rules

__all__ = [
    "GAP",
    "ToolGrammar",
    "build_grammar",
    "call_grammar",
    "ensure_forcible",
    "no_call_start",
    "trigger_pattern",
    "word_pattern",
]

GAP = "[ \\t\\r\\n]{0,8}"
"""Whitespace a model may write between markers (bounded: an unbounded gap lets it ramble)."""


class ToolGrammar(BaseModel):
    """A grammar plus how to start it. Feed lazy ones to
    ``llama_sampler_init_grammar_lazy_patterns(vocab, gbnf, root, lazy_patterns(), ...)``."""

    model_config = ConfigDict(frozen=True)

    gbnf: str
    """The GBNF text."""
    root: str = "root"
    """Root rule name."""
    lazy: bool
    """Constrains only once a trigger fired (``tool_choice="auto"``)."""
    forced: bool
    """A call is required from the first token (``required`` / named)."""
    trigger_words: list[str] = Field(default_factory=list)
    """Literal trigger texts (may be mapped to trigger tokens when one token spells them)."""
    trigger_patterns: list[str] = Field(default_factory=list)
    """ECMAScript regexes with llama.cpp's semantics: full match of all text so far, the grammar
    starting at the first non-empty capture group."""
    strict_gbnf: str = ""
    """A lazy grammar's calls written exactly (``""``: none): the same formats, each starting
    with its trigger text, with the envelope of a forced call (see :func:`strict_call_rules`).
    An engine may switch to it once a trigger fired, if it accepts what the trigger captured."""
    strict_root: str = ""
    """The root rule of :attr:`strict_gbnf`."""

    def lazy_patterns(self) -> list[str]:
        """All triggers as full-match patterns (words escaped), for engines that use no tokens."""
        return [word_pattern(w) for w in self.trigger_words] + list(self.trigger_patterns)


def ensure_forcible(spec: DialectSpec, choice: ToolChoice) -> None:
    """Raise ``UnsupportedToolChoiceError`` when ``choice`` forces a call that ``spec`` cannot
    constrain from the first token (asked once, by ``call_grammar``, before building)."""
    if choice.forced and not spec.forcible:
        raise UnsupportedToolChoiceError(
            f"dialect {spec.id!r} cannot force tool_choice={choice.mode!r}"
            + (f" ({choice.name!r})" if choice.name else "")
            + f": {spec.unforcible_reason or 'its calls cannot be constrained from token one'}; "
            "use tool_choice='auto'"
        )


def build_grammar(
    spec: DialectSpec,
    tools: Sequence[ToolLike] | None,
    *,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning_open: bool = False,
    prefill: str = "",
    argument_layout: ArgumentLayout = "free",
) -> ToolGrammar | None:
    """The tool-call grammar for ``tools`` under ``tool_choice``; ``None`` when no call is possible.

    The public entry: ``tools`` and ``tool_choice`` as a request gives them (normalised here),
    then :func:`call_grammar`, which the front end calls with its typed values.
    """
    defs = normalize_tools(tools)
    return call_grammar(
        spec,
        defs,
        normalize_tool_choice(tool_choice, defs),
        parallel_tool_calls=parallel_tool_calls,
        reasoning_open=reasoning_open,
        prefill=prefill,
        argument_layout=argument_layout,
    )


def call_grammar(
    spec: DialectSpec,
    tools: Sequence[ToolDef],
    choice: ToolChoice,
    *,
    parallel_tool_calls: bool = True,
    reasoning_open: bool = False,
    prefill: str = "",
    argument_layout: ArgumentLayout = "free",
) -> ToolGrammar | None:
    """The tool-call grammar for ``tools`` (validated) under ``choice``; ``None`` when no call is
    possible.

    ``parallel_tool_calls=False`` (or ``spec.parallel_calls=False``) allows exactly one call.
    ``reasoning_open`` says the prompt already opened the reasoning block, so a forced grammar
    starts inside it and lazy triggers only fire after its close. ``prefill`` is a call opener
    the prompt already wrote (Functionary v3.2's generation prompt ends with ``>>>``): a forced
    grammar then starts right after it. Lazily, the first call after such a prefill is left
    unconstrained (no trigger can precede it); the parser still reads it.
    ``argument_layout="canonical"`` allows only the canonical whitespace inside arguments
    (``", "`` and ``": "``, as ``render_call`` writes them); ``"natural"`` that or a
    pretty-printer's line breaks and indents; ``"free"`` lets the model choose.
    """
    if not choice.reads_calls or not tools:
        return None
    forced = choice.forced
    ensure_forcible(spec, choice)
    # the prompt shows every tool; a call may name only the chosen (or allowed_tools) ones
    selected = choice.callable_tools(tools)
    if not selected:
        raise UnsupportedToolChoiceError(
            f"tool_choice allows {choice.name or list(choice.allowed or ())}, none of which is in "
            f"tools ({[t.name for t in tools]}); name tools the request passes"
        )
    parallel_tool_calls = parallel_tool_calls and spec.parallel_calls
    b = GbnfBuilder()
    root = b.name("root")
    reasoning = spec.reasoning
    if forced:
        body = format_rule(
            b,
            spec,
            spec.primary,
            selected,
            parallel=parallel_tool_calls,
            hint="call",
            prefill=prefill,
            layout=argument_layout,
            exact=argument_layout != "free",
        )
        if reasoning is not None:
            think = until(b, reasoning.close, hint="think")
            if reasoning_open:
                body = f"{think} {GAP} {body}"
            else:
                body = f"({optional_edges(reasoning.open)} {think} {GAP})? {body}"
        b.define(root, body)
        return ToolGrammar(gbnf=b.render(root), root=root, lazy=False, forced=True)
    alts, words, patterns = [], [], []
    names = "(?:" + "|".join(_esc(t.name) for t in selected) + ")"  # binds `{name}` in patterns
    for i, fmt in enumerate(spec.formats):
        triggers = fmt.effective_triggers()
        if not triggers:
            continue  # unreachable lazily: nothing marks where it starts
        alts.append(
            format_rule(
                b,
                spec,
                fmt,
                selected,
                parallel=parallel_tool_calls,
                hint=f"fmt{i}",
                layout=argument_layout,
            )
        )
        for t in triggers:
            if t.kind != "word":
                # `{name}` in a pattern stands for the tools' names: a pattern that captures a
                # name must only fire on a name the grammar accepts, or llama.cpp's replay of the
                # captured text into the grammar aborts the process.
                t = t.model_copy(update={"value": format_template(t.value, name=names)})
            if t.kind == "word" and reasoning is None:
                words.append(t.value)
            else:
                patterns.append(trigger_pattern(t, reasoning, reasoning_open=reasoning_open))
    if not alts:
        return None
    b.define(root, " | ".join(alts))
    strict = (
        strict_call_rules(spec, selected, parallel=parallel_tool_calls, layout=argument_layout)
        if argument_layout != "free"
        else None
    )
    return ToolGrammar(
        gbnf=b.render(root),
        root=root,
        lazy=True,
        forced=False,
        trigger_words=list(dict.fromkeys(words)),
        trigger_patterns=list(dict.fromkeys(patterns)),
        strict_gbnf=strict[0] if strict else "",
        strict_root=strict[1] if strict else "",
    )


# -- triggers ----------------------------------------------------------------------------

_GROUP_RE = re.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\((?!\?)")


def _has_group(pattern: str) -> bool:
    return any(m.group(0) == "(" for m in _GROUP_RE.finditer(pattern))


def _esc(text: str) -> str:
    """ECMAScript-escape literal text."""
    return re.sub(r"([\\^$.*+?()\[\]{}|])", r"\\\1", text)


def _any(markers: Sequence[str]) -> str:
    """ECMAScript alternation of literal ``markers`` (one marker: just it, escaped)."""
    alts = [_esc(m) for m in markers if m]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def word_pattern(word: str) -> str:
    """A word trigger as the full-match pattern llama.cpp's lazy sampler takes (any text, then
    the word, which starts the grammar), for an engine that cannot make it a trigger token."""
    return trigger_pattern(Trigger(kind="word", value=word), None)


def trigger_pattern(
    trigger: Trigger, reasoning: ReasoningMarkers | None, *, reasoning_open: bool = False
) -> str:
    """``trigger`` as a full-match ECMAScript pattern whose first capture group is where the
    grammar starts; with ``reasoning`` it cannot match inside the reasoning block."""
    if reasoning is None:
        start = "^"
    else:
        # any open / close marker (ReasoningMarkers.alt_open/alt_close)
        close, opened = _any(reasoning.closes()), r"\s*" + _any(reasoning.opens())
        if reasoning_open:
            start = rf"^[\s\S]*?{close}"
        else:
            start = rf"^(?:{opened}[\s\S]*?{close}|(?!{opened}))"
    if trigger.kind == "word":
        return rf"{start}[\s\S]*?({_esc(trigger.value)})[\s\S]*"
    value = trigger.value
    anchored = value.startswith("^")
    if trigger.kind == "pattern_full":
        value = (
            value.removeprefix("^").removesuffix("$")
            if not value.endswith("\\$")
            else value.removeprefix("^")
        )
    elif anchored:
        value = value[1:]
    inner = f"(?:{value})" if _has_group(value) else f"({value})"
    if trigger.kind == "pattern_full":
        return f"{start}{inner}$"
    return f"{start}{inner}[\\s\\S]*" if anchored else rf"{start}[\s\S]*?{inner}[\s\S]*"


STRUCTURE_STARTS = "{}[]<>`"
"""Characters no answer in words starts with, but a call written as text does: JSON, markup,
a code fence. Qwen2.5-Coder-0.5B, banned only from ``<`` after its repeated ``<tool_call>``,
wrote ``>{"name": ...}`` calls as text until ``max_tokens`` (bench/agent_tasks.py)."""


def no_call_start(spec: DialectSpec) -> ToolGrammar | None:
    """A grammar of a reply whose first non-blank character starts no call in any of ``spec``'s
    formats, nor JSON, markup or a code fence (``STRUCTURE_STARTS``): what a reply may begin
    with where a call must not, an answer in words. Each format starts with its opener, or,
    where it has none (a bare JSON body), with what its body writes first."""
    from ..dialect.bodies import render_body

    starts = [fmt.opener() or render_body(fmt.body, "f", {}, "call_0", 0) for fmt in spec.formats]
    firsts = ({s.lstrip()[:1] for s in starts} | set(STRUCTURE_STARTS)) - {""}
    banned = "".join(escape_char(c, "]^-[") for c in sorted(firsts) if not c.isalnum())
    if not banned:
        return None
    gbnf = f"root ::= ([ \\t\\r\\n]* [^ \\t\\r\\n{banned}] tail)?\ntail ::= [^\\x00]*\n"
    return ToolGrammar(gbnf=gbnf, lazy=False, forced=False)
