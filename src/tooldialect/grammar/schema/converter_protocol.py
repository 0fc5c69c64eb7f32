"""What the per-kind modules of this package (``objects``, ``arrays``, ``combinators``) ask of
the converter that calls them.

They receive the converter as an argument and call back into it for subschemas. Typing them
against this protocol, not ``converter.SchemaConverter``, keeps the import graph a tree:
``converter`` imports the kind modules, and they import only this.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..codec import Codec
from ..gbnf import GbnfBuilder

__all__ = ["Converter"]


class Converter(Protocol):
    """A JSON Schema -> GBNF converter, as seen by the modules it dispatches to."""

    @property
    def b(self) -> GbnfBuilder:
        """The builder every rule goes into."""
        ...

    @property
    def doc(self) -> Any:
        """The whole schema document (``$ref`` targets are looked up in it)."""
        ...

    @property
    def codec(self) -> Codec:
        """The value syntax the grammar spells."""
        ...

    def visit(self, schema: Any, pointer: str = "", *, hint: str = "value") -> str:
        """A rule name for values of ``schema``."""
        ...

    def expr(self, schema: Any, pointer: str, hint: str) -> str:
        """A GBNF expression for values of ``schema``."""
        ...

    def resolve(self, schema: Any, pointer: str) -> Any:
        """``schema`` with bare ``$ref`` indirections followed."""
        ...

    def deref(self, ref: Any, pointer: str) -> Any:
        """The subschema a local ``$ref`` names."""
        ...

    def loosen(self, pointer: str, what: str) -> None:
        """Record that the grammar admits more than the schema at ``pointer`` (or refuse)."""
        ...

    def content_text(self, s: str) -> str:
        """A literal piece of string content, escaped as the codec writes string content."""
        ...
