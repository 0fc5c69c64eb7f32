"""Value codecs: how a call's argument values are spelled (``PythonBody.value_codec``). Each codec
is one module: a ``ValueCodec`` whose declared ``Syntax`` is what ``render_call`` writes, what
the grammar admits (``grammar/codec.py`` compiles any codec's syntax; no code of its own there)
and what the parser reads back (``read.py``, ``scan.py``). This registry is the one place that
knows them all; derivation tries them in its order (``dialect/derive/value_syntax.py``).

Adding a codec: a module here with a ``ValueCodec`` subclass declaring its ``Syntax``, and one
line in ``_BUILTIN`` below (docs/derivation.md, "Value codecs"; ``register_value_codec`` adds
one from outside the library). Markup codecs (``markup.py``: how an element body escapes its
string values, ``ElementBody.text_codec``) have a registry of their own there.
"""

from __future__ import annotations

from ...errors import DialectError
from .bare_key import BareKeyCodec
from .base import TOKEN_QUOTE, ValueCodec
from .edn import EdnCodec
from .js_object import JsObjectCodec
from .json_values import JsonCodec
from .lua_table import LuaTableCodec
from .markup import MarkupCodec, markup_codec, markup_codec_names, registered_markup_codecs
from .php_array import PhpArrayCodec
from .python import PythonCodec, encode_python_value
from .read import NotRead
from .ruby_hash import RubyHashCodec
from .ruby_symbols import RubySymbolsCodec
from .sql import SqlCodec
from .syntax import StringForm, Syntax
from .toml_inline import TomlInlineCodec
from .yaml_flow import YamlFlowCodec

__all__ = [
    "TOKEN_QUOTE",
    "BareKeyCodec",
    "EdnCodec",
    "JsObjectCodec",
    "JsonCodec",
    "LuaTableCodec",
    "MarkupCodec",
    "NotRead",
    "PhpArrayCodec",
    "PythonCodec",
    "RubyHashCodec",
    "RubySymbolsCodec",
    "SqlCodec",
    "StringForm",
    "Syntax",
    "TomlInlineCodec",
    "ValueCodec",
    "YamlFlowCodec",
    "canonical_codec_name",
    "encode_python_value",
    "markup_codec",
    "markup_codec_names",
    "register_value_codec",
    "registered_codecs",
    "registered_markup_codecs",
    "unregister_value_codec",
    "value_codec",
    "value_codec_names",
]

_REGISTRY: dict[str, ValueCodec] = {}
_ALIASES: dict[str, str] = {}


def register_value_codec(codec: ValueCodec) -> ValueCodec:
    """Make ``codec`` (and its aliases) a valid ``PythonBody.value_codec``."""
    _REGISTRY[codec.name] = codec
    for alias in codec.aliases:
        _ALIASES[alias] = codec.name
    return codec


def unregister_value_codec(name: str) -> None:
    """Forget the codec ``name`` and its aliases (a test's codec, once the test is done)."""
    codec = _REGISTRY.pop(name, None)
    for alias in codec.aliases if codec is not None else ():
        _ALIASES.pop(alias, None)


def canonical_codec_name(name: str) -> str:
    """The registered name ``name`` stands for (an old name saved in a spec reads as the new
    one); raises ``DialectError`` for an unknown one (also when a spec is loaded)."""
    name = _ALIASES.get(name, name)
    if name not in _REGISTRY:
        raise DialectError(f"unknown value codec {name!r}; known: {sorted(_REGISTRY)}")
    return name


def value_codec_names() -> list[str]:
    """Every registered codec name and alias."""
    return sorted([*_REGISTRY, *_ALIASES])


def value_codec(name: str) -> ValueCodec:
    """The registered codec ``name`` (or an alias of it)."""
    return _REGISTRY[canonical_codec_name(name)]


def registered_codecs() -> list[ValueCodec]:
    """Every registered codec, in the order derivation tries them."""
    return list(_REGISTRY.values())


# the order derivation tries them in: the first that writes a template's values wins a tie
_BUILTIN: tuple[ValueCodec, ...] = (
    PythonCodec(),
    BareKeyCodec(),
    JsonCodec(),
    JsObjectCodec(),
    YamlFlowCodec(),
    TomlInlineCodec(),
    LuaTableCodec(),
    RubyHashCodec(),
    RubySymbolsCodec(),
    PhpArrayCodec(),
    EdnCodec(),
    SqlCodec(),
)
for _codec in _BUILTIN:
    register_value_codec(_codec)
