"""Python literals: ``name(k="v", n=None, flag=True)``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from ...errors import DialectError
from .base import ValueCodec, dumps

__all__ = ["PythonCodec", "encode_python_value"]


class PythonCodec(ValueCodec):
    """Python literal values; the parser reads them as they stream (``parse/pycall.py``)."""

    name: ClassVar[str] = "python"
    incremental: ClassVar[bool] = True

    def encode(self, value: Any, *, quote: str) -> str:
        return encode_python_value(value)

    def string_quotes(self, quote: str) -> list[str]:
        return ['"', "'"]


def encode_python_value(value: Any) -> str:
    """A Python literal for a JSON value (double-quoted strings, ``True``/``None``)."""
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, float) and not math.isfinite(value):
        raise DialectError(f"non-finite number {value!r} cannot be written as an argument")
    if isinstance(value, (int, float, str)):
        return dumps(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{dumps(str(k))}: {encode_python_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(encode_python_value(v) for v in value) + "]"
    raise DialectError(f"cannot encode {value!r} as a Python literal")
