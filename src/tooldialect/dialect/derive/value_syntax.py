"""Which value codec a Python-style body's template writes, read off its renders of probe calls:
every registered codec, in each of its quotes, writes the probe's arguments of every JSON type
(and strings holding quotes, a backslash, ``<``, ``&``, a newline and non-ASCII text); the codec
whose text the template's render holds exactly is the one. No codec is named here: adding one
to the registry is all it takes for derivation to find it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ...errors import DialectError
from .. import ports
from ..bodies import render_body
from ..spec import TOKEN_QUOTE, DialectSpec, PythonBody, format_template
from ..value_codecs import registered_codecs, value_codec
from .probes import (
    PLAIN,
    PROBE_NAME,
    PROBE_RICH_ARGS,
    RICH_TOOLS,
    Probe,
    assistant_turn,
    call_region,
    probe_call,
    render_probe,
)

__all__ = ["TRICKY_ARGS", "codec_choices"]

TRICKY_ARGS: dict[str, Any] = {"zzk_a": "zz\"q'b\\s <a&b>\nü", "zzk_b": 42}
"""A string holding what the syntaxes escape differently."""


def _render(probe: Probe, args: dict[str, Any], *, rich: bool = True) -> str | None:
    """The template's render of the probe conversation with a call of ``args`` (``rich``: the
    probe tool of every argument type; else the plain one the probe's renders have)."""
    return render_probe(
        probe.renderer, probe.shape, assistant_turn(calls=[probe_call(0, args=args)]), rich=rich
    )


def _rich_region(probe: Probe) -> str | None:
    """The reply region of the rich call's render: where it differs from a plain answer's
    render under the same tools."""
    text = _render(probe, dict(PROBE_RICH_ARGS), rich=False)
    if text is not None and all(k in text for k in PROBE_RICH_ARGS):
        return call_region(probe, text).text
    # a template writing the arguments its tool declares: the rich tool, and a plain answer
    # rendered with it
    text = _render(probe, dict(PROBE_RICH_ARGS))
    plain = render_probe(probe.renderer, probe.shape, assistant_turn(content=PLAIN), rich=True)
    if text is None or plain is None:
        return None
    return call_region(replace(probe, plain=plain, prompt=None), text).text


def _call_text(text: str | None) -> str | None:
    start = text.rfind(PROBE_NAME) if text is not None else -1  # the call, not the tool list
    return text[start:] if text is not None and start >= 0 else None


def _candidates(body: PythonBody) -> Iterator[PythonBody]:
    """``body`` under each registered codec and quote, its own first."""
    yield body
    own = value_codec(body.value_codec)
    for codec in registered_codecs():
        if codec.token_quoted:
            if not own.token_quoted:
                continue  # its token comes from the render (``body_shapes``)
            quotes: tuple[str, ...] = (body.string_quote,)
        else:
            quotes = codec.quotes or (TOKEN_QUOTE,)
        for quote in quotes:
            if (codec.name, quote) != (own.name, own.quote_for(body.string_quote)):
                yield body.model_copy(update={"value_codec": codec.name, "string_quote": quote})


def _arguments(body: PythonBody, args: dict[str, Any]) -> str | None:
    """What ``body`` writes after its opener for a call of ``args``."""
    try:
        mine = render_body(body, PROBE_NAME, args, "", 0)
    except (DialectError, ValueError, TypeError, KeyError):
        return None
    head = format_template(body.call_open, name=PROBE_NAME, id="", index=0)
    return mine[len(head) :]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _writes(body: PythonBody, args: dict[str, Any], theirs: str | None, *, exact: bool) -> bool:
    mine = _arguments(body, args)
    if mine is None or theirs is None:
        return False
    return mine in theirs if exact else _squash(mine) in _squash(theirs)


def _reads(spec: DialectSpec, region: str, reader: ports.CallReader) -> bool:
    """The spec's parser reads the template's render of the rich call exactly (an argument
    whose ``None`` the render leaves out, left out)."""
    got = reader(region, spec, tools=RICH_TOOLS)
    want = {k: v for k, v in PROBE_RICH_ARGS.items() if v is not None or k in region}
    return got is not None and got.calls == [(PROBE_NAME, want)]


def codec_choices(
    spec: DialectSpec, probe: Probe, *, reader: ports.CallReader
) -> list[DialectSpec]:
    """``spec`` under the value codecs that could be the template's, best first, ``spec`` as
    found last, each one whose parser (``reader``) reads the template's render of a call with
    arguments of every JSON type back: first those whose ``render_call`` writes that render
    exactly (the one that also writes the tricky strings as the template does first); where
    none does, one that writes it modulo whitespace; then the others, in the registry's order.
    Not a Python-style body: ``[spec]``."""
    body = spec.primary.body
    rendered = _render(probe, dict(PROBE_RICH_ARGS))
    if not isinstance(body, PythonBody) or rendered is None:
        return [spec]
    rich = _call_text(rendered)
    tricky = _render(probe, dict(TRICKY_ARGS))
    rich_args, tricky_args = dict(PROBE_RICH_ARGS), dict(TRICKY_ARGS)
    found = [b for b in _candidates(body) if _writes(b, rich_args, rich, exact=True)]
    found.sort(key=lambda b: not _writes(b, tricky_args, _call_text(tricky), exact=True))
    if not found:
        found = [b for b in _candidates(body) if _writes(b, rich_args, rich, exact=False)][:1]
    # then any codec whose lenient reader reads the render (spacing, commas, quotes aside)
    found += list(_candidates(body))
    region = _rich_region(probe)
    if region is None:
        return [spec]
    unique = {(b.value_codec, b.string_quote): b for b in reversed(found)}
    ordered = sorted(unique.values(), key=found.index)
    choices = [spec if b == body else _with_body(spec, b) for b in ordered]
    kept = [s for s in choices if _reads(s, region, reader)]
    return kept if any(s is spec for s in kept) else [*kept, spec]


def _with_body(spec: DialectSpec, body: PythonBody) -> DialectSpec:
    formats = [
        f.model_copy(update={"body": body}) if f.body == spec.primary.body else f
        for f in spec.formats
    ]
    return spec.model_copy(update={"formats": formats})
