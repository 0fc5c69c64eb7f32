"""The probe conversations derivation renders, and the region of a render that holds the call.

``assembly.py`` reads a spec off these renders; ``acceptance.py`` checks the spec against them.
Sentinels: a function ``zz_probe_fn`` called with arguments whose keys and values no template
writes by itself, ids of nine alphanumerics, and plain, user and system texts of the same kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..spec import ReasoningMarkers
from .lexemes import common_prefix, is_marker, lex
from .probe_renderer import ProbeRenderer

__all__ = [
    "OPENAI_ID",
    "PLAIN",
    "PROBE_ARGS",
    "PROBE_IDS",
    "PROBE_NAME",
    "PROBE_RICH_ARGS",
    "RICH_TOOLS",
    "SYSTEM",
    "THINK_TEXT",
    "TOOLS",
    "USER",
    "Probe",
    "Region",
    "assistant_turn",
    "call_region",
    "header_rest",
    "probe_call",
    "probes",
    "render_probe",
    "strip_empty_reasoning",
    "writes_id_for_name",
]

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
    "zzk_fs": [1, "zzitem"],
    "zzk_g": {"zzk_h": "zzval"},
}
"""Arguments of every JSON type, for the round trip (keys sorted: some templates sort them)."""
PROBE_IDS = ("zzcall001", "zzcall002")
"""Call ids: nine alphanumerics, since Mistral templates reject every other id."""
OPENAI_ID = "call_zzprobe00000000000000001"
PLAIN = "zzplain"
THINK_TEXT = "zzthink"
USER = "zzuser"
SYSTEM = "zzsystem"


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
TOOLS = [_tool(PROBE_ARGS)]
RICH_TOOLS = [_tool(PROBE_RICH_ARGS)]


# ---------------------------------------------------------------------------------------------
# Probe conversations


@dataclass
class Probe:
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
    prompt_tail: str = ""
    """Whitespace the generation prompt writes past ``prompt`` (the anchor): ``assistant\n``
    where a past call's header reads ``assistant:calls\n``."""
    instructions: str = ""
    """Marker text the render writes only when tools are given (the tool instructions)."""


def probe_call(
    index: int, *, args: Mapping[str, Any] = PROBE_ARGS, call_id: str | None = None
) -> dict[str, Any]:
    return {
        "id": call_id or PROBE_IDS[index],
        "type": "function",
        "function": {"name": PROBE_NAME, "arguments": dict(args)},
    }


def assistant_turn(
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
    user = {"role": "user", "content": USER}
    system = {"role": "system", "content": SYSTEM}
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


def render_probe(
    renderer: ProbeRenderer,
    shape: int,
    assistant: dict[str, Any],
    *,
    rich: bool = False,
    **kwargs: Any,
) -> str | None:
    """Conversation ``shape`` around ``assistant``, with the probe tool (of every argument type
    when ``rich``); ``None`` when the template refuses it."""
    tools = RICH_TOOLS if rich else TOOLS
    return renderer.render(_conversation(shape, assistant), tools=tools, **kwargs)


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


def probes(renderer: ProbeRenderer) -> Iterator[Probe]:
    """The first conversation shape under which the probe call renders."""
    for shape in range(_SHAPES):
        plain = render_probe(renderer, shape, assistant_turn(content=PLAIN))
        one = render_probe(renderer, shape, assistant_turn(calls=[probe_call(0)]))
        if plain is None or one is None or PROBE_NAME not in one:
            continue
        full = renderer.render(_conversation(shape, None), tools=TOOLS, add_generation_prompt=True)
        prompt = _anchor(full, one) if full is not None else None
        bare = renderer.render(_conversation(shape, None), add_generation_prompt=True)
        shown = {x for x in lex(full or "") if is_marker(x)} - set(lex(bare or ""))
        yield Probe(
            renderer,
            shape,
            plain,
            one,
            prompt,
            user_end=_marker_after(plain, USER),
            plain_end=_marker_after(plain, PLAIN),
            prompt_tail=full[len(prompt) :] if full is not None and prompt is not None else "",
            instructions="".join(sorted(shown)),
        )
        return


def writes_id_for_name(renderer: ProbeRenderer) -> bool:
    """Whether a past call renders its id but not its name (the template writes the id where the
    model writes ``functions.NAME:INDEX``): derivation then probes with such ids."""
    for shape in range(_SHAPES):
        plain = render_probe(renderer, shape, assistant_turn(content=PLAIN))
        one = render_probe(renderer, shape, assistant_turn(calls=[probe_call(0)]))
        if plain is not None and one is not None:
            lp, lo = lex(plain), lex(one)
            call = "".join(lo[common_prefix([lp, lo]) :])  # the tool list names the tool too
            return PROBE_NAME not in call and PROBE_IDS[0] in call
    return False


# ---------------------------------------------------------------------------------------------
# The call's region of a render


@dataclass
class Region:
    """Where a call render differs from the plain render: the call as the model writes it."""

    text: str
    plain: str
    """The plain render's differing part."""
    end_of_turn: str | None = None
    """A marker that ends the turn after calls instead of the usual one (``<|eom_id|>``)."""


def call_region(probe: Probe, call: str) -> Region:
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
    end += _shared_closers(call[end:], probe.user_end)
    skip = header_rest(call[start:end], probe.prompt_tail)
    start += skip
    plain_start += skip
    text = call[start:end]
    plain_text = probe.plain[plain_start : len(probe.plain) - (len(call) - end)]
    named = text.find(PROBE_NAME)
    usual = _end_run(probe.plain) or probe.plain_end
    if usual and usual in text[named:]:
        # the call turn closes with the usual marker and the template writes more after it
        end = start + named + text[named:].index(usual)
        text = call[start:end]
    region = Region(text, plain_text)
    following = [x for x in lex(call[end:])[:4] if not x.isspace()]
    last = [x for x in lex(text) if not x.isspace()][-1:]
    content_wrapped = any(is_marker(x) for x in lex(plain_text.split(PLAIN)[0]))
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


def _shared_closers(rest: str, usual: str | None) -> int:
    """How much of ``rest`` (after the diff) the call still writes: markers both renders share
    before the end of the turn (``<|close|>calls<|sep|>`` and ``<|close|>response<|sep|>`` share
    ``<|sep|>``) close the call as they close the answer."""
    if not usual or usual not in rest:
        return 0
    k = rest.index(usual)
    lx = lex(rest[:k])
    if not any(is_marker(x) for x in lx) or not all(is_marker(x) or x.isspace() for x in lx):
        return 0
    return len(rest[:k].rstrip())


_MAX_HEADER_REST = 40


def header_rest(text: str, tail: str) -> int:
    """How much of ``text`` (the call region) still belongs to the turn header: where the
    generation prompt ends the header with ``tail`` (``assistant\n``) and a past call's header
    writes words before that whitespace (``assistant:calls\n``), the model's reply starts after
    it. Markers are never header text (``assistant<tool_call>\n`` is the call)."""
    if not tail or tail.strip():
        return 0
    i = text.find(tail)
    head = text[:i]
    if i <= 0 or i > _MAX_HEADER_REST or PROBE_NAME in head or any(is_marker(x) for x in lex(head)):
        return 0
    return i + len(tail)


def _end_run(plain: str) -> str | None:
    """The plain turn's end as a marker run: the marker after the answer, with a word and a
    marker after it where the template writes them (``<|close|>assistant<|sep|>``), so that a
    marker the call's own syntax shares (``<|close|>argument<|sep|>``) does not end the call."""
    lx = lex(plain)
    if PLAIN not in lx:
        return None
    after = lx[lx.index(PLAIN) + 1 :]
    seen = [i for i, x in enumerate(after) if not x.isspace()][:3]
    rest = [after[i] for i in seen]
    if len(rest) == 3 and is_marker(rest[0]) and rest[1].isalnum() and is_marker(rest[2]):
        return "".join(after[seen[0] : seen[2] + 1])
    return None


def strip_empty_reasoning(region: str, reasoning: ReasoningMarkers | None) -> str:
    """Drop an empty reasoning block the template writes before calls."""
    if reasoning is None:
        return region
    # the open marker may sit in the generation prompt, leaving only the close in the turn
    pattern = r"\s*(?:" + re.escape(reasoning.open) + r")?\s*" + re.escape(reasoning.close) + r"\s*"
    return re.sub("^" + pattern, "", region)
