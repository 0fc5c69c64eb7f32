"""The one exception tree of tooldialect.

Every error the library raises on purpose is a ``ToolDialectError``; callers can catch that one
class. Messages quote the offending value and say what to do about it.

    ToolDialectError
    ├── ModelMetadataError        a GGUF header cannot be read, or lacks what is needed
    ├── TemplateError             a chat template fails to compile or raises while rendering
    │   ├── TemplateSecurityError a template tried to escape the sandbox
    │   ├── RenderBudgetError     a render passed a bound of its ``RenderBudget``
    │   └── MissingTemplateError  the model carries no chat template and none was given
    ├── DialectError              a dialect spec is unknown, invalid or cannot be derived
    │   └── UnsupportedToolChoiceError  a dialect cannot honour the requested tool_choice
    ├── ToolSpecError             ``tools`` / ``tool_choice`` given by the user are malformed
    ├── GrammarError              a GBNF grammar is invalid (validated before llama.cpp sees it)
    │   └── UnsupportedSchemaError a JSON Schema keyword cannot be honoured (has a JSON pointer)
    ├── ToolCallParseError        strict parsing of model output failed
    ├── InvalidToolCallError      a parsed call's arguments fail its tool's JSON Schema
    ├── EngineBusyError           a stream was superseded by a newer request on its ``Llama``
    ├── EngineError               llama.cpp refused a state, or the ``Llama`` is gone
    ├── OptionError               an option given to a constructor is invalid
    ├── ContextOverflowError      the prompt does not fit in ``n_ctx``
    ├── ServerError               no llama-server answered, or one broke off a reply
    └── MCPError                  an MCP server cannot be configured, started or used
        ├── MCPConfigError        an ``mcpServers`` entry is malformed or names an unset ${VAR}
        └── MCPToolNameError      two MCP tools (or an MCP tool and a local one) share a name

``EngineError`` and ``OptionError`` live here only (``tooldialect.errors``), not in the top-level
API; catch ``ToolDialectError`` (or ``RuntimeError`` / ``ValueError``, which they also derive
from).

``ToolSpecError``, ``UnsupportedSchemaError``, ``ContextOverflowError`` and
``UnsupportedToolChoiceError`` also derive from ``ValueError`` so code written against
llama-cpp-python's own ``ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "ContextOverflowError",
    "DialectError",
    "EngineBusyError",
    "EngineError",
    "GrammarError",
    "InvalidToolCallError",
    "MCPConfigError",
    "MCPError",
    "MCPToolNameError",
    "MissingTemplateError",
    "ModelMetadataError",
    "OptionError",
    "RenderBudgetError",
    "ServerError",
    "TemplateError",
    "TemplateSecurityError",
    "ToolCallParseError",
    "ToolDialectError",
    "ToolSpecError",
    "UnsupportedSchemaError",
    "UnsupportedToolChoiceError",
]


class ToolDialectError(Exception):
    """Base class of every error tooldialect raises on purpose."""


class ModelMetadataError(ToolDialectError):
    """A GGUF header cannot be read, or lacks a field that is needed."""


class TemplateError(ToolDialectError):
    """A chat template fails to compile, or raised while rendering."""


class TemplateSecurityError(TemplateError):
    """A chat template tried to reach outside the sandbox; nothing of it ran."""


class RenderBudgetError(TemplateError):
    """A chat-template render passed a bound of its ``RenderBudget`` and was stopped.

    ``bound`` names the ``RenderBudget`` field (``max_steps``, ``max_chars`` ...), ``limit`` its
    value; raise it with ``ToolChatHandler(render_budget=RenderBudget(<bound>=...))``.
    """

    def __init__(self, message: str, *, bound: str = "", limit: float = 0) -> None:
        super().__init__(message)
        self.bound = bound
        self.limit = limit


class MissingTemplateError(TemplateError):
    """The model carries no chat template and the caller gave none."""


class DialectError(ToolDialectError):
    """A dialect spec is unknown, invalid, or cannot be derived from a template."""


class UnsupportedToolChoiceError(DialectError, ValueError):
    """The dialect cannot honour the requested ``tool_choice``."""


class ToolSpecError(ToolDialectError, ValueError):
    """The ``tools`` or ``tool_choice`` given by the caller are malformed, or another field of
    the request is (an unknown key, a value out of range). ``param`` names the request field,
    where one is to blame (the server's error object repeats it)."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class GrammarError(ToolDialectError):
    """A GBNF grammar is invalid. Raised before llama.cpp could abort on it."""


class UnsupportedSchemaError(GrammarError, ValueError):
    """A JSON Schema keyword cannot be compiled into a grammar.

    ``pointer`` is the JSON pointer of the offending keyword inside the schema.
    """

    def __init__(self, message: str, *, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer


class ToolCallParseError(ToolDialectError):
    """Strict parsing of model output failed: ``parse_output(..., strict=True)`` met a call the
    reply opens that does not parse (the lenient default keeps such text as content)."""


class InvalidToolCallError(ToolDialectError):
    """The model wrote a call whose arguments fail its tool's full JSON Schema (keywords the
    grammar leaves loose, or text read before the lazy grammar fired), under
    ``invalid_arguments="raise"``. ``calls`` holds each such call as the response's
    ``invalid_tool_calls`` entries would (id, name, args, error, problems)."""

    def __init__(self, message: str, *, calls: list[dict[str, object]] | None = None) -> None:
        super().__init__(message)
        self.calls = list(calls or [])


class EngineBusyError(ToolDialectError, RuntimeError):
    """A generation cannot go on: a newer request on the same ``Llama`` took over its context.

    Requests from other threads wait for the running generation instead (they are serialized).
    """


class EngineError(ToolDialectError, RuntimeError):
    """The in-process engine cannot go on: llama.cpp refused a saved state, or the ``Llama`` it
    served was garbage-collected."""


class OptionError(ToolDialectError, ValueError):
    """An option given to a constructor is invalid (a ``RenderBudget`` bound that is not a
    positive number, a server pool without servers)."""


class ContextOverflowError(ToolDialectError, ValueError):
    """The prompt (plus the requested completion) does not fit in the context window."""


class ServerError(ToolDialectError):
    """No llama-server answered within the retry window, or one broke off a reply it had begun
    (such a request is never sent again: part of it was already returned)."""


class MCPError(ToolDialectError):
    """An MCP server cannot be configured, started or reached (``tooldialect.apps.mcp``).

    A failing *call* is never raised: it goes back to the model as a tool result.
    """


class MCPConfigError(MCPError, ValueError):
    """An ``mcpServers`` entry is malformed, or names a ``${VAR}`` that is not set."""


class MCPToolNameError(MCPError, ValueError):
    """Two MCP tools, or an MCP tool and a local tool, would be offered under one name."""
