"""Does a spec read what its template writes? The check detection and derivation run.

A builtin is picked by signature (text the template source contains), and a signature can match a
template that writes calls differently (a variant, a fine-tune's edited template). The template's
own rendering of a past call is the ground truth: the template renders a conversation whose
assistant turn calls a tool, the reply is cut where the generation prompt ends (what the model
would write), and the spec's parser must read the call back, with whatever the prompt already
wrote for the reply (``prompt_prefill``), as the handler does, and leave nothing of the call as
content (no more than a plain answer's reply leaves: its end-of-turn marker).

This sits above ``dialect/``, ``prompt/`` and ``parse/``: ``dialect/`` defines the shapes
(``dialect.ports``) and its detection and derivation take them as arguments; this module's
``detect_dialect``, ``explain_detection`` and ``derive_dialect`` pass the real ones (the public
``tooldialect.detect_dialect`` is this module's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .dialect import derive, detect, ports
from .dialect.derive import ProbeRenderer, common_prefix, diff_affixes, header_rest, is_marker, lex
from .dialect.element_values import json_type
from .dialect.spec import DialectSpec
from .dialect.vocabulary import Vocabulary
from .errors import ToolDialectError
from .frontend.render import prompt_prefill
from .parse import parse_output
from .prompt.template import ChatTemplate

__all__ = [
    "RICH_ARGUMENTS",
    "check_own_call",
    "derive_dialect",
    "detect_dialect",
    "explain_detection",
    "read_calls",
    "reads_own_call",
    "schema_for",
    "tool_for",
]

_NAME = "lookup_item"
_ARGS: dict[str, Any] = {"query": "blue lamp", "limit": 3}
RICH_ARGUMENTS: dict[str, Any] = {
    "query": 'a "lamp" <b> & co\nsecond line',
    "limit": 3,
    "ratio": 0.25,
    "exact": True,
    "after": None,
    "tags": ["x", 2, False],
    "where": {"room": "hall", "box": {"n": 1}},
}
"""A call with every JSON type, nesting, and the characters templates mis-escape (quotes, ``<``,
``&``, a newline): what ``check_own_call(..., arguments=RICH_ARGUMENTS)`` renders."""
_ID = "qx7call01"  # nine alphanumerics: Mistral templates refuse every other id
_ANSWER = "Found it."


def schema_for(value: Any) -> dict[str, Any]:
    """A JSON Schema that types ``value`` as real tools do (arrays with ``items``, objects with
    ``properties``: templates such as Hermes 2 Pro's recurse into them)."""
    if value is None:  # no type: ``{"type": "null"}`` sends Hermes 2 Pro's type macro into a loop
        return {}
    if isinstance(value, Mapping):
        props = {k: schema_for(v) for k, v in value.items()}
        return {"type": "object", "properties": props}
    if isinstance(value, list):
        kinds = sorted({json.dumps(schema_for(v), sort_keys=True) for v in value})
        items = [json.loads(k) for k in kinds]
        return {"type": "array", "items": items[0] if len(items) == 1 else {"anyOf": items}}
    return {"type": json_type(value)}


def tool_for(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI tool ``lookup_item`` whose parameters type each of ``arguments``."""
    props = {k: {**schema_for(v), "description": f"the {k}"} for k, v in arguments.items()}
    parameters = {"type": "object", "properties": props, "required": [next(iter(arguments))]}
    return {
        "type": "function",
        "function": {"name": _NAME, "description": "Find an item.", "parameters": parameters},
    }


_TOOL = tool_for(_ARGS)
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


def _own_replies(
    renderer: ProbeRenderer, args: Mapping[str, Any], tool: Mapping[str, Any]
) -> tuple[str, str, str | None] | None:
    """(generation prompt, the template's reply after it for a past call, the reply for a plain
    answer), or ``None`` when no conversation shape renders a call."""
    call = {"id": _ID, "type": "function", "function": {"name": _NAME, "arguments": dict(args)}}
    turn = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {"role": "assistant", "content": _ANSWER}
    for before in _BEFORE:
        prompt = renderer.render(before, tools=[tool], add_generation_prompt=True)
        full = renderer.render([*before, turn], tools=[tool])
        if prompt is None or full is None:
            continue
        lp, lf = lex(prompt), lex(full)
        k = len("".join(lf[: common_prefix([lp, lf])]))
        if not prompt[k:].strip():  # past the header the prompt ends with (``assistant\n``)
            k += header_rest(full[k:], prompt[k:])
        k += _past_user_turn(full[k:], prompt, before[-1]["content"])
        if _NAME in full[k:]:
            plain = renderer.render([*before, answer], tools=[tool])
            return prompt, full[k:], plain[k:] if plain is not None and k <= len(plain) else None
    return None


def _past_user_turn(region: str, prompt: str, user: str) -> int:
    """Where the reply starts in ``region`` when it still holds the last user turn: a template
    that writes its last user turn unlike a past one (Mistral Small's mistral.rs copy moves it
    into ``[SYSTEM_PROMPT]``) re-renders that turn with the reply. Past the user text, its
    closing marker, and what the prompt writes after its own closing marker (the assistant's
    header); ``0`` when the region does not hold the user text."""
    at = region.find(user)
    if at < 0 or _NAME in region[:at]:
        return 0
    k = at + len(user)
    rest = lex(region[k:])
    lead = 0
    while lead < len(rest) and rest[lead].isspace():
        lead += 1
    if lead < len(rest) and is_marker(rest[lead]):
        k += len("".join(rest[: lead + 1]))
    after = prompt.rsplit(user, 1)[-1] if user in prompt else ""
    head = lex(after)
    header = "".join(head[1:]) if head and is_marker(head[0]) else ""
    if header.strip() and region[k:].lstrip().startswith(header.strip()):
        k = region.index(header.strip(), k) + len(header.strip())
    return k


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
    spec: DialectSpec,
    template_source: str,
    *,
    bos_token: str = "",
    eos_token: str = "",
    arguments: Mapping[str, Any] | None = None,
) -> ports.Agreement:
    """``ports.OwnCallCheck``: whether ``spec`` reads the template's own rendering of a past call
    exactly (the call, and no more content than a plain answer leaves). Never raises for a bad
    template. ``arguments`` replaces the call's two plain arguments (``RICH_ARGUMENTS``: every
    JSON type), typed by ``tool_for``."""
    args = _ARGS if arguments is None else arguments
    tool = _TOOL if arguments is None else tool_for(arguments)
    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return ports.Agreement(None, "the template does not compile")
    own = _own_replies(renderer, args, tool)
    if own is None:  # a template writing the call's id where the model writes the name
        renderer.named_ids = True
        own = _own_replies(renderer, args, tool)
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
    got = read_calls(_until_stop(reply, spec), spec, tools=[tool], prefill=prefill)
    if got is None:
        return ports.Agreement(False, "the parser raised on the template's call")
    want = _written(args, reply)
    if got.calls != [(_NAME, want)] or not _same_types(got.calls[0][1], want):
        return ports.Agreement(False, f"reads {got.calls!r} from {reply.strip()[:120]!r}")
    left = _left_over(got.content.replace(end, "") if end else got.content, reply, plain)
    if left:
        return ports.Agreement(False, f"leaves {left[:120]!r} as content")
    stray = _stray_markers(plain, spec, prompt=prompt, prefill=prefill, end=end)
    if stray:
        # the call reads, but the spec's reasoning or channel rules do not fit the template
        return ports.Agreement(False, f"leaves {stray!r} around a plain answer")
    return ports.Agreement(True)


def _written(args: Mapping[str, Any], reply: str) -> dict[str, Any]:
    """The arguments the template wrote: a null argument whose key the render never names was
    left out by the template (MiniMax M3 skips them), so the call as written has no such key."""
    return {k: v for k, v in args.items() if v is not None or k in reply}


def _same_types(got: Any, want: Any) -> bool:
    """``got == want`` holds ``1 == True == 1.0``: a call read back must keep the JSON types."""
    if isinstance(want, Mapping):
        return isinstance(got, Mapping) and all(_same_types(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and all(
            _same_types(g, w) for g, w in zip(got, want, strict=False)
        )
    return type(got) is type(want)


def _stray_markers(
    plain: str | None, spec: DialectSpec, *, prompt: str, prefill: str, end: str
) -> str:
    """Markers the spec leaves before the template's own plain answer in its content, ``""``
    when none: an answer channel or a reasoning block the spec does not know (Hunyuan's
    ``<think>..</think><answer>``). Markers the prompt writes (role headers) and the spec's own
    reasoning markers are not counted."""
    if plain is None or _ANSWER not in plain:
        return ""
    text = _cut_at(plain, end, after=plain.index(_ANSWER)) if end else plain
    got = read_calls(_until_stop(text, spec), spec, tools=[_TOOL], prefill=prefill)
    if got is None or got.calls or _ANSWER not in got.content:
        return ""
    known = {end, *lex(prompt)}
    if spec.reasoning is not None:
        known |= {*spec.reasoning.opens(), *spec.reasoning.closes()}
    # only what precedes the answer: after it come end-of-turn runs the lexer splits
    # (``[[EOT]]``), which generation stops on anyway
    before = got.content.split(_ANSWER, 1)[0]
    return "".join(x for x in lex(before) if is_marker(x) and x not in known)


def reads_own_call(
    spec: DialectSpec, template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> bool | None:
    """``check_own_call(...).ok``."""
    return check_own_call(spec, template_source, bos_token=bos_token, eos_token=eos_token).ok


def explain_detection(
    template_source: str | ChatTemplate | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
    vocabulary: Vocabulary | None = None,
    check: ports.OwnCallCheck = check_own_call,
    reader: ports.CallReader = read_calls,
) -> detect.Detection:
    """``dialect.detect.explain_detection`` with this module's check and reader."""
    return detect.explain_detection(
        template_source,
        bos_token=bos_token,
        eos_token=eos_token,
        builtins=builtins,
        vocabulary=vocabulary,
        check=check,
        reader=reader,
    )


def detect_dialect(
    template_source: str | ChatTemplate | None,
    *,
    bos_token: str = "",
    eos_token: str = "",
    builtins: bool = True,
    vocabulary: Vocabulary | None = None,
    check: ports.OwnCallCheck = check_own_call,
    reader: ports.CallReader = read_calls,
) -> DialectSpec:
    """The dialect a chat template's model writes tool calls in (``dialect.detect``), checked
    against the template's own rendering of a past call by :func:`check_own_call`."""
    return explain_detection(
        template_source,
        bos_token=bos_token,
        eos_token=eos_token,
        builtins=builtins,
        vocabulary=vocabulary,
        check=check,
        reader=reader,
    ).spec


def derive_dialect(
    template_source: str,
    *,
    bos_token: str = "",
    eos_token: str = "",
    reader: ports.CallReader = read_calls,
) -> DialectSpec | None:
    """``dialect.derive.derive_dialect`` with the real parser as its reader."""
    return derive.derive_dialect(
        template_source, reader=reader, bos_token=bos_token, eos_token=eos_token
    )
