"""tooldialect: OpenAI-shaped tool calling for any local GGUF model in llama-cpp-python.

The pipeline, one module per stage: ``gguf`` (metadata) -> ``template`` (sandboxed render,
capabilities) -> ``dialect`` (detect / derive / builtin / polyfill, all producing one
``DialectSpec``) -> ``grammar`` (GBNF, lazy triggers) -> ``engine`` (one pass over the model) ->
``parse`` (text and stream) -> ``handler`` (OpenAI shapes). Only ``engine`` and ``handler``
touch ``llama_cpp``, and only when a model is used.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .apps.agent import (
    Agent,
    AgentEvent,
    AgentResult,
    AgentStep,
    Allow,
    ArgumentsDelta,
    CallFinished,
    CallStarted,
    Deny,
    FinalAnswer,
    PendingCall,
    ReasoningDelta,
    StepFinished,
    StepStarted,
    TextDelta,
)
from .apps.agent_policy import ask_before
from .apps.mcp import MCPServerConfig, MCPTool, MCPTools, load_mcp_config
from .apps.python_tool import Tool, ToolArgumentsError, ToolResult, tool
from .apps.tool_search import ToolSearch
from .dialect import DialectSpec, builtin_dialects
from .dialect.polyfill import apply_polyfill
from .errors import (
    ContextOverflowError,
    DialectError,
    EngineBusyError,
    GrammarError,
    InvalidToolCallError,
    MCPConfigError,
    MCPError,
    MCPToolNameError,
    MissingTemplateError,
    ModelMetadataError,
    RenderBudgetError,
    ServerError,
    TemplateError,
    TemplateSecurityError,
    ToolCallParseError,
    ToolDialectError,
    ToolSpecError,
    UnsupportedSchemaError,
    UnsupportedToolChoiceError,
)
from .frontend.render import render_prompt
from .gguf import ModelInfo, read_gguf_metadata
from .grammar import ToolGrammar, build_grammar, json_schema_to_gbnf
from .handler import ToolChatHandler, create_chat_completion, register
from .models import model_path
from .parse import ParsedOutput, StreamParser, ToolCall, parse_output
from .prompt.budget import RenderBudget
from .prompt.template import ChatTemplate, TemplateCapabilities, normalize_messages
from .server_client import ServerClient
from .tool_defs import ToolChoice, ToolDef, normalize_tool_choice, normalize_tools
from .verify import derive_dialect, detect_dialect

try:  # one literal, in pyproject.toml; the installed metadata carries it
    __version__ = _metadata.version("tooldialect")
except _metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"
del _metadata

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AgentStep",
    "Allow",
    "ArgumentsDelta",
    "CallFinished",
    "CallStarted",
    "ChatTemplate",
    "ContextOverflowError",
    "Deny",
    "DialectError",
    "DialectSpec",
    "EngineBusyError",
    "FinalAnswer",
    "GrammarError",
    "InvalidToolCallError",
    "MCPConfigError",
    "MCPError",
    "MCPServerConfig",
    "MCPTool",
    "MCPToolNameError",
    "MCPTools",
    "MissingTemplateError",
    "ModelInfo",
    "ModelMetadataError",
    "ParsedOutput",
    "PendingCall",
    "ReasoningDelta",
    "RenderBudget",
    "RenderBudgetError",
    "ServerClient",
    "ServerError",
    "StepFinished",
    "StepStarted",
    "StreamParser",
    "TemplateCapabilities",
    "TemplateError",
    "TemplateSecurityError",
    "TextDelta",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallParseError",
    "ToolChatHandler",
    "ToolChoice",
    "ToolDef",
    "ToolDialectError",
    "ToolGrammar",
    "ToolResult",
    "ToolSearch",
    "ToolSpecError",
    "UnsupportedSchemaError",
    "UnsupportedToolChoiceError",
    "__version__",
    "apply_polyfill",
    "ask_before",
    "build_grammar",
    "builtin_dialects",
    "create_chat_completion",
    "derive_dialect",
    "detect_dialect",
    "json_schema_to_gbnf",
    "load_mcp_config",
    "model_path",
    "normalize_messages",
    "normalize_tool_choice",
    "normalize_tools",
    "parse_output",
    "read_gguf_metadata",
    "register",
    "render_prompt",
    "tool",
]
