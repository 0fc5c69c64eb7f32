"""Grammars: JSON Schema -> GBNF in several value syntaxes, and tool-call grammars from a spec."""

from .build import ToolGrammar, build_grammar, trigger_pattern
from .gbnf import GbnfBuilder
from .schema import SchemaConverter, json_schema_to_gbnf, schema_grammar

__all__ = [
    "GbnfBuilder",
    "SchemaConverter",
    "ToolGrammar",
    "build_grammar",
    "json_schema_to_gbnf",
    "schema_grammar",
    "trigger_pattern",
]
