"""Does a chat template serve a whole tool conversation? The check the template corpus runs.

For one template: detect its dialect (with builtins, or without), require that the spec reads
back exactly the call the template itself writes for a past call whose arguments hold every JSON
type (``verify.RICH_ARGUMENTS``: nesting, quotes, ``<``, ``&``, a newline), with nothing of the
call left as content, and render the full conversation the handler sends (system, user, that
call, its tool result, a second user turn) without losing a message.

A template that renders no past call at all cannot be read; ``TemplateReport.verdict`` says so,
with the reason, and ``tooldialect inspect`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .dialect import ports
from .dialect.detect import Detection
from .errors import ToolDialectError
from .frontend.render import render_prompt
from .prompt.template import ChatTemplate
from .verify import RICH_ARGUMENTS, check_own_call, explain_detection, tool_for

__all__ = ["TemplateReport", "Verdict", "check_template", "conversation"]

Verdict = Literal["reads", "misreads", "no-call", "no-tools", "broken"]
"""``reads``: the spec reads the template's own call and the conversation renders;
``misreads``: the template writes a call the spec does not read exactly (or the conversation
loses a message); ``no-call``: the template renders tools but no past call; ``no-tools``: the
template renders no tools at all; ``broken``: the template does not compile."""

_CALL_ID = "qx7call01"  # nine alphanumerics: Mistral templates refuse every other id


def conversation() -> list[dict[str, Any]]:
    """The full tool conversation: system, user, a past call, its result, a second user turn."""
    call = {
        "id": _CALL_ID,
        "type": "function",
        "function": {"name": "lookup_item", "arguments": dict(RICH_ARGUMENTS)},
    }
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find a lamp."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": _CALL_ID, "content": '{"found": 1}'},
        {"role": "user", "content": "Thanks. Another?"},
    ]


@dataclass(frozen=True)
class TemplateReport:
    """What one template does with a tool conversation."""

    detection: Detection
    own_call: ports.Agreement
    """The spec against the template's own rendering of the rich call."""
    renders_tools: bool
    conversation_error: str = ""
    """Why the full conversation does not render (``""`` when it does)."""

    @property
    def verdict(self) -> Verdict:
        """One word for the report (see ``Verdict``)."""
        if self.own_call.reason == "the template does not compile":
            return "broken"
        if self.own_call.ok is None:
            return "no-call" if self.renders_tools else "no-tools"
        return "reads" if self.own_call.ok and not self.conversation_error else "misreads"

    @property
    def reason(self) -> str:
        """Why the verdict is not ``reads`` (``""`` when it is)."""
        if self.verdict == "reads":
            return ""
        if self.verdict == "no-tools":
            return "the template renders neither tools nor a past call"
        if self.own_call.ok and self.conversation_error:
            return f"the conversation does not render: {self.conversation_error}"
        return self.own_call.reason

    def summary(self) -> dict[str, object]:
        """A JSON-ready view."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "chosen": self.detection.chosen,
            "dialect": self.detection.spec.id,
        }


def check_template(
    source: str, *, builtins: bool = True, bos_token: str = "", eos_token: str = ""
) -> TemplateReport:
    """The report for ``source`` (never raises for a bad template)."""
    detection = explain_detection(
        source, bos_token=bos_token, eos_token=eos_token, builtins=builtins
    )
    own = check_own_call(
        detection.spec,
        source,
        bos_token=bos_token,
        eos_token=eos_token,
        arguments=RICH_ARGUMENTS,
    )
    error, renders_tools = "", False
    try:
        template = ChatTemplate(source, bos_token=bos_token, eos_token=eos_token)
        renders_tools = template.capabilities.tools
        render_prompt(template, detection.spec, conversation(), tools=[tool_for(RICH_ARGUMENTS)])
    except ToolDialectError as exc:
        error = str(exc).splitlines()[0][:300]
    return TemplateReport(detection, own, renders_tools, error)
