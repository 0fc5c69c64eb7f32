"""``ModelInfo``: what a chat handler needs from a GGUF model, read without loading weights.

Two sources give the same value: the file's header (:func:`read_gguf_metadata`) and an already
loaded ``llama_cpp.Llama`` (:meth:`ModelInfo.from_llama`, which never imports ``llama_cpp``).

The header is walked over a memory map. ``gguf.GGUFReader`` builds a numpy view for every element
of every array, which takes seconds on a 150k-token vocabulary (7 s for Qwen2.5's 491 MB file);
here arrays are skipped by length and only the BOS/EOS entries of ``tokenizer.ggml.tokens`` are
decoded, so the same file reads in milliseconds. The value-type codes and the magic number come
from the ``gguf`` package so the format is defined in one place.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from gguf import GGUF_MAGIC, GGUFValueType
from pydantic import BaseModel, ConfigDict, Field

from .errors import ModelMetadataError

__all__ = ["ModelInfo", "read_gguf_metadata"]

_TEMPLATE_KEY = "tokenizer.chat_template"
_TOKENS_KEY = "tokenizer.ggml.tokens"

# Fixed-size scalar types: struct format (little-endian) per GGUF value type.
_SCALARS: dict[int, str] = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
    GGUFValueType.BOOL: "<?",
}


class ModelInfo(BaseModel):
    """The facts about a model that templating and dialect detection need."""

    model_config = ConfigDict(frozen=True)

    path: str | None = None
    """The GGUF file this was read from (``None`` when built from an object without a path)."""
    architecture: str = ""
    """``general.architecture``, e.g. ``"qwen2"``, ``"llama"``, ``"gemma3"``."""
    name: str = ""
    """``general.name`` (human-readable; may be empty)."""
    chat_template: str | None = None
    """The default ``tokenizer.chat_template``, or ``None`` when the model carries none."""
    chat_templates: dict[str, str] = Field(default_factory=dict)
    """Named variants ``tokenizer.chat_template.<name>`` (e.g. ``tool_use``), keyed by name."""
    bos_token: str = ""
    """Text of the beginning-of-sequence token (empty when the model defines none)."""
    eos_token: str = ""
    """Text of the end-of-sequence token (empty when the model defines none)."""
    bos_token_id: int | None = None
    """``tokenizer.ggml.bos_token_id``."""
    eos_token_id: int | None = None
    """``tokenizer.ggml.eos_token_id``."""
    context_length: int | None = None
    """``<architecture>.context_length``: the context the model was trained for."""

    @classmethod
    def from_llama(cls, llama: _LlamaLike) -> ModelInfo:
        """Build from a loaded ``llama_cpp.Llama`` (its ``metadata`` dict and tokenizer).

        ``llama.metadata`` holds only scalar values (as strings); token texts come from the
        loaded vocabulary instead of the missing ``tokenizer.ggml.tokens`` array.
        """
        meta: Mapping[str, str] = llama.metadata
        arch = meta.get("general.architecture", "")
        bos_id = _int_or_none(meta.get("tokenizer.ggml.bos_token_id"))
        eos_id = _int_or_none(meta.get("tokenizer.ggml.eos_token_id"))
        if bos_id is None and llama.token_bos() >= 0:
            bos_id = llama.token_bos()
        if eos_id is None and llama.token_eos() >= 0:
            eos_id = llama.token_eos()
        model_path = getattr(llama, "model_path", None)
        return cls(
            path=str(model_path) if model_path is not None else None,
            architecture=arch,
            name=meta.get("general.name", ""),
            chat_template=meta.get(_TEMPLATE_KEY),
            chat_templates=_named_templates(meta),
            bos_token=_token_text(llama, bos_id),
            eos_token=_token_text(llama, eos_id),
            bos_token_id=bos_id,
            eos_token_id=eos_id,
            context_length=_int_or_none(meta.get(f"{arch}.context_length")),
        )


class _Vocab(Protocol):
    def token_get_text(self, token: int) -> str: ...


class _LlamaLike(Protocol):
    """The part of ``llama_cpp.Llama`` that :meth:`ModelInfo.from_llama` reads."""

    metadata: dict[str, str]
    _model: Any

    def token_bos(self) -> int: ...

    def token_eos(self) -> int: ...


def _int_or_none(value: object) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return None


def _token_text(llama: _LlamaLike, token_id: int | None) -> str:
    if token_id is None or token_id < 0:
        return ""
    text = llama._model.token_get_text(token_id)
    return text.decode("utf-8", errors="replace") if isinstance(text, bytes) else str(text)


def _named_templates(meta: Mapping[str, Any]) -> dict[str, str]:
    prefix = _TEMPLATE_KEY + "."
    return {
        key[len(prefix) :]: str(value)
        for key, value in meta.items()
        if key.startswith(prefix) and isinstance(value, str)
    }


class _HeaderReader:
    """Sequential reader of GGUF key/value metadata over a memory map (little-endian files)."""

    def __init__(self, buf: mmap.mmap) -> None:
        self.buf = buf
        self.offset = 0

    def scalar(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.buf, self.offset)
        self.offset += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        length = self.scalar("<Q")
        raw = self.buf[self.offset : self.offset + length]
        self.offset += length
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        length = self.scalar("<Q")
        self.offset += length

    def value(self, vtype: int) -> Any:
        if vtype == GGUFValueType.STRING:
            return self.string()
        fmt = _SCALARS.get(vtype)
        if fmt is None:
            raise ValueError(f"unknown GGUF value type {vtype!r} at offset {self.offset}")
        return self.scalar(fmt)

    def skip_array(self) -> tuple[int, int, int]:
        """Skip an array value; return (item type, length, offset of the first item)."""
        itype = self.scalar("<I")
        length = self.scalar("<Q")
        start = self.offset
        if itype == GGUFValueType.STRING:
            for _ in range(length):
                self.skip_string()
        elif itype == GGUFValueType.ARRAY:
            for _ in range(length):
                self.skip_array()
        else:
            fmt = _SCALARS.get(itype)
            if fmt is None:
                raise ValueError(f"unknown GGUF array item type {itype!r} at offset {start}")
            self.offset += struct.calcsize(fmt) * length
        return itype, length, start

    def string_at(self, start: int, index: int) -> str:
        """The ``index``-th item of a string array whose first item is at ``start``."""
        saved, self.offset = self.offset, start
        try:
            for _ in range(index):
                self.skip_string()
            return self.string()
        finally:
            self.offset = saved


def _read_header(buf: mmap.mmap) -> tuple[dict[str, Any], dict[str, tuple[int, int, int]]]:
    """Scalars and strings by key, and (item type, length, start) of every array by key."""
    reader = _HeaderReader(buf)
    magic = reader.scalar("<I")
    if magic != GGUF_MAGIC:
        raise ValueError(f"not a GGUF file (magic {magic:#x})")
    version = reader.scalar("<I")
    if version not in (2, 3):
        raise ValueError(f"unsupported GGUF version {version!r}")
    reader.scalar("<Q")  # tensor count: tensors are never read
    kv_count = reader.scalar("<Q")
    values: dict[str, Any] = {}
    arrays: dict[str, tuple[int, int, int]] = {}
    for _ in range(kv_count):
        key = reader.string()
        vtype = reader.scalar("<I")
        if vtype == GGUFValueType.ARRAY:
            arrays[key] = reader.skip_array()
        else:
            values[key] = reader.value(vtype)
    return values, arrays


def _token_from_array(
    buf: mmap.mmap, arrays: Mapping[str, tuple[int, int, int]], token_id: int | None
) -> str:
    tokens = arrays.get(_TOKENS_KEY)
    if token_id is None or tokens is None:
        return ""
    itype, length, start = tokens
    if itype != GGUFValueType.STRING or not 0 <= token_id < length:
        return ""
    return _HeaderReader(buf).string_at(start, token_id)


def read_gguf_metadata(path: str | os.PathLike[str]) -> ModelInfo:
    """Read a GGUF file's header into a :class:`ModelInfo`; tensors are never touched.

    Raises :class:`~tooldialect.ModelMetadataError` (quoting the path) when the file is missing,
    unreadable or not GGUF.
    """
    file = Path(path)
    try:
        with (
            file.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf,
        ):
            values, arrays = _read_header(buf)
            bos_id = _int_or_none(values.get("tokenizer.ggml.bos_token_id"))
            eos_id = _int_or_none(values.get("tokenizer.ggml.eos_token_id"))
            bos = _token_from_array(buf, arrays, bos_id)
            eos = _token_from_array(buf, arrays, eos_id)
    except (OSError, ValueError, struct.error) as exc:
        raise ModelMetadataError(
            f"cannot read GGUF metadata from {str(file)!r}: {exc}; "
            "check that the path points to a complete .gguf model file"
        ) from exc
    arch = str(values.get("general.architecture", ""))
    template = values.get(_TEMPLATE_KEY)
    return ModelInfo(
        path=str(file),
        architecture=arch,
        name=str(values.get("general.name", "")),
        chat_template=template if isinstance(template, str) else None,
        chat_templates=_named_templates(values),
        bos_token=bos,
        eos_token=eos,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        context_length=_int_or_none(values.get(f"{arch}.context_length")),
    )


def read_gguf_tokens(path: str | os.PathLike[str]) -> tuple[list[str], list[int]]:
    """A GGUF file's token texts and token types (``tokenizer.ggml.token_type``; empty when the
    file has none). Raises :class:`~tooldialect.ModelMetadataError` like
    :func:`read_gguf_metadata`."""
    file = Path(path)
    try:
        with (
            file.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf,
        ):
            _, arrays = _read_header(buf)
            reader = _HeaderReader(buf)
            tokens: list[str] = []
            found = arrays.get(_TOKENS_KEY)
            if found is not None and found[0] == GGUFValueType.STRING:
                reader.offset = found[2]
                tokens = [reader.string() for _ in range(found[1])]
            types: list[int] = []
            typed = arrays.get("tokenizer.ggml.token_type")
            if typed is not None and typed[0] in _SCALARS:
                reader.offset = typed[2]
                types = [int(reader.scalar(_SCALARS[typed[0]])) for _ in range(typed[1])]
    except (OSError, ValueError, struct.error) as exc:
        raise ModelMetadataError(
            f"cannot read GGUF tokens from {str(file)!r}: {exc}; "
            "check that the path points to a complete .gguf model file"
        ) from exc
    return tokens, types
