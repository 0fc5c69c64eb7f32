"""Does a spec read what its template writes? The check detection and derivation run.

A builtin is picked by signature (text the template source contains), and a signature can match a
template that writes calls differently (a variant, a fine-tune's edited template). The template's
own rendering of a past call is the ground truth: the template renders a conversation whose
assistant turn calls a tool, the reply is cut where the generation prompt ends (what the model
would write), and the spec's parser must read the call back, with whatever the prompt already
wrote for the reply (``prompt_prefill``), as the handler does, and leave nothing of the call as
content (no more than a plain answer's reply leaves: its end-of-turn marker).

This sits above ``dialect/``, ``prompt/`` and ``parse/``: ``dialect/`` defines the shapes
(``dialect.ports``) and this module installs its implementations when imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .dialect import ports
from .dialect.derive_probe import header_rest
from .dialect.derive_render import ProbeRenderer
from .dialect.derive_text import common_prefix, diff_affixes, is_marker, lex
from .dialect.spec import DialectSpec
from .errors import ToolDialectError
from .frontend.render import prompt_prefill
from .parse import parse_output

__all__ = ["check_own_call", "read_calls", "reads_own_call"]

_NAME = "lookup_item"
_ARGS: dict[str, Any] = {"query": "blue lamp", "limit": 3}
_ID = "qx7call01"  # nine alphanumerics: Mistral templates refuse every other id
_ANSWER = "Found it."
_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": _NAME,
        "description": "Find an item.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to find"},
                "limit": {"type": "integer", "description": "how many"},
            },
            "required": ["query"],
        },
    },
}
_BEFORE: tuple[list[dict[str, Any]], ...] = (
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find a lamp."}],
    [{"role": "user", "content": "Find a lamp."}],
)


def read_calls(
    text: str,
    spec: DialectSpec,
    *,
    tools: Sequence[Mapping[str, Any]],
    prefill: str = "",
) -> ports.Reading | None:
    """``ports.CallReader`` on the real parser; ``None`` when it raised."""
    try:
        out = parse_output(text, spec, tools=tools, prefill=prefill)
    except (ToolDialectError, ValueError, KeyError, IndexError, TypeError):
        return None
    return ports.Reading(
        calls=[(c.name, _decoded(c.arguments)) for c in out.tool_calls],
        content=out.content or "",
        reasoning=out.reasoning_content or "",
    )


def _decoded(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _own_replies(renderer: ProbeRenderer) -> tuple[str, str, str | None] | None:
    """(generation prompt, the template's reply after it for a past call, the reply for a plain
    answer), or ``None`` when no conversation shape renders a call."""
    call = {"id": _ID, "type": "function", "function": {"name": _NAME, "arguments": _ARGS}}
    turn = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {"role": "assistant", "content": _ANSWER}
    for before in _BEFORE:
        prompt = renderer.render(before, tools=[_TOOL], add_generation_prompt=True)
        full = renderer.render([*before, turn], tools=[_TOOL])
        if prompt is None or full is None:
            continue
        lp, lf = lex(prompt), lex(full)
        k = len("".join(lf[: common_prefix([lp, lf])]))
        if not prompt[k:].strip():  # past the header the prompt ends with (``assistant\n``)
            k += header_rest(full[k:], prompt[k:])
        if _NAME in full[k:]:
            plain = renderer.render([*before, answer], tools=[_TOOL])
            return prompt, full[k:], plain[k:] if plain is not None and k <= len(plain) else None
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _until_stop(text: str, spec: DialectSpec) -> str:
    """``text`` up to the first of the spec's stop strings (generation ends there)."""
    cut = min((text.find(s) for s in spec.stop if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


def _end_of_turn(plain: str | None) -> str:
    """The marker right after a plain answer (whitespace skipped): where a turn ends."""
    if plain is None or _ANSWER not in plain:
        return ""
    after = lex(plain[plain.index(_ANSWER) + len(_ANSWER) :])
    seen = [i for i, x in enumerate(after) if not x.isspace()][:3]
    rest = [after[i] for i in seen]
    if not rest or not is_marker(rest[0]):
        return ""
    if len(rest) == 3 and rest[1].isalnum() and is_marker(rest[2]):
        # ``<|close|>assistant<|sep|>``: the whole run, as a call's own syntax may share its
        # first marker (``<|close|>argument<|sep|>``)
        return "".join(after[seen[0] : seen[2] + 1])
    return rest[0]


def _cut_at(text: str, marker: str, *, after: int, before: int | None = None) -> str:
    """``text`` through the first ``marker`` at or after ``after`` (and before ``before``, where
    the text every turn ends with starts); all of it when none."""
    k = text.find(marker, max(after, 0))
    if k < 0 or (before is not None and k >= before):
        return text
    return text[: k + len(marker)]


def _left_over(content: str, reply: str, plain: str | None) -> str:
    """What of the call reply's content is the call's own text: content less what the plain
    answer's reply shares with it (text the template writes after every turn) and less the turn
    markers a plain answer's reply holds too (its end of turn). ``""`` when nothing is left."""
    markers: set[str] = set()
    if plain is not None:
        head, _, _, tail = diff_affixes(reply, plain)
        for shared in (tail.strip(), head.strip()):
            if shared:
                content = content.replace(shared, "")
        markers = {x for x in lex(plain) if is_marker(x)}
    left = [x for x in lex(content) if not x.isspace() and x not in markers]
    return "".join(left)


def check_own_call(
    spec: DialectSpec, template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> ports.Agreement:
    """``ports.OwnCallCheck``: whether ``spec`` reads the template's own rendering of a past call
    exactly (the call, and no more content than a plain answer leaves). Never raises for a bad
    template."""
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return ports.Agreement(None, "the template does not compile")
    own = _own_replies(renderer)
    if own is None:  # a template writing the call's id where the model writes the name
        renderer.named_ids = True
        own = _own_replies(renderer)
    if own is None:
        return ports.Agreement(None, "the template renders no past call")
    prompt, reply, plain = own
    prefill = prompt_prefill(prompt, spec)
    if spec.reasoning is not None and prefill == spec.reasoning.open:
        prefill = ""  # a past turn's render drops its reasoning: the call is not inside one
    end = _end_of_turn(plain)
    shared = len(diff_affixes(reply, plain)[3]) if plain is not None else 0
    if end:  # generation ends at the end of the turn: what the template writes after is not read
        reply = _cut_at(reply, end, after=reply.find(_NAME), before=len(reply) - shared)
    shared = len(diff_affixes(reply, plain)[3]) if plain is not None else 0
    if shared and len(reply) - shared > reply.find(_NAME) + len(_NAME):
        # text every turn ends with (a system reminder after the conversation) is not the call's
        reply = reply[: len(reply) - shared]
    got = read_calls(_until_stop(reply, spec), spec, tools=[_TOOL], prefill=prefill)
    if got is None:
        return ports.Agreement(False, "the parser raised on the template's call")
    if got.calls != [(_NAME, _ARGS)]:
        return ports.Agreement(False, f"reads {got.calls!r} from {reply.strip()[:120]!r}")
    left = _left_over(got.content.replace(end, "") if end else got.content, reply, plain)
    if left:
        return ports.Agreement(False, f"leaves {left[:120]!r} as content")
    return ports.Agreement(True)


def reads_own_call(
    spec: DialectSpec, template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> bool | None:
    """``check_own_call(...).ok``."""
    return check_own_call(spec, template_source, bos_token=bos_token, eos_token=eos_token).ok


ports.install(reader=read_calls, check=check_own_call)
