"""Dialect detection: which builtin a template speaks, else a derived spec, else the polyfill.

Each builtin declares ``signatures`` (text its templates' sources contain, see
``registry.Signature``) and a ``priority``; detection walks them most specific first and takes the
first match. A builtin picked by signature is only a guess: it is kept when it reads the
template's own rendering of a past call exactly (``ports.OwnCallCheck``); otherwise the spec
derived from the template is used when it does. A builtin that reads no call at all from the
template's render of the probe call is never kept: the derived spec, else the polyfill with a
warning naming the call text. Nothing here names a family: adding a family means adding a
builtin with signatures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import TemplateError
from ..prompt.template import ChatTemplate
from . import ports
from .builtins import THINK, builtin_signatures, get_builtin
from .derive import (
    INSTRUCTIONS_FAMILY,
    derive_dialect,
    reads_instruction_example,
    reads_no_probe_call,
    template_reasoning,
)
from .spec import DialectSpec, ReasoningMarkers
from .vocabulary import Vocabulary, fit_to_vocabulary, hinted_builtins

__all__ = ["Detection", "detect_builtin", "detect_dialect", "explain_detection"]

POLYFILL_ID = "polyfill-json"

Chosen = Literal["builtin", "derived", "polyfill"]


@dataclass(frozen=True)
class Detection:
    """What detection decided and why (``tooldialect inspect`` prints it)."""

    spec: DialectSpec
    chosen: Chosen
    tried: str | None = None
    """The builtin a signature (or the vocabulary) picked, if any."""
    tried_agrees: bool | None = None
    """Whether it read the template's own call exactly (``None``: nothing to check against)."""
    reason: str = ""
    """Why ``tried`` was kept or rejected, or why nothing was tried."""
    derived_agrees: bool | None = None
    """Whether the derived spec read the template's own call (``None``: not derived, or nothing
    to check against)."""
    warning: str = ""
    """Set when tools fall back to the polyfill although the template writes calls: names the
    call text no spec reads (``tooldialect inspect`` and the front end show it)."""

    def summary(self) -> dict[str, object]:
        """A JSON-ready view."""
        return {
            "chosen": self.chosen,
            "dialect": self.spec.id,
            "tried_builtin": self.tried,
            "tried_agrees": self.tried_agrees,
            "derived_agrees": self.derived_agrees,
            "reason": self.reason,
            "warning": self.warning,
        }


def detect_builtin(template_source: str | None) -> str | None:
    """The id of the builtin whose signature the template source matches first, or ``None``."""
    src = template_source or ""
    for name, signatures in builtin_signatures():
        if any(sig.matches(src) for sig in signatures):
            return name
    return None


def detect_dialect(
    template_source: str | ChatTemplate | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
    vocabulary: Vocabulary | None = None,
    check: ports.OwnCallCheck,
    reader: ports.CallReader,
) -> DialectSpec:
    """The dialect a chat template's model writes tool calls in.

    ``template_source``: the template's Jinja source, or a ``ChatTemplate`` (its source, and its
    ``bos_token``/``eos_token`` where these are not given).

    With ``builtins=True``: the builtin whose signature matches, if it reads the template's own
    rendering of a past call exactly; else a spec derived from the template (``dialect.derive``)
    that does; else the builtin; else the ``polyfill-json`` polyfill. ``builtins=False`` skips the
    builtins and derives. ``vocabulary`` (the model's tokens, optional) adds evidence: see
    ``dialect.vocabulary``. ``check`` (does a spec read the template's own call?) and
    ``reader`` (a spec's parser, for derivation) sit above ``dialect/``: ``tooldialect.verify``
    has them (``check_own_call``, ``read_calls``), and ``tooldialect.detect_dialect`` passes them.
    """
    return explain_detection(
        template_source,
        bos_token=bos_token,
        eos_token=eos_token,
        builtins=builtins,
        vocabulary=vocabulary,
        check=check,
        reader=reader,
    ).spec


def explain_detection(
    template_source: str | ChatTemplate | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
    vocabulary: Vocabulary | None = None,
    check: ports.OwnCallCheck,
    reader: ports.CallReader,
) -> Detection:
    """``detect_dialect``, with the decision record."""
    if isinstance(template_source, ChatTemplate):
        bos_token = bos_token or template_source.bos_token
        eos_token = eos_token or template_source.eos_token
        template_source = template_source.source
    if not isinstance(template_source, (str, type(None))):
        raise TemplateError(
            "detect_dialect takes a chat template's source text or a ChatTemplate, got "
            f"{type(template_source).__name__}"
        )
    src = template_source or ""
    found = _decide(src, bos_token, eos_token, builtins, vocabulary, check, reader)
    if vocabulary is None:
        return found
    spec = fit_to_vocabulary(found.spec, vocabulary)
    return Detection(
        spec,
        found.chosen,
        found.tried,
        found.tried_agrees,
        found.reason,
        found.derived_agrees,
        found.warning,
    )


def _decide(
    src: str,
    bos_token: str,
    eos_token: str,
    builtins: bool,
    vocabulary: Vocabulary | None,
    check: ports.OwnCallCheck,
    reader: ports.CallReader,
) -> Detection:
    def verdict(spec: DialectSpec) -> ports.Agreement:
        return check(spec, src, bos_token=bos_token, eos_token=eos_token)

    name = detect_builtin(src) if builtins else None
    # a special token the model was trained on outweighs prose; a text signature does not
    by_signature = name is not None
    if name is None and builtins and vocabulary is not None:
        name = next(iter(hinted_builtins(vocabulary, src)), None)
    derived = _derive(src, bos_token, eos_token, reader) if name is None else None
    if name is None:
        if derived is not None:
            return Detection(derived, "derived", reason="no builtin signature matched")
        return Detection(_polyfill_for(src, vocabulary), "polyfill", reason="nothing derived")
    builtin = get_builtin(name)
    tried = verdict(builtin)
    if tried.ok is None and by_signature:
        shown = _instructed(builtin, _derive(src, bos_token, eos_token, reader), reader)
        if shown is not None:
            why = "rejected: it cannot read the call example of the template's tool instructions"
            return Detection(shown, "derived", name, None, why)
    if tried.ok is not False:
        why = "reads the template's own call" if tried.ok else tried.reason
        kept = _fit_reasoning(builtin, src, bos_token, eos_token)
        if kept is not builtin:
            why += "; reasoning markers as the template writes them"
        return Detection(kept, "builtin", name, tried.ok, why)
    derived = _derive(src, bos_token, eos_token, reader)
    theirs = verdict(derived) if derived is not None else None
    derived_ok = None if theirs is None else theirs.ok
    if derived is not None and derived_ok:
        return Detection(derived, "derived", name, False, f"rejected: {tried.reason}", True)
    blind = reads_no_probe_call(
        builtin, src, reader=reader, bos_token=bos_token, eos_token=eos_token
    )
    if blind is None:
        why = f"kept although it {tried.reason}: derivation does no better"
        return Detection(builtin, "builtin", name, False, why, derived_ok)
    # a guess that reads none of the template's calls is never kept: the derived spec at least
    # reads the probe call it was learnt from
    why = f"rejected: it {blind.describe()} (and {tried.reason})"
    if derived is not None:
        return Detection(derived, "derived", name, False, why, derived_ok)
    warning = f"no dialect reads this template's calls, such as {blind.text[:120]!r}; polyfilled"
    polyfill = _polyfill_for(src, vocabulary)
    return Detection(polyfill, "polyfill", name, False, f"{why}; {warning}", None, warning)


def _instructed(
    builtin: DialectSpec, derived: DialectSpec | None, reader: ports.CallReader
) -> DialectSpec | None:
    """For a template that renders no past call: the spec read off its tool instructions when
    ``builtin`` cannot read the example they show (the builtin's formats stay readable, as
    parse-only variants), else ``None``."""
    if derived is None or derived.family != INSTRUCTIONS_FAMILY:
        return None
    if reads_instruction_example(builtin, derived, reader=reader):
        return None
    variants = [f.model_copy(update={"parse_only": True}) for f in builtin.formats]
    return derived.model_copy(update={"formats": [*derived.formats, *variants]})


def _fit_reasoning(spec: DialectSpec, src: str, bos_token: str, eos_token: str) -> DialectSpec:
    """``spec`` with the template's reasoning markers when the template writes reasoning in
    markers the builtin does not know and never mentions the builtin's (a family that took
    hermes' call tags but writes ``<thought>``): a block the model opens with them must be
    reasoning, and a call quoted in it must not run. The builtin's markers stay readable."""
    own = spec.reasoning
    if own is not None and (own.open in src or own.close in src):
        return spec
    found = template_reasoning(src, bos_token=bos_token, eos_token=eos_token)
    if found is None or (own is not None and (found.open, found.close) == (own.open, own.close)):
        return spec
    if own is None:
        return spec.model_copy(update={"reasoning": found})
    merged = ReasoningMarkers(
        open=found.open,
        close=found.close,
        answer_open=own.answer_open,
        alt_open=[m for m in (own.open, *own.alt_open) if m != found.open],
        alt_close=[m for m in (own.close, *own.alt_close) if m != found.close],
        calls_end_unclosed=own.calls_end_unclosed,
    )
    return spec.model_copy(update={"reasoning": merged})


def _derive(
    src: str, bos_token: str, eos_token: str, reader: ports.CallReader
) -> DialectSpec | None:
    if not src.strip():
        return None
    return derive_dialect(src, reader=reader, bos_token=bos_token, eos_token=eos_token)


def _polyfill_for(src: str, vocabulary: Vocabulary | None = None) -> DialectSpec:
    spec = get_builtin(POLYFILL_ID)
    thinks = THINK.close in src or (vocabulary is not None and vocabulary.has_special(THINK.close))
    if thinks and spec.reasoning is None:
        return spec.model_copy(update={"reasoning": THINK})
    return spec
