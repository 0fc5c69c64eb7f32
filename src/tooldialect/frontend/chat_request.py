"""``ChatRequest``: one chat request, typed and decided once, before anything is rendered.

An adapter's request arrives as OpenAI keywords. ``options.ChatOptions.build`` checks and types
them once (unknown keys, tools, ``tool_choice``, ``response_format``); ``pipeline.FrontEnd``
then makes the ``ChatRequest`` for one model: the conversation made canonical, the handler's
defaults merged in, and the number of calls a reply may hold resolved against the dialect. What
``request.prepare_request`` renders and constrains, and what the response shaping parses, is read
from it, and what a ``tool_choice`` means is asked of its ``ToolChoice`` (``tool_defs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ToolSpecError
from ..tool_defs import ToolChoice, ToolDef

__all__ = ["ChatRequest", "ForeignGrammar", "foreign_grammar"]


@dataclass(frozen=True)
class ForeignGrammar:
    """A caller's ``LlamaGrammar`` passed through (non-lazy)."""

    gbnf: str
    """The grammar's GBNF text."""
    root: str = "root"
    """Its root rule."""
    lazy: bool = False
    """Never lazy: it constrains from the first token."""
    trigger_words: tuple[str, ...] = ()
    """None: it is not lazy."""
    trigger_patterns: tuple[str, ...] = ()
    """None: it is not lazy."""


def foreign_grammar(grammar: Any) -> ForeignGrammar | None:
    """A request's ``grammar`` (llama-cpp-python's ``LlamaGrammar``, or ``None``) as the engines
    take it; anything else is a ``ToolSpecError`` naming the field."""
    if grammar is None:
        return None
    gbnf = getattr(grammar, "_grammar", None)
    if not isinstance(gbnf, str):
        raise ToolSpecError(
            f"grammar must be a llama_cpp.LlamaGrammar, got {type(grammar).__name__}; build one "
            "with LlamaGrammar.from_string(gbnf)",
            param="grammar",
        )
    return ForeignGrammar(gbnf=gbnf, root=str(getattr(grammar, "_root", "root")))


@dataclass(frozen=True)
class ChatRequest:
    """One chat request for one model, every fact of it decided: what ``prepare_request``
    takes. Built once per request by the front end of each adapter (``FrontEnd.chat_request``)."""

    messages: tuple[Mapping[str, Any], ...]
    """The conversation, checked and canonical (``prompt.request_messages``)."""
    tools: tuple[ToolDef, ...] = ()
    """The tool definitions, validated (``tool_defs.normalize_tools``)."""
    choice: ToolChoice = field(default_factory=lambda: ToolChoice(mode="none"))
    """What the reply may call (``tool_defs.normalize_tool_choice``): asked, never re-read."""
    answer_schema: dict[str, Any] | None = None
    """The JSON Schema ``response_format`` asked an answer that is not a call to follow."""
    parallel: bool = True
    """Whether a reply may hold several calls: the request's ``parallel_tool_calls`` (or the
    handler's default), the choice (a named one allows one) and the dialect
    (``DialectSpec.parallel_calls``), resolved once."""
    template_variables: Mapping[str, Any] = field(default_factory=dict)
    """Every variable the template is rendered with besides messages and tools: the handler's
    ``template_kwargs``, then the request's ``chat_template_kwargs`` and the three known by
    name (``enable_thinking``, ``thinking``, ``reasoning_effort``), the later winning."""
    grammar: ForeignGrammar | None = None
    """A caller's own grammar, applied where no call is forced and no other grammar is."""

    @property
    def shown_tools(self) -> tuple[ToolDef, ...]:
        """The tools the prompt shows (none where the choice reads no call)."""
        return self.tools if self.choice.shows_tools else ()

    def saying(self, message: Mapping[str, Any]) -> ChatRequest:
        """This request with ``message`` (a canonical one) added to the conversation."""
        return replace(self, messages=(*self.messages, message))
