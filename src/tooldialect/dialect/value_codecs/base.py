"""The interface every value codec implements."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

__all__ = ["TOKEN_QUOTE", "ValueCodec", "dumps"]

TOKEN_QUOTE = '<|"|>'
"""The default string-quote token of a token-quoted codec (``PythonBody.string_quote``)."""


class ValueCodec(ABC):
    """How one value syntax spells argument values in a Python-style call."""

    name: ClassVar[str]
    """The value of ``PythonBody.value_codec`` that selects this codec."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Older names a saved spec may hold."""
    token_quoted: ClassVar[bool] = False
    """Strings are written between ``PythonBody.string_quote`` tokens (so derivation records
    the token it found); otherwise the codec's own quotes."""

    @abstractmethod
    def encode(self, value: Any, *, quote: str) -> str:
        """The exact text of ``value`` (``quote``: the body's ``string_quote``)."""

    def string_quotes(self, quote: str) -> list[str]:
        """Every text that may quote a string in this codec."""
        return [quote]

    def decode_arguments(
        self, inner: str, *, assign: str, separator: str, quote: str
    ) -> dict[str, Any] | None:
        """A whole call's arguments (the text between its opener and closer) as a dict, or
        ``None`` when it does not read. The base returns ``None`` for a codec whose calls the
        parser reads incrementally (Python literals, ``parse/pycall.py``): see
        ``incremental``."""
        return None

    incremental: ClassVar[bool] = False
    """The parser reads this codec's arguments as they stream (Python literals, with its
    tolerant scanner); otherwise it waits for the call's closer (outside ``string_quotes``
    and brackets) and reads the whole arguments with :meth:`decode_arguments`."""


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
