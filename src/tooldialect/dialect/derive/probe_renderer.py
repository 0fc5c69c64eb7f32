"""Rendering probe conversations for derivation: never raises, fills variables templates demand.

Derivation renders a template dozens of times with sentinel conversations. Every failure is an
answer ("this shape does not render"), so :class:`ProbeRenderer` returns ``None``, never raises.
Templates that read variables the caller normally passes get them as prompts do
(``prompt.conventions``: FireFunction's ``functions``, Functionary's
``generate_schema_from_functions``); one that raises ``'x' is undefined`` for another variable is
retried with ``x`` set to ``""``.

Some templates write a past call's id where the name would be (Kimi K2 Thinking:
``<|tool_call_begin|>{{ tool_call.id }}``), since their models write ids that hold the name,
``functions.NAME:INDEX``. A renderer made with ``named_ids=True`` gives every call that id (the
index counts calls across the conversation), so the name shows where the model writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ...errors import RenderBudgetError
from ...prompt.conventions import conventional_variables
from ...prompt.template import ChatTemplate

__all__ = ["ProbeRenderer", "name_ids"]

_UNDEFINED_RE = re.compile(r"'(\w+)' is undefined")
_MAX_FILLS = 4


def _fixed_now() -> datetime:
    return datetime(2025, 1, 1)  # renders are compared with each other: keep dates constant


class ProbeRenderer:
    """Renders one template for probing; remembers variables it had to fill.

    Rendering goes through :class:`~tooldialect.prompt.template.ChatTemplate`, so probes see
    exactly what prompts will contain
    (including its choice of passing arguments as an object or a JSON string).
    """

    def __init__(
        self, source: str, *, bos_token: str = "", eos_token: str = "", named_ids: bool = False
    ) -> None:
        self.fills: dict[str, Any] = {}
        self.named_ids = named_ids
        try:
            self._template: ChatTemplate | None = ChatTemplate(
                source, bos_token=bos_token, eos_token=eos_token, now=_fixed_now
            )
        except Exception:  # a template that does not compile derives nothing
            self._template = None

    @property
    def ok(self) -> bool:
        """Whether the template compiled at all."""
        return self._template is not None

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        **kwargs: Any,
    ) -> str | None:
        """The render, or ``None`` when the template refuses these messages."""
        if self._template is None:
            return None
        if self.named_ids:
            messages = name_ids(messages)
        given = {**self.fills, **kwargs}
        # what a serving stack passes by convention (``functions``, a schema printer), as prompts
        # get it: an empty string in its place would fail or print nothing
        filled = conventional_variables(
            self._template.variables, tools, given, today=lambda: _fixed_now().strftime("%Y-%m-%d")
        )
        for _ in range(_MAX_FILLS + 1):
            try:
                return self._template.render(
                    messages,
                    tools=tools,
                    add_generation_prompt=add_generation_prompt,
                    **{**filled, **self.fills, **kwargs},
                )
            except RenderBudgetError:
                self._template = None  # past its budget once: every later probe would be too
                return None
            except Exception as exc:  # any template failure is a "no" for this probe
                m = _UNDEFINED_RE.search(str(exc))
                if m is None or m.group(1) in self.fills or m.group(1) in kwargs:
                    return None
                self.fills[m.group(1)] = ""
        return None


def name_ids(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` with every call id ``functions.NAME:INDEX`` (tool results follow their call)."""
    renamed: dict[str, str] = {}
    out: list[Mapping[str, Any]] = []
    count = 0
    for msg in messages:
        calls = msg.get("tool_calls")
        if isinstance(calls, list) and calls:
            new_calls = []
            for call in calls:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping):
                    new_calls.append(call)
                    continue
                cid = f"functions.{fn.get('name')}:{count}"
                count += 1
                renamed[str(call.get("id"))] = cid
                new_calls.append({**call, "id": cid})
            msg = {**msg, "tool_calls": new_calls}
        elif msg.get("role") == "tool" and str(msg.get("tool_call_id")) in renamed:
            msg = {**msg, "tool_call_id": renamed[str(msg.get("tool_call_id"))]}
        out.append(msg)
    return out
