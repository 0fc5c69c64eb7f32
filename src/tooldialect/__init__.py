"""tooldialect: OpenAI-shaped tool calling for any local GGUF model in llama-cpp-python."""

from __future__ import annotations

from .dialect import DialectSpec, builtin_dialects, detect_dialect
from .errors import (
    ContextOverflowError,
    DialectError,
    GrammarError,
    MissingTemplateError,
    ModelMetadataError,
    TemplateError,
    TemplateSecurityError,
    ToolCallParseError,
    ToolDialectError,
    ToolSpecError,
    UnsupportedSchemaError,
    UnsupportedToolChoiceError,
)
from .gguf import ModelInfo, read_gguf_metadata
from .grammar import ToolGrammar, build_grammar, json_schema_to_gbnf
from .parse import ParsedOutput, StreamParser, ToolCall, parse_output
from .template import ChatTemplate, TemplateCapabilities, normalize_messages

__version__ = "0.1.0"

from .dialect.polyfill import apply_polyfill
from .handler import ToolChatHandler, register
from .prompt import render_prompt

__all__ = [
    "ChatTemplate",
    "ContextOverflowError",
    "DialectError",
    "DialectSpec",
    "GrammarError",
    "MissingTemplateError",
    "ModelInfo",
    "ModelMetadataError",
    "ParsedOutput",
    "StreamParser",
    "TemplateCapabilities",
    "TemplateError",
    "TemplateSecurityError",
    "ToolCall",
    "ToolCallParseError",
    "ToolChatHandler",
    "ToolDialectError",
    "ToolGrammar",
    "ToolSpecError",
    "UnsupportedSchemaError",
    "UnsupportedToolChoiceError",
    "__version__",
    "apply_polyfill",
    "build_grammar",
    "builtin_dialects",
    "detect_dialect",
    "json_schema_to_gbnf",
    "normalize_messages",
    "parse_output",
    "read_gguf_metadata",
    "register",
    "render_prompt",
]
