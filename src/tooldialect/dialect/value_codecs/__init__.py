"""Value codecs: how a Python-style call (``PythonBody``) spells its argument values, chosen by
``PythonBody.value_codec``. Each codec is one class in its own module (encode for
``render_call``, and how its calls are read back); this registry is the one place that knows
them all. The grammar's spelling of a codec lives in ``grammar/codec.py``, keyed by the same
name.

Adding a codec: a module here with a ``ValueCodec`` subclass, one line in ``_BUILTIN`` below,
and its grammar class in ``grammar/codec.py`` (see ``tests/dialect/test_value_codecs.py`` for
one registered from outside).
"""

from __future__ import annotations

from ...errors import DialectError
from .bare_key import BareKeyCodec
from .base import TOKEN_QUOTE, ValueCodec
from .python import PythonCodec, encode_python_value

__all__ = [
    "TOKEN_QUOTE",
    "BareKeyCodec",
    "PythonCodec",
    "ValueCodec",
    "canonical_codec_name",
    "encode_python_value",
    "register_value_codec",
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


_BUILTIN: tuple[ValueCodec, ...] = (PythonCodec(), BareKeyCodec())
for _codec in _BUILTIN:
    register_value_codec(_codec)
