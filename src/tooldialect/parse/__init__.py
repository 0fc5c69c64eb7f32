"""Parsing model output: ``parse_output`` (whole text) and ``StreamParser`` (incremental), both
generic over ``DialectSpec``."""

from .batch import parse_output
from .result import ParsedOutput, ToolCall
from .stream import StreamParser

__all__ = ["ParsedOutput", "StreamParser", "ToolCall", "parse_output"]
