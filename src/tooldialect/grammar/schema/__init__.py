"""JSON Schema -> GBNF: one converter (``converter``) for tool arguments and ``response_format``
schemas in any value syntax (``grammar.codec``), one module per kind of value.

``json_schema_to_gbnf`` and ``schema_grammar`` compile a whole schema; ``SchemaConverter``
compiles subschemas into a shared ``GbnfBuilder`` (the body kinds' arguments); ``props_sequence``
joins members in order, optional ones may be left out (bodies that write their own members).
"""

from .converter import SchemaConverter, implied_type, json_schema_to_gbnf, schema_grammar
from .keywords import UNSUPPORTED
from .objects import props_sequence

__all__ = [
    "UNSUPPORTED",
    "SchemaConverter",
    "implied_type",
    "json_schema_to_gbnf",
    "props_sequence",
    "schema_grammar",
]
