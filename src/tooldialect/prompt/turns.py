"""``end_of_turn_markers``: the text a template writes to end an assistant turn, read from a render.

A model ends its reply the way its template ends an assistant turn in history (``<|im_end|>``,
``<|eot_id|>``, ``<end_of_turn>``). When that marker is not the EOS token, or the model writes it
as plain text, generation must stop there and the marker must not reach ``content``: the engines
add these markers to their stop strings. They are read off the template, never from a list:

* the marker is what follows an assistant message's content when it ends the conversation
  (``[user, assistant]``), stripped, provided the template writes the same text before the next
  turn (``[user, assistant, user]``): a closing that only the last turn gets (gpt-oss's
  ``<|return|>``) is the EOS token's business;
* it is dropped when the template writes it inside an assistant turn too (between reasoning and
  content, or between content and calls: gpt-oss's ``<|end|>`` closes a channel, not the turn),
  or when it could be markup in an answer (an HTML-like ``</s>``).

A template that closes no assistant turn (GLM: ``<|assistant|>...`` then ``<|user|>`` or
``<|observation|>``) ends a turn where the next one opens: its models stop on the next turn's
header, a special token (``<|user|>``, and ``<|observation|>`` after calls). Those headers are
the markers then, when they are special-token-like (``<|...|>``), never plain words.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..errors import RenderBudgetError, TemplateError
from .budget import RenderBudget
from .template import ChatTemplate

__all__ = ["end_of_turn_markers"]

_USER: dict[str, Any] = {"role": "user", "content": "probe-user-text"}
_ANSWER = "probe-answer-text"
_NEXT: dict[str, Any] = {"role": "user", "content": "probe-user-next"}
_THOUGHT = "probe-thought-text"
_CALL = {
    "id": "probe0001",
    "type": "function",
    "function": {"name": "probe_call_one", "arguments": {"probe_key": "v"}},
}
_MARKUP = re.compile(r"</?[A-Za-z]+>\Z")
_RESULT = "probe-result-text"
_HEADER = re.compile(r"<[|\uff5c][^<>\s|\uff5c]{1,32}[|\uff5c]>")
"""A special-token-like turn header (``<|user|>``, or with full-width bars as DeepSeek's)."""
"""A marker an answer could contain as markup (``</s>``, ``<b>``): never a stop string."""


def end_of_turn_markers(template: ChatTemplate) -> tuple[str, ...]:
    """The markers ``template`` writes after an assistant turn (see the module docstring);
    ``()`` when it writes none, or none that is safe to stop on. Probed once per template."""
    return _markers(template.source, template.bos_token, template.eos_token, template.budget)


@functools.lru_cache(maxsize=64)
def _markers(
    source: str, bos_token: str, eos_token: str, budget: RenderBudget | None
) -> tuple[str, ...]:
    template = ChatTemplate(source, bos_token=bos_token, eos_token=eos_token, budget=budget)
    answer = {"role": "assistant", "content": _ANSWER}
    last = _render(template, [_USER, answer])
    between = _render(template, [_USER, answer, _NEXT])
    if last is None or between is None or _ANSWER not in last or _ANSWER not in between:
        return ()
    marker = last[last.rindex(_ANSWER) + len(_ANSWER) :].strip()
    after = between[between.index(_ANSWER) + len(_ANSWER) :]
    end = after.find(str(_NEXT["content"]))
    if not marker and end >= 0:
        return _next_headers(template, after[:end])
    if not marker or end < 0 or not after[:end].lstrip().startswith(marker):
        return ()
    if _MARKUP.match(marker) or _inside_a_turn(template, marker):
        return ()
    return (marker,)


def _next_headers(template: ChatTemplate, between: str) -> tuple[str, ...]:
    """The headers that open the turns after an unclosed assistant turn: the user's, and the
    tool result's after a call (``<|user|>``, ``<|observation|>``); ``()`` unless both are
    special-token-like headers written right after the turn."""
    heads: list[str] = []
    m = _HEADER.match(between.lstrip())
    if m is None:
        return ()
    heads.append(m.group(0))
    calling = {"role": "assistant", "content": _ANSWER, "tool_calls": [_CALL]}
    result = {"role": "tool", "tool_call_id": "probe0001", "content": _RESULT}
    alone, followed = (
        _render(template, [_USER, calling]),
        _render(template, [_USER, calling, result]),
    )
    if alone is not None and followed is not None and followed.startswith(alone):
        m = _HEADER.match(followed[len(alone) :].lstrip())
        if m is not None and m.group(0) not in heads:
            heads.append(m.group(0))
    if any(_inside_a_turn(template, h) for h in heads):
        return ()
    return tuple(heads)


def _inside_a_turn(template: ChatTemplate, marker: str) -> bool:
    """Whether the template writes ``marker`` within one assistant turn (reasoning -> content,
    content -> calls), where stopping would cut the reply short."""
    thought = {"role": "assistant", "content": _ANSWER, "reasoning_content": _THOUGHT}
    calling = {"role": "assistant", "content": _ANSWER, "tool_calls": [_CALL]}
    probes: list[tuple[list[dict[str, Any]], str, str]] = [
        ([_USER, thought, _NEXT], _THOUGHT, _ANSWER),
        ([_USER, thought], _THOUGHT, _ANSWER),
        ([_USER, calling], _ANSWER, "probe_call_one"),
    ]
    for messages, start, stop in probes:
        text = _render(template, messages)
        if text is None or start not in text or stop not in text:
            continue
        inner = text[text.index(start) + len(start) : text.rindex(stop)]
        if marker in inner:
            return True
    return False


def _render(template: ChatTemplate, messages: list[dict[str, Any]]) -> str | None:
    try:
        return template.render(messages, add_generation_prompt=False)
    except RenderBudgetError:
        raise  # a probe past the budget is not a "no": the template is hostile or huge
    except TemplateError:
        return None
