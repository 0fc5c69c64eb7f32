"""Does a spec read what its template writes? The check detection runs on a builtin it picked.

A builtin is picked by signature (text the template source contains), and a signature can match a
template that writes calls differently (a variant, a fine-tune's edited template). The template's
own rendering of a past call is the ground truth: the template renders a conversation whose
assistant turn calls a tool, the reply is cut where the generation prompt ends (what the model
would write), and the spec's parser must read the call back, with whatever the prompt already
wrote for the reply (``prompt_prefill``), as the handler does.
"""

from __future__ import annotations

from typing import Any

from .derive_render import ProbeRenderer
from .derive_text import common_prefix, lex
from .spec import DialectSpec

__all__ = ["reads_own_call"]

_NAME = "lookup_item"
_ARGS: dict[str, Any] = {"query": "blue lamp", "limit": 3}
_ID = "qx7call01"  # nine alphanumerics: Mistral templates refuse every other id
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


def _own_reply(renderer: ProbeRenderer) -> tuple[str, str] | None:
    """(generation prompt, the template's reply after it) for a past call, or ``None``."""
    call = {"id": _ID, "type": "function", "function": {"name": _NAME, "arguments": _ARGS}}
    turn = {"role": "assistant", "content": None, "tool_calls": [call]}
    for before in _BEFORE:
        prompt = renderer.render(before, tools=[_TOOL], add_generation_prompt=True)
        full = renderer.render([*before, turn], tools=[_TOOL])
        if prompt is None or full is None:
            continue
        lp, lf = lex(prompt), lex(full)
        k = len("".join(lf[: common_prefix([lp, lf])]))
        if _NAME in full[k:]:
            return prompt, full[k:]
    return None


def reads_own_call(
    spec: DialectSpec, template_source: str, *, bos_token: str = "", eos_token: str = ""
) -> bool | None:
    """Whether ``spec`` parses the template's own rendering of a past call back to that call;
    ``None`` when the template renders no call to check against (no tool support, or calls kept
    in content). Never raises for a bad template."""
    from ..frontend.render import prompt_prefill
    from ..parse import parse_output  # lazily: the parser imports the dialect package

    renderer = ProbeRenderer(template_source, bos_token=bos_token, eos_token=eos_token)
    if not renderer.ok:
        return None
    own = _own_reply(renderer)
    if own is None:
        return None
    prompt, reply = own
    prefill = prompt_prefill(prompt, spec)
    if spec.reasoning is not None and prefill == spec.reasoning.open:
        prefill = ""  # a past turn's render drops its reasoning: the call is not inside one
    try:
        out = parse_output(reply, spec, tools=[_TOOL], prefill=prefill)
    except Exception:
        return False
    return [(c.name, c.arguments) for c in out.tool_calls] == [(_NAME, _ARGS)]
