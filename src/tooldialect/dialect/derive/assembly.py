"""Deriving a ``DialectSpec`` from a chat template alone, by rendering sentinel conversations.

The template is rendered with an assistant turn of plain text and again with a sentinel tool call
(name ``zz_probe_fn``, sentinel arguments). The text that differs is the call as the template
writes it; finding the sentinels in it gives the body shape (JSON object, tag + JSON, tag + one
element per argument, Python call), and a render with two parallel calls shows which markers repeat
per call (``call_open``/``call_close``), which are written once (``section_open``/``close``) and
what separates calls. Reasoning markers come from a render with ``reasoning_content`` set.

Nothing here knows a family: markers are read off renders, never written in. A derived spec is
only returned once it round-trips: ``render_call`` must reproduce the template's own render of the
probe call (modulo whitespace) and the parser must read the probe back.

This module reads the spec off the renders. The probe conversations, their sentinels and the
region of a render that holds the call are in ``probes.py``; the checks a derived spec must
pass before it is returned are in ``acceptance.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..element_values import json_type
from ..families.common import THINK
from ..ports import CallReader
from ..spec import (
    Body,
    CallFormat,
    DialectSpec,
    ElementBody,
    IdFormat,
    JsonBody,
    PythonBody,
    ReasoningMarkers,
    TaggedBody,
    Trigger,
)
from .acceptance import validate
from .body_shapes import Found, IdMode, find_body
from .instructions import derive_from_instructions, instruction_spelling
from .lexemes import (
    HOLE,
    common_prefix,
    is_marker,
    leading_word,
    lex,
    split_repeat,
    trailing_word,
)
from .message_headers import with_messages
from .probe_renderer import ProbeRenderer
from .probes import (
    OPENAI_ID,
    PLAIN,
    PROBE_ARGS,
    PROBE_IDS,
    PROBE_NAME,
    PROBE_RICH_ARGS,
    THINK_TEXT,
    Probe,
    assistant_turn,
    call_region,
    probe_call,
    probes,
    render_probe,
    strip_empty_reasoning,
    writes_id_for_name,
)
from .value_layout import learn_values
from .value_syntax import codec_choices

__all__ = ["content_wrapper", "derive_dialect", "template_reasoning"]


def derive_dialect(
    template_source: str, *, reader: CallReader, bos_token: str = "", eos_token: str = ""
) -> DialectSpec | None:
    """A spec read off ``template_source`` (``origin="derived"``), or ``None``.

    A candidate is kept only where its parser (``reader``: ``tooldialect.verify.read_calls``,
    which ``tooldialect.derive_dialect`` passes) reads the template's own render of the probe
    call and its own ``render_call`` back.

    ``None`` means the template does not write assistant tool calls (use the polyfill), or wrote
    them in a shape no spec can reproduce. Never raises for a bad template.
    """
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return None
    for probe in probes(renderer):
        # a call in a message addressed to the tool (`` to=NAME<|message|>``) is tried only
        # where the whole region, header and all, reads as no call layout
        for addressed in (False, True):
            spec = _valid(_derive(probe, addressed=addressed), probe, reader)
            if spec is not None:
                spec = with_messages(spec, probe, reader=reader)
                return instruction_spelling(spec, probe.instructions)
    if writes_id_for_name(renderer):
        named = ProbeRenderer(
            template_source, bos_token=bos_token, eos_token=eos_token, named_ids=True
        )
        for probe in probes(named):
            spec = _valid(_derive(probe), probe, reader)
            if spec is not None:
                return instruction_spelling(spec, probe.instructions)
    # no past call renders (or none a spec reproduces): the tool instructions may show one
    return derive_from_instructions(renderer, reader=reader)


def _valid(spec: DialectSpec | None, probe: Probe, reader: CallReader) -> DialectSpec | None:
    """The first of ``spec``'s value codec choices (``value_syntax``) that passes the checks."""
    if spec is None:
        return None
    choices = codec_choices(spec, probe, reader=reader)
    return next((c for c in choices if validate(c, probe, reader=reader)), None)


def template_reasoning(
    template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> ReasoningMarkers | None:
    """The markers the template writes around a past turn's reasoning, or ``None`` when it
    renders none (or renders no past call to probe with)."""
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return None
    return next((_reasoning(probe) for probe in probes(renderer)), None)


# ---------------------------------------------------------------------------------------------
# Reading the spec off the renders


def _find_all(
    text: str, count: int, *, args: Mapping[str, Any], counters: bool = True
) -> list[Found] | None:
    found: list[Found] = []
    pos = 0
    for i in range(count):
        f = find_body(
            text,
            pos,
            name=PROBE_NAME,
            args=args,
            call_id=PROBE_IDS[i],
            index=i,
            counters=counters,
        )
        if f is None:
            return None
        found.append(f)
        pos = f.end
    return found


def _merge_index(first: Body, second: Body) -> tuple[Body, int] | None:
    """``first``'s body with ``{index}`` where the two calls' heads differ by 0 vs 1 (or by 1
    vs 2: the template counts from 1), and what the index counts from."""
    if first == second:
        return first, 0
    if type(first) is not type(second):
        return None
    field = "call_open" if isinstance(first, PythonBody) else "head"
    if not isinstance(first, (TaggedBody, ElementBody, PythonBody)):
        return None
    a, b = lex(getattr(first, field)), lex(getattr(second, field))
    if len(a) != len(b):
        return None
    merged, bases = [], set()
    for x, y in zip(a, b, strict=True):
        if x == y:
            merged.append(x)
        elif (x, y) in (("0", "1"), ("1", "2")):
            merged.append("{index}")
            bases.add(int(x))
        else:
            return None
    candidate = first.model_copy(update={field: "".join(merged)})
    if len(bases) > 1 or candidate.model_copy(update={field: ""}) != second.model_copy(
        update={field: ""}
    ):
        return None
    return candidate, next(iter(bases), 0)


@dataclass
class _Envelope:
    body: Body
    id_mode: IdMode | None
    section_open: str
    section_close: str
    call_open: str
    call_close: str
    separator: str
    parallel: bool
    optional: list[str] = field(default_factory=list)
    """Markers the two-call render writes and the one-call render leaves out."""
    index_base: int = 0
    id_template: str | None = None
    """An id the template builds around the call's index (``call-{index}``)."""


_MAX_HEADER = 40


def _addressed_header(region: str) -> str:
    """The message header a call region opens with when it names the tool before its first
    marker (`` to=NAME<|message|>``): the call is a message addressed to the tool, its body
    the call as the model writes it (``spec.messages`` reads such headers), ``""`` otherwise."""
    lx = lex(region)
    at = next((i for i, x in enumerate(lx) if is_marker(x)), -1)
    head = "".join(lx[:at])
    if at <= 0 or len(head) > _MAX_HEADER or PROBE_NAME not in head:
        return ""
    return head + lx[at]


def _addressed(env: _Envelope, header: str) -> _Envelope:
    """The envelope with the message header that addresses the tool first in the body's head:
    the header (naming the tool) is the call's opener, as in harmony's builtin."""
    body = env.body
    if not isinstance(body, (TaggedBody, ElementBody, PythonBody)):
        return env
    field = "call_open" if isinstance(body, PythonBody) else "head"
    opener = _named(header) + _esc(env.call_open)
    env.body = body.model_copy(update={field: opener + getattr(body, field)})
    env.call_open = ""
    return env


def _addressed_trigger(header: str) -> Trigger:
    """Fire on a header that addresses an offered tool (``to=NAME<|message|>``), not on any
    ``to=`` in prose."""
    before, after = header.split(PROBE_NAME, 1)
    return Trigger(kind="pattern", value=f"({re.escape(before.strip())}){{name}}{re.escape(after)}")


def _headless(fmt: CallFormat, header: str) -> list[CallFormat]:
    """For a call addressed by its message header: the layout of the message's body alone, read
    only (a header parser routes the message, then reads its body by the formats)."""
    body = fmt.body
    field = "call_open" if isinstance(body, PythonBody) else "head"
    text = getattr(body, field, "")
    if not header or not text.startswith(_named(header)):
        return []
    inner = body.model_copy(update={field: text[len(_named(header)) :]})
    return [fmt.model_copy(update={"body": inner, "parse_only": True})]


def _envelope(
    probe: Probe,
    one_region: str,
    reasoning: ReasoningMarkers | None,
    channel: list[str],
    *,
    addressed: bool = False,
) -> _Envelope | None:
    """Body and envelope markers, from the one-call and (when it renders) two-call regions.
    Calls in messages addressed to the tool are one a message: the one-call region says all."""
    ones = _find_all(one_region, 1, args=PROBE_ARGS)
    if ones is None:
        return None
    first = ones[0]
    calls = [probe_call(0), probe_call(1)]
    two = (
        None
        if addressed
        else render_probe(probe.renderer, probe.shape, assistant_turn(calls=calls))
    )
    twos = None
    two_region = ""
    if two is not None:
        two_region = _outside_channel(
            strip_empty_reasoning(call_region(probe, two).text, reasoning),
            channel,
            _after_answer(probe),
        )
        twos = _find_all(two_region, 2, args=PROBE_ARGS)
        if twos is not None and twos[0].id_template != twos[1].id_template:
            # text that held the index on one call is the same on both: a constant key
            twos = _find_all(two_region, 2, args=PROBE_ARGS, counters=False)
            ones = _find_all(one_region, 1, args=PROBE_ARGS, counters=False)
            if ones is None:
                return None
            first = ones[0]
    if twos is not None:
        merged = _merge_index(twos[0].body, twos[1].body)
        holes = (f"{HOLE}1{HOLE}", f"{HOLE}2{HOLE}")
        f1, f2 = twos
        text = (
            two_region[: f1.start]
            + holes[0]
            + two_region[f1.end : f2.start]
            + holes[1]
            + two_region[f2.end :]
        )
        rep = split_repeat(text, *holes)
        if merged is None or rep is None or twos[0].id_template != twos[1].id_template:
            return None
        env = _Envelope(
            merged[0], first.id_mode, rep.before, rep.after, rep.open, rep.close, rep.sep, True
        )
        env.index_base = merged[1]
        if first.id_template != twos[0].id_template:
            return None
        # what the one-call render writes outside the body must be the same envelope
        if one_region[: first.start] != env.section_open + env.call_open:
            return None
        env.optional = _dropped_close(one_region[first.end :], env)
    else:
        # parallel calls do not render (Llama 3.1 refuses them): all envelope text is per call
        env = _Envelope(first.body, first.id_mode, "", "", one_region[: first.start], "", "", False)
        env.call_close = one_region[first.end :]
    env.id_template = first.id_template
    return _attach_words(env)


def _dropped_close(after: str, env: _Envelope) -> list[str]:
    """``[section_close]`` where a lone call's render ends at its ``call_close`` and leaves the
    section closer out (a template that writes it only after a second call): the parser must
    read a call without it, while ``render_call`` still writes it."""
    rest = after.strip()
    close = env.call_close.strip()
    if not env.section_close.strip() or not rest.startswith(close):
        return []
    tail = rest[len(close) :].strip()
    return [env.section_close.strip()] if not tail.startswith(env.section_close.strip()) else []


def _attach_words(env: _Envelope) -> _Envelope:
    """Move text glued to the body (``functions.``, ``<function=``, ``)``) from the envelope."""
    body = env.body
    if isinstance(body, (TaggedBody, ElementBody)):
        word = trailing_word(env.call_open)
        if word:
            env.call_open = env.call_open[: -len(word)]
            body = body.model_copy(update={"head": _esc(word) + body.head})
        if isinstance(body, ElementBody) and not body.tail and env.call_close.strip():
            # the closer ends the parameter list: the parser looks for it before each parameter
            body = body.model_copy(update={"tail": _named(env.call_close)})
            env.call_close = ""
        elif PROBE_NAME in env.call_close and not body.tail:
            # a closer repeating the name (``</{name}>``) belongs to the body, not the envelope
            body = body.model_copy(update={"tail": _named(env.call_close)})
            env.call_close = ""
    elif isinstance(body, PythonBody):
        word = trailing_word(env.call_open)
        if word:
            env.call_open = env.call_open[: -len(word)]
            body = body.model_copy(update={"call_open": _esc(word) + body.call_open})
        if not env.call_close.startswith(body.call_close):
            return env
        env.call_close = env.call_close[len(body.call_close) :]
    env.body = body
    return env


def _esc(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _named(text: str) -> str:
    """Literal template text with the probe's name as ``{name}``."""
    return _esc(text).replace(PROBE_NAME, "{name}")


def _id_template(body: Body) -> str | None:
    """A native call id the template builds from name and index (``functions.{name}:{index}``)."""
    head = body.call_open if isinstance(body, PythonBody) else getattr(body, "head", "")
    word = leading_word(head)
    if "{name}" in word and "{index}" in word:
        return str(word)
    return None


def _reasoning(probe: Probe) -> ReasoningMarkers | None:
    """Markers around ``reasoning_content`` when the template renders it."""
    turns: list[dict[str, Any]] = [{"content": PLAIN}, {"calls": [probe_call(0)]}]
    for key, turn in (
        (k, t) for k in ("reasoning_content", "thinking", "reasoning") for t in turns
    ):
        text = render_probe(
            probe.renderer, probe.shape, assistant_turn(**{**turn, key: THINK_TEXT})
        )
        if text is None or THINK_TEXT not in text:
            continue
        lx = lex(text)
        at = lx.index(THINK_TEXT) if THINK_TEXT in lx else -1
        if at == -1:
            continue
        before = _marker_run(lx[:at][::-1])[::-1]
        after = _marker_run(lx[at + 1 :])
        before, after = _named_block(
            lx[: at - len(before)], before, after, lx[at + 1 + len(after) :]
        )
        if before and after and not _wraps_content(probe.plain, before):
            return ReasoningMarkers(open="".join(before).strip(), close="".join(after).strip())
    return None


def _named_block(
    ahead: list[str], before: list[str], after: list[str], behind: list[str]
) -> tuple[list[str], list[str]]:
    """The runs around reasoning widened to a marker, a word and a marker where both name the
    block with the same word (``<|open|>think<|sep|>`` ... ``<|close|>think<|sep|>``)."""
    if not before or not after or len(ahead) < 2 or len(behind) < 2:
        return before, after
    word, opener = ahead[-1], ahead[-2]
    if word.isalnum() and is_marker(opener) and behind[0] == word and is_marker(behind[1]):
        return [opener, word, *before], [*after, word, behind[1]]
    return before, after


def _wraps_content(plain: str, opener: list[str]) -> bool:
    """Whether a would-be reasoning opener also opens plain content (``<|message|>``)."""
    lx = lex(plain)
    if PLAIN not in lx:
        return False
    ahead = lx[: lx.index(PLAIN)]
    run = _marker_run(ahead[::-1])
    if len(opener) >= 3 and opener[1].isalnum() and is_marker(opener[0]):
        # a named opener (``<|open|>think<|sep|>``) opens content only under the same name
        named = ahead[len(ahead) - len(run) - 2 :]
        return "".join(named).strip() == "".join(opener).strip()
    return [x for x in run if is_marker(x)] == [x for x in opener if is_marker(x)][-1:]


def _marker_run(lx: list[str]) -> list[str]:
    """Lexemes up to and including the nearest marker (whitespace and at most two words skipped)."""
    for i, x in enumerate(lx[:4]):
        if is_marker(x):
            return lx[: i + 1]
        if not (x.isspace() or x.isalnum()):
            return []
    return []


def _id_format(probe: Probe, env: _Envelope) -> IdFormat:
    if env.id_mode == "index":
        return "numeric"
    if env.id_mode == "echo":
        call = probe_call(0, call_id=OPENAI_ID)
        if render_probe(probe.renderer, probe.shape, assistant_turn(calls=[call])) is None:
            return "alnum9"  # the template refuses OpenAI-style ids but took nine alphanumerics
    return "openai"


def _triggers(fmt: CallFormat) -> list[Trigger]:
    """A pattern trigger for a bare JSON call; other markerless layouts get none, since a bare
    name would fire on ordinary prose."""
    body = fmt.body
    if isinstance(body, JsonBody):
        named = body.arguments_key if body.arguments_first else body.name_key
        first = body.id_key if body.id_key and body.id_first else next(iter(body.extra), named)
        if first is None:
            return [Trigger(kind="pattern", value=r'^\s*(\{\s*")')]
        return [Trigger(kind="pattern", value=r'^\s*(\{\s*"' + re.escape(first) + r'"\s*:)')]
    return []


def content_wrapper(plain: str) -> list[str]:
    """Markers around a plain answer in its turn (``<|open|>response<|sep|>`` ...
    ``<|close|>response<|sep|>``): the answer sits in a channel, and the markers are not content."""
    if PLAIN not in plain:
        return []
    before, after = (part.strip() for part in plain.split(PLAIN, 1))
    return [w for w in (before, after) if w and any(is_marker(x) for x in lex(w))]


def _learn_types(probe: Probe, body: ElementBody) -> ElementBody:
    """``body.type_names`` for every JSON type, read off a render with arguments of each type."""
    text = render_probe(
        probe.renderer,
        probe.shape,
        assistant_turn(calls=[probe_call(0, args=PROBE_RICH_ARGS)]),
        rich=True,
    )
    if text is None:
        return body
    pre = body.param.split("{type}", 1)[0].split("{key}", 1)[-1].replace("{{", "{")
    names = dict(body.type_names)
    start = text.rfind(PROBE_NAME)  # the call, not the tool list's keys
    for key, value in PROBE_RICH_ARGS.items():
        at = text.find(key, start)
        k = text.find(pre, at) if at >= 0 and pre else -1
        m = _WORD.match(text, k + len(pre)) if k >= 0 else None
        if m:
            names.setdefault(json_type(value), m.group(0))
    return body.model_copy(update={"type_names": names})


_WORD = re.compile(r"\w+")


def _plain_reply(probe: Probe, reasoning: ReasoningMarkers | None) -> str:
    """A plain answer's whole reply, from the generation prompt to its end-of-turn marker (an
    empty reasoning block dropped): the answer's channel markers are read off it."""
    if probe.prompt is None or not probe.plain.startswith(probe.prompt):
        return ""
    reply = probe.plain[len(probe.prompt) :]
    if probe.plain_end and PLAIN in reply:
        k = reply.find(probe.plain_end, reply.index(PLAIN))
        reply = reply[: k + len(probe.plain_end)] if k >= 0 else reply
    return strip_empty_reasoning(reply, reasoning)


def _channel(reply: str) -> list[str]:
    """The answer channel's markers (``<answer>``, ``</answer>``) when a plain reply opens one
    before the answer; ``[]`` when the answer is bare (its end of turn is no channel)."""
    wrapper = content_wrapper(reply)
    if PLAIN not in reply or not reply.split(PLAIN, 1)[0].strip():
        return []
    return wrapper


def _after_answer(probe: Probe) -> str:
    """What the plain render writes after the answer (its channel's closer, the turn's end)."""
    return probe.plain.split(PLAIN, 1)[1] if PLAIN in probe.plain else ""


def _outside_channel(region: str, wrapper: list[str], answer_tail: str = "") -> str:
    """The call region less the answer channel's opener the call sits inside (Hunyuan's
    ``<answer>\n<tool_calls>[...]``): the channel is content markup, the call starts at the
    marker after it. A region that continues the opener with a word (``<|open|>calls``, next to
    ``<|open|>response``) keeps it: that opener is the call's own."""
    head = wrapper[0] if wrapper else ""
    body = region.lstrip()
    if not head or not body.startswith(head):
        return region
    inner = body[len(head) :].lstrip()
    rest = lex(inner)
    if not rest or not is_marker(rest[0]):
        return region
    # an empty channel before the calls (``<|open|>response<|sep|><|close|>response<|sep|>``):
    # its closer is what a plain answer is followed by, and is no call marker either
    closed = lex(answer_tail)
    k = common_prefix([rest, closed])
    shut = rest[:k]
    if shut and is_marker(shut[0]) and all(is_marker(x) or x.isalnum() for x in shut):
        return "".join(rest[k:]).lstrip()
    return inner


def _derive(probe: Probe, *, addressed: bool = False) -> DialectSpec | None:
    region = call_region(probe, probe.one)
    reasoning = _reasoning(probe)
    # the spec reasons in <think> when the template shows no markers: an empty block of those
    # before the calls is reasoning too, as the checks read it
    marks = reasoning or THINK
    channel = _channel(_plain_reply(probe, marks))
    text = _outside_channel(
        strip_empty_reasoning(region.text, marks), channel, _after_answer(probe)
    )
    header = _addressed_header(text) if addressed else ""
    if addressed and not header:
        return None
    env = _envelope(probe, text[len(header) :], marks, channel, addressed=bool(header))
    if env is None:
        return None
    if header:
        env = _addressed(env, header)
    fmt = CallFormat(
        body=env.body,
        section_open=env.section_open,
        section_close=env.section_close,
        call_open=env.call_open,
        call_close=env.call_close,
        separator=env.separator,
        optional_markers=env.optional,
        index_base=env.index_base,
    )
    if header:
        fmt = fmt.model_copy(update={"triggers": [_addressed_trigger(header)]})
    if not fmt.opener().strip():
        # nothing marks a call: recognise one only at the start of the reply
        fmt = fmt.model_copy(update={"triggers": _triggers(fmt), "at_start_only": True})
    if isinstance(fmt.body, ElementBody) and "{type}" in fmt.body.param:
        fmt = fmt.model_copy(update={"body": _learn_types(probe, fmt.body)})
    if isinstance(fmt.body, ElementBody):
        fmt = fmt.model_copy(update={"body": learn_values(probe, fmt.body)})
    return DialectSpec(
        id="derived",
        family="derived from the chat template",
        origin="derived",
        description=f"read off the template's own render of a probe call ({env.body.kind} body)",
        formats=[fmt, *_headless(fmt, header)],
        # models reason in <think> their template never shows: a call quoted there must not run
        reasoning=reasoning or THINK,
        strip=list(dict.fromkeys([*content_wrapper(region.plain), *channel])),
        stop=[region.end_of_turn] if region.end_of_turn else [],
        id_template=env.id_template or (_id_template(env.body) if env.id_mode is None else None),
        id_format=_id_format(probe, env),
        parallel_calls=env.parallel,
    )
