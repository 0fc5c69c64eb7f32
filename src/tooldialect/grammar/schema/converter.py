"""The JSON Schema -> GBNF converter: ``SchemaConverter`` and its dispatch on a schema's shape.

Each kind of value has its own module in this package, which also states that kind's choices:
``objects`` (and ``object_keys``, an extra key other than the declared ones), ``arrays``,
``strings`` (lengths, formats; ``pattern`` through ``regex``), ``numeric`` (integer ranges,
numbers), ``combinators`` (``$ref``, ``allOf``, ``anyOf``/``oneOf``, ``not``), ``keywords``
(what is refused or loose, and error pointers). They see the converter through
``converter_protocol``, so they import nothing from here.

Common choices:

* ``{}``, ``true`` and annotation-only schemas (``title``, ``description``...) are ANY JSON value.
* Whitespace between tokens is flexible but bounded (see ``grammar.codec.WS``); no raw control
  characters inside strings.
* Keywords that would need more than a context-free grammar, or that we do not compile, raise
  ``UnsupportedSchemaError`` with the JSON pointer of the keyword: ``UNSUPPORTED``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

from ...errors import UnsupportedSchemaError
from ..codec import ArgumentLayout, Codec, CodecName, codec_for
from ..gbnf import GbnfBuilder, char_class, literal, optional_edges, until, without
from ..optional_null import optional_null_keys
from .arrays import array_expr
from .combinators import all_of_expr, any_of_expr, apply_not, ref_expr
from .keywords import (
    LOOSE,
    EmptySchemaError,
    is_annotation,
    ptr,
    refuse_unsupported,
)
from .numeric import FRAC_EXP, INT, integer_expr, number_expr
from .object_keys import any_key
from .objects import object_expr
from .strings import string_content

__all__ = ["SchemaConverter", "implied_type", "json_schema_to_gbnf", "schema_grammar"]

_OBJECT_KEYS = (
    "properties",
    "additionalProperties",
    "required",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
)
_ARRAY_KEYS = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains")
_STRING_KEYS = ("minLength", "maxLength", "pattern", "format")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_MAX_DEPTH = 500


class SchemaConverter:
    """Compiles (sub)schemas of one document into rules of a shared ``GbnfBuilder``."""

    def __init__(
        self,
        builder: GbnfBuilder,
        document: Any,
        *,
        codec: Codec | CodecName = "json",
        strict: bool = False,
    ) -> None:
        self.b = builder
        self.doc = document
        self.codec = codec_for(codec) if isinstance(codec, str) else codec
        self.strict = strict
        """Refuse (``UnsupportedSchemaError``) instead of compiling a superset of the schema."""
        self.loose: list[tuple[str, str]] = []
        """``(pointer, what happens instead)`` for each constraint the grammar does not enforce
        (the grammar admits a superset there; ``grammar.validate`` checks the parsed value)."""
        self._raw_mode = False
        self._depth = 0
        self._null_keys: frozenset[str] = frozenset()
        """Keys the next object compiled also takes ``null`` for (``arguments``: the root's)."""

    # -- entry points -------------------------------------------------------------------------

    def visit(self, schema: Any, pointer: str = "", *, hint: str = "value") -> str:
        """A rule name for values of ``schema`` in this converter's codec."""
        if self._depth == 0:
            with _stack_for(_MAX_DEPTH):
                expr = self.expr(schema, pointer, hint)
        else:
            expr = self.expr(schema, pointer, hint)
        if expr in self.b.rules:  # already a rule (shared primitive, $ref): no wrapper
            return expr
        return self.b.add(hint, expr)

    def arguments(self, schema: Any, *, hint: str) -> str:
        """A rule for a tool call's arguments, ``schema`` being the document's root: where a
        top-level key's ``null`` means "not given" (``optional_null_keys``), ``null`` is
        accepted too (the parser drops the member). Nested objects keep their schema."""
        self._null_keys = optional_null_keys(schema)
        try:
            return self.visit(schema, "", hint=hint)
        finally:
            self._null_keys = frozenset()

    def element_value(
        self,
        schema: Any,
        pointer: str,
        post: str,
        *,
        hint: str,
        string_only: bool | None = None,
        stops: Sequence[str] = (),
        or_null: bool = False,
    ) -> str:
        """A rule for one element-body value *followed by* ``post`` (the template after
        ``{value}``): strings are raw text that cannot contain ``post``'s marker, the rest JSON.

        ``string_only`` True/False restricts to the raw-string / JSON alternative (for templates
        with ``{is_string}``); None picks by schema. ``stops``: where nothing follows the value
        (parameters joined by a separator), the texts a raw string never holds (the separator,
        the closers), so that it cannot run into them (a length or pattern constraint keeps it
        off their first characters instead). ``or_null``: ``null`` too, where the value admits
        no string (raw text ``null`` would be the string ``"null"``), for "not given"
        (``grammar/optional_null.py``).
        """
        core = post.strip()
        tail = post[post.index(core) + len(core) :] if core else ""
        s = self.resolve(schema, pointer)
        admits = _admits_string(s, self)
        closing = optional_edges(post) or '""'
        if string_only is False or (string_only is None and admits == "no"):
            value = self.visit(schema, pointer, hint=hint)
            if or_null and admits == "no":
                value = f"({value} | {self.codec.scalar(self.b, 'null')})"
            return self.b.add(hint, f"{value} {closing}")
        if admits == "only" and isinstance(s, Mapping):
            raw = self._raw_string(s, pointer, core)
            if raw is not None:
                return self.b.add(hint, f"{raw} {closing}")
        if not core and stops and isinstance(s, Mapping):
            char = char_class("".join(x[:1] for x in stops), negate=True)
            raw = self._raw_string(s, pointer, "", char=char) if admits == "only" else None
            return self.b.add(hint, raw or without(self.b, stops, hint="raw"))
        if not core:
            raise UnsupportedSchemaError(
                f"an element value template needs a closing marker after {{value}}, got {post!r}",
                pointer=pointer,
            )
        stop = until(self.b, core, hint="raw")
        return self.b.add(hint, f"{stop} {literal(tail)}?" if tail else stop)

    # -- shared with the per-kind modules -------------------------------------------------------

    def loosen(self, pointer: str, what: str) -> None:
        """Record that the grammar admits more than the schema at ``pointer`` (or refuse)."""
        if self.strict:
            raise UnsupportedSchemaError(
                f"{what} (at {pointer!r}); compile with strict=False for a grammar that admits "
                "a superset and validate the parsed value",
                pointer=pointer,
            )
        if (pointer, what) not in self.loose:
            self.loose.append((pointer, what))

    def resolve(self, schema: Any, pointer: str) -> Any:
        """``schema`` with bare ``$ref`` indirections (annotations aside) followed; a chain
        that comes back to itself before any structure (``a -> b -> a``) admits no value and
        would be the grammar rule ``a ::= b``, ``b ::= a``: it is refused."""
        chain: list[str] = []
        while (
            isinstance(schema, Mapping)
            and "$ref" in schema
            and all(k == "$ref" or is_annotation(k) for k in schema)
        ):
            ref = schema["$ref"]
            if ref in chain:
                cycle = " -> ".join(str(r) for r in [*chain[chain.index(ref) :], ref])
                raise UnsupportedSchemaError(
                    f"$ref cycle without content at {pointer!r} ({cycle}): it describes no "
                    "value; give one of its schemas a type or properties",
                    pointer=pointer,
                )
            chain.append(ref)
            schema = self.deref(ref, ptr(pointer, "$ref"))
        return schema

    def deref(self, ref: Any, pointer: str) -> Any:
        """The subschema a local ``$ref`` names."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsupportedSchemaError(
                f"only local $ref ('#/$defs/...') is supported, got {ref!r} at {pointer!r}",
                pointer=pointer,
            )
        node = self.doc
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise UnsupportedSchemaError(
                    f"$ref {ref!r} at {pointer!r} points nowhere", pointer=pointer
                )
        return node

    def expr(self, schema: Any, pointer: str, hint: str) -> str:
        """A GBNF expression for values of ``schema``."""
        self._depth += 1
        try:
            if self._depth > _MAX_DEPTH:
                raise UnsupportedSchemaError(
                    f"the schema nests deeper than {_MAX_DEPTH} levels at {pointer!r}",
                    pointer=pointer,
                )
            return self._expr(schema, pointer, hint)
        except RecursionError:
            raise UnsupportedSchemaError(
                f"the schema nests too deep for this Python stack at {pointer!r}", pointer=pointer
            ) from None
        finally:
            self._depth -= 1

    def _expr(self, schema: Any, pointer: str, hint: str) -> str:
        if schema is True or schema == {}:
            return self.any_value()
        if schema is False:
            raise UnsupportedSchemaError(
                f"schema 'false' at {pointer!r} matches nothing", pointer=pointer
            )
        if not isinstance(schema, Mapping):
            raise UnsupportedSchemaError(
                f"a schema must be an object or a boolean, got {schema!r} at {pointer!r}",
                pointer=pointer,
            )
        refuse_unsupported(schema, pointer)
        if "$recursiveRef" in schema:
            schema = {
                **{k: v for k, v in schema.items() if k != "$recursiveRef"},
                "$ref": schema["$recursiveRef"],
            }
        if "$ref" in schema:
            return ref_expr(self, schema, pointer, hint)
        for kw in LOOSE:
            if kw in schema:
                self.loosen(ptr(pointer, kw), f"{kw!r} is not enforced by the grammar")
        if "not" in schema:
            return self.expr(apply_not(self, schema, pointer), pointer, hint)
        if "allOf" in schema:
            return all_of_expr(self, schema, pointer, hint)
        for kw in ("anyOf", "oneOf"):
            if kw in schema:
                return any_of_expr(self, schema, pointer, hint, kw)
        return self._value_expr(schema, pointer, hint)

    def any_value(self) -> str:
        """The rule for any JSON value in this codec."""
        c, b = self.codec, self.b
        key = ("any", c.name, c.layout, c.string_quote)
        if key not in b.memo:
            name = b.name(f"{c.name}-value")
            b.memo[key] = name
            ws, sep = c.pad(b), c.sep(b)
            kv = f"{any_key(c, b)} {c.colon(b)} {name}"
            (o_open, o_close), (a_open, a_close) = c.brackets("object"), c.brackets("array")
            obj = b.add(f"{c.name}-object", f"{o_open} {ws} ({kv} ({sep} {kv})*)? {ws} {o_close}")
            ws, sep = c.item_pad(b), c.item_sep(b)
            arr = b.add(
                f"{c.name}-array", f"{a_open} {ws} ({name} ({sep} {name})*)? {ws} {a_close}"
            )
            num = b.add("number", f"{INT} {FRAC_EXP}")
            scalars = [c.scalar(b, "true"), c.scalar(b, "false"), c.scalar(b, "null")]
            b.define(name, " | ".join([obj, arr, c.any_string(b), num, *scalars]))
        return b.memo[key]

    def content_text(self, s: str) -> str:
        """A literal piece of string content, escaped as this codec writes string content."""
        return literal(s) if self._raw_mode else self.codec.content_text(s)

    # -- internals ----------------------------------------------------------------------------

    def _value_expr(self, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
        c, b = self.codec, self.b
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return f"{self.visit(rest, pointer, hint=hint)} | {c.scalar(b, 'null')}"
        if "const" in schema:
            return c.const(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise UnsupportedSchemaError(
                    f"'enum' at {pointer!r} must be a non-empty list, got {values!r}",
                    pointer=ptr(pointer, "enum"),
                )
            kept = _enum_values(values, schema.get("type"), pointer)
            return " | ".join(dict.fromkeys(c.const(v) for v in kept))
        typ = schema.get("type")
        if isinstance(typ, list):
            if not typ:
                raise UnsupportedSchemaError(
                    f"empty 'type' list at {pointer!r}", pointer=ptr(pointer, "type")
                )
            return " | ".join(
                self.visit({**schema, "type": t}, pointer, hint=f"{hint}-{t}") for t in typ
            )
        return self._typed_expr(schema, typ or implied_type(schema), pointer, hint)

    def _typed_expr(self, schema: Mapping[str, Any], typ: Any, pointer: str, hint: str) -> str:
        c, b = self.codec, self.b
        if typ is None:
            return self.any_value()
        if typ == "object":
            return self._object_expr(schema, pointer, hint)
        if typ == "array":
            return array_expr(self, schema, pointer, hint)
        if typ == "string":
            content = string_content(
                schema, pointer, char=c.char(b), text=self.content_text, loosen=self.loosen
            )
            return c.quote(content) if content is not None else c.any_string(b)
        if typ == "integer":
            return integer_expr(schema, pointer, b=b, loosen=self.loosen)
        if typ == "number":
            return number_expr(schema, pointer, b=b, loosen=self.loosen)
        if typ == "boolean":
            return f"{c.scalar(b, 'true')} | {c.scalar(b, 'false')}"
        if typ == "null":
            return c.scalar(b, "null")
        raise UnsupportedSchemaError(
            f"unknown type {typ!r} at {ptr(pointer, 'type')!r}", pointer=ptr(pointer, "type")
        )

    def _object_expr(self, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
        """``object_expr``, once per grammar for an object schema written again (a pagination or
        filter shape that many tools share): keyed by its text (property order included), except
        where it has ``$`` keywords (a ``$ref`` reads its own document) or loosens a constraint
        (the record names the first copy's pointer)."""
        # the root object's null keys, taken once: an object nested in it (the root again
        # through ``$ref: "#"`` too) keeps its schema
        nulls, self._null_keys = self._null_keys, frozenset()
        try:
            text = json.dumps(schema, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            text = '"$"'  # not JSON: never shared
        if '"$' in text:
            return object_expr(self, schema, pointer, hint, null_keys=nulls)
        c = self.codec
        key = (
            "object",
            c.name,
            c.layout,
            c.string_quote,
            self._raw_mode,
            self.strict,
            text,
            tuple(sorted(nulls)),
        )
        found = self.b.memo.get(key)
        if found is not None:
            return found
        loose = len(self.loose)
        expr = object_expr(self, schema, pointer, hint, null_keys=nulls)
        if len(self.loose) == loose:
            self.b.memo[key] = expr
        return expr

    def _raw_string(
        self, schema: Mapping[str, Any], pointer: str, stop: str, *, char: str = ""
    ) -> str | None:
        """Raw (unquoted) string content for element values; None means 'until the stop marker'.
        ``char`` is one content character (default: any but the stop's first)."""
        if "const" in schema:
            return literal(_raw(schema["const"]))
        if "enum" in schema and isinstance(schema["enum"], list):
            return "(" + " | ".join(dict.fromkeys(literal(_raw(v)) for v in schema["enum"])) + ")"
        char = char or (char_class(stop[:1], negate=True) if stop else "[^\\x00]")
        self._raw_mode = True
        try:
            content = string_content(
                schema, pointer, char=char, text=self.content_text, loosen=self.loosen
            )
        finally:
            self._raw_mode = False
        return None if content is None else f"({content})"


def _enum_values(values: list[Any], typ: Any, pointer: str) -> list[Any]:
    """The ``enum`` values a reply may write: those of the schema's ``type``. Where none is,
    the schema contradicts itself (a real one: ``"type": "integer", "enum": ["1", ..., "9"]``);
    rather than refuse the whole request, the values are read as the type where each spells one
    exactly (``"3"`` -> ``3``); the call is then checked against the schema as written
    (``invalid_arguments``). Otherwise no value fits (``EmptySchemaError``: an ``anyOf`` branch
    is dropped, a tool refused)."""
    kept = [v for v in values if _fits_type(v, typ)]
    if kept:
        return kept
    read = [_read_as(v, typ) for v in values]
    if all(r is not _NOT_READ for r in read):
        return read
    # no value (an ``anyOf`` branch whose enum the parent's type rules out): nothing fits
    raise EmptySchemaError(f"no 'enum' value at {pointer!r} has the schema's type", pointer=pointer)


_NOT_READ = object()


def _read_as(value: Any, typ: Any) -> Any:
    """``value`` (a string) read as a JSON scalar of ``typ``, else ``_NOT_READ``."""
    if not isinstance(value, str):
        return _NOT_READ
    try:
        read = json.loads(value)
    except ValueError:
        return _NOT_READ
    if isinstance(read, (list, dict)) or not _fits_type(read, typ) or json.dumps(read) != value:
        return _NOT_READ
    return read


def _fits_type(value: Any, typ: Any) -> bool:
    """Whether an ``enum`` value has (one of) the schema's ``type`` (no type: any)."""
    types = [typ] if isinstance(typ, str) else typ if isinstance(typ, list) else None
    if types is None:
        return True
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        kind = "integer"
    elif isinstance(value, float):
        kind = "number"
    else:
        kinds = {str: "string", list: "array", dict: "object", type(None): "null"}
        kind = kinds.get(type(value), "object")
    return kind in types or (kind == "integer" and "number" in types)


@contextmanager
def _stack_for(depth: int) -> Iterator[None]:
    # about 8 Python frames per schema level (dispatch, per-kind helper, visit); compiling is
    # pure Python recursion, which 3.11+ runs without growing the C stack
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * depth + 200))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def implied_type(schema: Mapping[str, Any]) -> str | None:
    """The type a schema without ``type`` is compiled as: the first of object, array, string,
    number whose keywords it uses (``{"minProperties": 1}`` an object), else ``None`` (any value).

    JSON Schema lets such a schema admit every other type as well; a grammar for tool arguments
    that writes ``false`` for ``{"properties": ...}`` serves nobody, so the compiler narrows (as
    llama.cpp's own converter does for ``properties``). On JSONSchemaBench's 57 root schemas of
    this kind, none of the 46 valid instances has another type."""
    for typ, keys in (
        ("object", _OBJECT_KEYS),
        ("array", _ARRAY_KEYS),
        ("string", _STRING_KEYS),
        ("number", _NUMBER_KEYS),
    ):
        if any(k in schema for k in keys):
            return typ
    return None


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _admits_string(schema: Any, conv: SchemaConverter) -> str:
    """'only', 'some' or 'no': whether values of ``schema`` at top level may be strings."""
    if schema is True or schema == {} or not isinstance(schema, Mapping):
        return "some"
    if "$ref" in schema:
        return _admits_string(conv.resolve({"$ref": schema["$ref"]}, ""), conv)
    if "const" in schema:
        return "only" if isinstance(schema["const"], str) else "no"
    if "enum" in schema and isinstance(schema["enum"], list):
        kinds = {isinstance(v, str) for v in schema["enum"]}
        return "only" if kinds == {True} else "no" if kinds == {False} else "some"
    for kw in ("anyOf", "oneOf"):
        if isinstance(schema.get(kw), list):
            kinds2 = {_admits_string(s, conv) for s in schema[kw]}
            return "only" if kinds2 == {"only"} else "no" if kinds2 == {"no"} else "some"
    typ = schema.get("type")
    types = typ if isinstance(typ, list) else [typ] if typ else []
    if schema.get("nullable") is True and types:
        types = [*types, "null"]
    if not types:
        if any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
            return "only"
        if any(k in schema for k in ("properties", "items", "prefixItems", "minimum", "maximum")):
            return "no"
        return "some"
    if "string" not in types:
        return "no"
    return "only" if set(types) == {"string"} else "some"


def json_schema_to_gbnf(
    schema: Any, *, prefix: str = "", codec: CodecName = "json", builder: GbnfBuilder | None = None
) -> tuple[str, dict[str, str]]:
    """Compile ``schema``: ``(root rule name, {rule name: body})``. Pass ``builder`` to share rules
    between schemas; ``prefix`` is put in front of every rule name."""
    b = builder or GbnfBuilder(prefix=prefix)
    root = SchemaConverter(b, schema, codec=codec).visit(schema, "", hint="root")
    return root, b.rules


def schema_grammar(
    schema: Any, *, codec: CodecName = "json", layout: ArgumentLayout = "free", strict: bool = False
) -> str:
    """A complete grammar (root rule ``root``) for values of ``schema``."""
    b = GbnfBuilder()
    root_name = b.name("root")
    conv = SchemaConverter(b, schema, codec=codec_for(codec, layout), strict=strict)
    value = conv.visit(schema, "", hint="value")
    b.define(root_name, value)
    return b.render(root_name)
