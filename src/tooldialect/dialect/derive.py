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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .derive_body import Found, IdMode, find_body
from .derive_render import ProbeRenderer
from .derive_text import (
    HOLE,
    common_prefix,
    is_marker,
    leading_word,
    lex,
    split_repeat,
    trailing_word,
)
from .spec import (
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

__all__ = ["PROBE_ARGS", "PROBE_NAME", "PROBE_RICH_ARGS", "derive_dialect"]

PROBE_NAME = "zz_probe_fn"
"""Sentinel function name."""
PROBE_ARGS: dict[str, Any] = {"zzk_a": "zzword", "zzk_b": 42}
"""Arguments the structure is read from: render the same as JSON, Python and raw text."""
PROBE_RICH_ARGS: dict[str, Any] = {
    "zzk_a": "zzword",
    "zzk_b": 42,
    "zzk_c": 2.5,
    "zzk_d": True,
    "zzk_e": None,
    "zzk_f": [1, "zzitem"],
    "zzk_g": {"zzk_h": "zzval"},
}
"""Arguments of every JSON type, for the round trip (keys sorted: some templates sort them)."""
PROBE_IDS = ("zzcall001", "zzcall002")
"""Call ids: nine alphanumerics, since Mistral templates reject every other id."""
_OPENAI_ID = "call_zzprobe00000000000000001"
_PLAIN = "zzplain"
_THINK = "zzthink"
_USER = "zzuser"
_SYSTEM = "zzsystem"


def _tool(args: Mapping[str, Any]) -> dict[str, Any]:
    types = {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        list: "array",
        dict: "object",
    }
    props = {
        k: {"type": types.get(type(v), "null"), "description": f"zz {k}"} for k, v in args.items()
    }
    fn = {
        "name": PROBE_NAME,
        "description": "zz probe",
        "parameters": {"type": "object", "properties": props},
    }
    return {"type": "function", "function": fn}


# Templates see a plain schema (some recurse on array/object schemas); the parser sees every type.
_TOOLS = [_tool(PROBE_ARGS)]
_RICH_TOOLS = [_tool(PROBE_RICH_ARGS)]


def derive_dialect(
    template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> DialectSpec | None:
    """A spec read off ``template_source`` (``origin="derived"``), or ``None``.

    ``None`` means the template does not write assistant tool calls (use the polyfill), or wrote
    them in a shape no spec can reproduce. Never raises for a bad template.
    """
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return None
    for probe in _probes(renderer):
        spec = _derive(probe)
        if spec is not None and _validate(spec, probe):
            return spec
    return None


# ---------------------------------------------------------------------------------------------
# Probe conversations


@dataclass
class _Probe:
    """One conversation shape under which a call renders, with the landmarks of its renders."""

    renderer: ProbeRenderer
    shape: int
    plain: str
    one: str
    prompt: str | None
    """The render up to the assistant turn with the generation prompt, if it prefixes ``one``."""
    user_end: str | None
    """The marker closing a user turn."""
    plain_end: str | None
    """The marker closing a plain assistant turn."""


def _call(
    index: int, *, args: Mapping[str, Any] = PROBE_ARGS, call_id: str | None = None
) -> dict[str, Any]:
    return {
        "id": call_id or PROBE_IDS[index],
        "type": "function",
        "function": {"name": PROBE_NAME, "arguments": dict(args)},
    }


def _assistant(
    *, content: str = "", calls: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    # A call-only turn carries content None, as OpenAI clients send it; ChatTemplate then picks
    # what the template needs ("" for most, None for those testing `content is none`).
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content or (None if calls else ""),
        **extra,
    }
    if calls:
        msg["tool_calls"] = calls
    return msg


_SHAPES = 5


def _conversation(shape: int, assistant: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Conversation shape ``shape`` around one assistant turn (templates demand different ones);
    ``None`` gives the messages before the assistant turn."""
    user = {"role": "user", "content": _USER}
    system = {"role": "system", "content": _SYSTEM}
    tail = {"role": "user", "content": "zzagain"}
    tool = {"role": "tool", "tool_call_id": PROBE_IDS[0], "name": PROBE_NAME, "content": "zzresult"}
    before, after = [
        ([user], []),
        ([system, user], []),
        ([user], [tail]),
        ([system, user], [tail]),
        ([user], [tool, tail]),
    ][shape]
    return before if assistant is None else [*before, assistant, *after]


def _render(
    renderer: ProbeRenderer, shape: int, assistant: dict[str, Any], **kwargs: Any
) -> str | None:
    return renderer.render(_conversation(shape, assistant), tools=_TOOLS, **kwargs)


def _marker_after(text: str, word: str) -> str | None:
    """The marker right after ``word`` (whitespace skipped), e.g. the end of a turn."""
    lx = lex(text)
    if word not in lx:
        return None
    rest = [x for x in lx[lx.index(word) + 1 :][:4] if not x.isspace()]
    return rest[0] if rest and is_marker(rest[0]) else None


def _anchor(prompt: str, one: str) -> str | None:
    """Where the model's reply starts in ``one``: the end of the generation prompt, or ``None``.

    A template may write the newline after the assistant role only before content (Qwen2.5:
    ``assistant\n`` in the generation prompt, ``assistant<tool_call>`` in a past call turn). The
    model then writes what follows the role, so the reply starts where the two stop agreeing, as
    long as the prompt only adds whitespace there."""
    if one.startswith(prompt):
        return prompt
    lp, lo = lex(prompt), lex(one)
    k = len("".join(lp[: common_prefix([lp, lo])]))
    return prompt[:k] if k and not prompt[k:].strip() else None


def _probes(renderer: ProbeRenderer) -> Iterator[_Probe]:
    """The first conversation shape under which the probe call renders."""
    for shape in range(_SHAPES):
        plain = _render(renderer, shape, _assistant(content=_PLAIN))
        one = _render(renderer, shape, _assistant(calls=[_call(0)]))
        if plain is None or one is None or PROBE_NAME not in one:
            continue
        prompt = renderer.render(
            _conversation(shape, None), tools=_TOOLS, add_generation_prompt=True
        )
        if prompt is not None:
            prompt = _anchor(prompt, one)
        yield _Probe(
            renderer,
            shape,
            plain,
            one,
            prompt,
            user_end=_marker_after(plain, _USER),
            plain_end=_marker_after(plain, _PLAIN),
        )
        return


# ---------------------------------------------------------------------------------------------
# Reading the spec off the renders


@dataclass
class _Region:
    """Where a call render differs from the plain render: the call as the model writes it."""

    text: str
    plain: str
    """The plain render's differing part."""
    end_of_turn: str | None = None
    """A marker that ends the turn after calls instead of the usual one (``<|eom_id|>``)."""


def _region(probe: _Probe, call: str) -> _Region:
    la, lb = lex(probe.plain), lex(call)
    p = common_prefix([la, lb])
    s = 0
    while s < len(la) - p and s < len(lb) - p and la[-1 - s] == lb[-1 - s]:
        s += 1
    start, end = len("".join(lb[:p])), len(call) - len("".join(lb[len(lb) - s :]))
    plain_start = start
    anchor = len(probe.prompt) if probe.prompt is not None else -1
    if 0 <= anchor < start:
        # text both renders share after the generation prompt is written by the model (``>>>``)
        plain_start -= start - anchor
        start = anchor
    elif start < anchor <= end and probe.plain.startswith(call[:anchor]):
        # the renders differ inside the role header (``assistantzzplain`` vs ``assistant<call>``):
        # the model's reply starts after the generation prompt, never inside the header
        plain_start += anchor - start
        start = anchor
    text = call[start:end]
    plain_text = probe.plain[plain_start : len(probe.plain) - (len(call) - end)]
    usual = probe.plain_end
    named = text.find(PROBE_NAME)
    if usual and usual in text[named:]:
        # the call turn closes with the usual marker and the template writes more after it
        end = start + named + text[named:].index(usual)
        text = call[start:end]
    region = _Region(text, plain_text)
    following = [x for x in lex(call[end:])[:4] if not x.isspace()]
    last = [x for x in lex(text) if not x.isspace()][-1:]
    content_wrapped = any(is_marker(x) for x in lex(plain_text.split(_PLAIN)[0]))
    if (
        usual
        and usual == probe.user_end
        and last
        and is_marker(last[0])
        and last[0] != usual
        and (not following or following[0] != usual)
        and not content_wrapped
    ):
        # the usual end of turn is replaced after calls (``<|eom_id|>``): a stop, not a marker
        region.end_of_turn = last[0]
        region.text = text[: text.rindex(last[0])]
    return region


def _find_all(text: str, count: int, *, args: Mapping[str, Any]) -> list[Found] | None:
    found: list[Found] = []
    pos = 0
    for i in range(count):
        f = find_body(text, pos, name=PROBE_NAME, args=args, call_id=PROBE_IDS[i], index=i)
        if f is None:
            return None
        found.append(f)
        pos = f.end
    return found


def _merge_index(first: Body, second: Body) -> Body | None:
    """``first``'s body with ``{index}`` where the two calls' heads differ by 0 vs 1."""
    if first == second:
        return first
    if type(first) is not type(second):
        return None
    field = "call_open" if isinstance(first, PythonBody) else "head"
    if not isinstance(first, (TaggedBody, ElementBody, PythonBody)):
        return None
    a, b = lex(getattr(first, field)), lex(getattr(second, field))
    if len(a) != len(b):
        return None
    merged = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            merged.append(x)
        elif (x, y) == ("0", "1"):
            merged.append("{index}")
        else:
            return None
    candidate = first.model_copy(update={field: "".join(merged)})
    if candidate.model_copy(update={field: ""}) != second.model_copy(update={field: ""}):
        return None
    return candidate


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


def _envelope(
    probe: _Probe, one_region: str, reasoning: ReasoningMarkers | None
) -> _Envelope | None:
    """Body and envelope markers, from the one-call and (when it renders) two-call regions."""
    ones = _find_all(one_region, 1, args=PROBE_ARGS)
    if ones is None:
        return None
    first = ones[0]
    two = _render(probe.renderer, probe.shape, _assistant(calls=[_call(0), _call(1)]))
    twos = None
    two_region = ""
    if two is not None:
        two_region = _strip_empty_reasoning(_region(probe, two).text, reasoning)
        twos = _find_all(two_region, 2, args=PROBE_ARGS)
    if twos is not None:
        body = _merge_index(twos[0].body, twos[1].body)
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
        if body is None or rep is None:
            return None
        env = _Envelope(
            body, first.id_mode, rep.before, rep.after, rep.open, rep.close, rep.sep, True
        )
        # what the one-call render writes outside the body must be the same envelope
        if one_region[: first.start] != env.section_open + env.call_open:
            return None
    else:
        # parallel calls do not render (Llama 3.1 refuses them): all envelope text is per call
        env = _Envelope(first.body, first.id_mode, "", "", one_region[: first.start], "", "", False)
        env.call_close = one_region[first.end :]
    return _attach_words(env)


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
            body = body.model_copy(update={"tail": _esc(env.call_close)})
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


def _id_template(body: Body) -> str | None:
    """A native call id the template builds from name and index (``functions.{name}:{index}``)."""
    head = body.call_open if isinstance(body, PythonBody) else getattr(body, "head", "")
    word = leading_word(head)
    if "{name}" in word and "{index}" in word:
        return str(word)
    return None


def _strip_empty_reasoning(region: str, reasoning: ReasoningMarkers | None) -> str:
    """Drop an empty reasoning block the template writes before calls."""
    if reasoning is None:
        return region
    # the open marker may sit in the generation prompt, leaving only the close in the turn
    pattern = r"\s*(?:" + re.escape(reasoning.open) + r")?\s*" + re.escape(reasoning.close) + r"\s*"
    return re.sub("^" + pattern, "", region)


def _reasoning(probe: _Probe) -> ReasoningMarkers | None:
    """Markers around ``reasoning_content`` when the template renders it."""
    turns = [{"content": _PLAIN}, {"calls": [_call(0)]}]
    for key, turn in (
        (k, t) for k in ("reasoning_content", "thinking", "reasoning") for t in turns
    ):
        text = _render(probe.renderer, probe.shape, _assistant(**turn, **{key: _THINK}))  # type: ignore[arg-type]
        if text is None or _THINK not in text:
            continue
        lx = lex(text)
        at = lx.index(_THINK) if _THINK in lx else -1
        if at == -1:
            continue
        before = _marker_run(lx[:at][::-1])[::-1]
        after = _marker_run(lx[at + 1 :])
        if before and after and not _wraps_content(probe.plain, before):
            return ReasoningMarkers(open="".join(before).strip(), close="".join(after).strip())
    return None


def _wraps_content(plain: str, opener: list[str]) -> bool:
    """Whether a would-be reasoning opener also opens plain content (``<|message|>``)."""
    lx = lex(plain)
    if _PLAIN not in lx:
        return False
    run = _marker_run(lx[: lx.index(_PLAIN)][::-1])
    return [x for x in run if is_marker(x)] == [x for x in opener if is_marker(x)][-1:]


def _marker_run(lx: list[str]) -> list[str]:
    """Lexemes up to and including the nearest marker (whitespace and at most two words skipped)."""
    for i, x in enumerate(lx[:4]):
        if is_marker(x):
            return lx[: i + 1]
        if not (x.isspace() or x.isalnum()):
            return []
    return []


def _id_format(probe: _Probe, env: _Envelope) -> IdFormat:
    if env.id_mode == "index":
        return "numeric"
    if env.id_mode == "echo":
        call = _call(0, call_id=_OPENAI_ID)
        if _render(probe.renderer, probe.shape, _assistant(calls=[call])) is None:
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


def _derive(probe: _Probe) -> DialectSpec | None:
    region = _region(probe, probe.one)
    reasoning = _reasoning(probe)
    env = _envelope(probe, _strip_empty_reasoning(region.text, reasoning), reasoning)
    if env is None:
        return None
    fmt = CallFormat(
        body=env.body,
        section_open=env.section_open,
        section_close=env.section_close,
        call_open=env.call_open,
        call_close=env.call_close,
        separator=env.separator,
    )
    if not fmt.opener().strip():
        # nothing marks a call: recognise one only at the start of the reply
        fmt = fmt.model_copy(update={"triggers": _triggers(fmt), "at_start_only": True})
    return DialectSpec(
        id="derived",
        family="derived from the chat template",
        origin="derived",
        description=f"read off the template's own render of a probe call ({env.body.kind} body)",
        formats=[fmt],
        reasoning=reasoning,
        stop=[region.end_of_turn] if region.end_of_turn else [],
        id_template=_id_template(env.body) if env.id_mode is None else None,
        id_format=_id_format(probe, env),
        parallel_calls=env.parallel,
    )


# ---------------------------------------------------------------------------------------------
# Validation


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _call_id_for(spec: DialectSpec, index: int) -> str | None:
    body = spec.primary.body
    writes_id = (isinstance(body, JsonBody) and body.id_key is not None) or "{id}" in getattr(
        body, "head", ""
    )
    if writes_id and spec.id_format != "numeric":
        return PROBE_IDS[index]
    return None


def _validate(spec: DialectSpec, probe: _Probe) -> bool:
    """The spec reproduces the template's render of the probe call and reads its own output back."""
    if _leaks_probe(spec):
        return False
    try:
        mine = spec.render_call(PROBE_NAME, PROBE_ARGS, call_id=_call_id_for(spec, 0))
    except Exception:
        return False
    theirs = _region(probe, probe.one).text
    if isinstance(spec.primary.body, PythonBody):
        theirs = theirs.replace("'", '"')  # Python literals: either quote
    if _squash(mine) not in _squash(theirs):
        return False
    return (
        _reads_own_render(spec, _region(probe, probe.one).text)
        and _reproduces_two_calls(spec, probe)
        and _round_trips(spec)
    )


def _reproduces_two_calls(spec: DialectSpec, probe: _Probe) -> bool:
    """Where the template renders two calls, the spec writes them as it does: text that changes
    from call to call (an index outside the body, ``<call id="0">``) cannot hide in a marker."""
    if not spec.parallel_calls:
        return True
    two = _render(probe.renderer, probe.shape, _assistant(calls=[_call(0), _call(1)]))
    if two is None:
        return True
    theirs = _strip_empty_reasoning(_region(probe, two).text, spec.reasoning)
    calls = [(PROBE_NAME, PROBE_ARGS, _call_id_for(spec, i)) for i in range(2)]
    try:
        mine = spec.render_calls(calls)
    except Exception:
        return False
    if isinstance(spec.primary.body, PythonBody):
        theirs = theirs.replace("'", '"')
    return _squash(mine) in _squash(theirs)


_SENTINELS = (PROBE_NAME, *PROBE_IDS, *PROBE_ARGS, "zzword", _USER, _SYSTEM, _PLAIN)


def _leaks_probe(spec: DialectSpec) -> bool:
    """Whether a sentinel (the probe's name, ids, keys or values) ended up as literal marker text:
    the template wrote it somewhere no spec field can stand for it (a whole ``tool_calls`` list
    dumped as JSON, with each id outside the call's own object), so the spec would never match."""
    fmt = spec.primary
    body = fmt.body.model_dump()
    texts = [fmt.section_open, fmt.section_close, fmt.call_open, fmt.call_close, fmt.separator]
    texts += [v for v in body.values() if isinstance(v, str)]
    texts += [json.dumps(body.get("extra", {}))]
    return any(s in t for s in _SENTINELS for t in texts)


def _reads_own_render(spec: DialectSpec, theirs: str) -> bool:
    """The parser built from ``spec`` reads the template's own render of the probe call (as the
    template writes it, which may differ from ``render_call`` in spacing or quoting)."""
    from ..parse import parse_output  # lazily: the parser imports the dialect package

    try:
        parsed = parse_output(theirs, spec, tools=_TOOLS)
    except Exception:
        return False
    calls = list(parsed.tool_calls)
    return len(calls) == 1 and calls[0].name == PROBE_NAME and _args_of(calls[0]) == PROBE_ARGS


def _args_of(call: Any) -> Any:
    args = call.arguments
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return None
    return args


def _round_trips(spec: DialectSpec) -> bool:
    """``render_call`` output, arguments of every JSON type, parses back to the probe call."""
    from ..parse import parse_output  # lazily: the parser imports the dialect package

    text = spec.render_call(PROBE_NAME, PROBE_RICH_ARGS, call_id=_call_id_for(spec, 0))
    try:
        parsed = parse_output(text, spec, tools=_RICH_TOOLS)
    except Exception:
        return False
    calls = list(parsed.tool_calls)
    if len(calls) != 1 or calls[0].name != PROBE_NAME:
        return False
    return bool(_args_of(calls[0]) == PROBE_RICH_ARGS)
