"""JSON Schema -> GBNF, written for tool arguments (llama-cpp-python's converter is buggy).

Choices, all deliberate:

* Object keys come in the order ``properties`` declares them; required keys must appear, optional
  ones may be skipped. ``additionalProperties`` defaults to *false* when ``properties`` is given
  (tool arguments are closed) and to *true* when it is not (``{"type": "object"}`` is any object);
  extra keys, when allowed, come after the declared ones.
* ``{}``, ``true`` and annotation-only schemas (``title``, ``description``...) are ANY JSON value.
* ``oneOf`` is compiled as ``anyOf`` (exclusivity is not checked); ``allOf`` is merged when its
  parts do not conflict. ``$ref`` must point inside the document (``#/$defs/...``); recursion works.
* Integers honour ``minimum``/``maximum``/``exclusive*`` exactly (digit-range rules). Numbers only
  honour the sign those bounds imply (``minimum >= 0`` forbids ``-``, ``maximum < 0`` requires it).
* Strings: ``minLength``/``maxLength``, ``enum``/``const``, ``format`` date, time, date-time, uuid
  (other formats are annotations and ignored), and ``pattern`` for a regex subset (literals,
  classes, ``.``, groups, ``|``, ``? * + {m,n}``, ``\\d \\w \\s``); other regexes raise.
* Whitespace between tokens is flexible but bounded (see ``codec.WS``); no raw control characters
  inside strings.
* Prefix items (``prefixItems`` / list ``items``) are all required.
* Keywords that would need more than a context-free grammar, or that we do not compile, raise
  ``UnsupportedSchemaError`` with the JSON pointer of the keyword: ``UNSUPPORTED``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..dialect.spec import encode_python_value
from ..errors import UnsupportedSchemaError
from .codec import CODECS, Codec, CodecName
from .gbnf import GbnfBuilder, char_class, literal, optional_edges, until
from .regex import regex_to_gbnf
from .schema_checks import UNSUPPORTED

# short local names: the compiler below writes pointers on nearly every line
from .schema_checks import pointer_into as _pointer_into
from .schema_checks import pointer_to as _ptr
from .schema_checks import real_pointer as _real_pointer
from .schema_checks import refuse_unsupported as _refuse_unsupported

__all__ = [
    "UNSUPPORTED",
    "SchemaConverter",
    "json_schema_to_gbnf",
    "props_sequence",
    "schema_grammar",
]

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "default",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "contentEncoding",
        "contentMediaType",
        "$anchor",
    }
)
_FORMATS = {
    "date": '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
    "time": (
        '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? '
        '("Z" | "z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])?'
    ),
    "uuid": (
        '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" '
        "[0-9a-fA-F]{12}"
    ),
}
_FORMATS["date-time"] = f"({_FORMATS['date']}) [Tt ] ({_FORMATS['time']})"
_INT = '"-"? ("0" | [1-9] [0-9]{0,18})'
_FRAC_EXP = '("." [0-9]{1,20})? ([eE] [-+]? [0-9]{1,3})?'


def _group(expr: str) -> str:
    return f"({expr})"


class SchemaConverter:
    """Compiles (sub)schemas of one document into rules of a shared ``GbnfBuilder``."""

    def __init__(
        self, builder: GbnfBuilder, document: Any, *, codec: Codec | CodecName = "json"
    ) -> None:
        self.b = builder
        self.doc = document
        self.codec = CODECS[codec] if isinstance(codec, str) else codec
        self._raw_mode = False

    # -- entry points -------------------------------------------------------------------------

    def visit(self, schema: Any, pointer: str = "", *, hint: str = "value") -> str:
        """A rule name for values of ``schema`` in this converter's codec."""
        expr = self._expr(schema, pointer, hint)
        if expr in self.b.rules:  # already a rule (shared primitive, $ref): no wrapper
            return expr
        return self.b.add(hint, expr)

    def element_value(
        self, schema: Any, pointer: str, post: str, *, hint: str, string_only: bool | None = None
    ) -> str:
        """A rule for one element-body value *followed by* ``post`` (the template after
        ``{value}``): strings are raw text that cannot contain ``post``'s marker, the rest JSON.

        ``string_only`` True/False restricts to the raw-string / JSON alternative (for templates
        with ``{is_string}``); None picks by schema.
        """
        core = post.strip()
        tail = post[post.index(core) + len(core) :] if core else ""
        s = self._resolve(schema, pointer)
        admits = _admits_string(s, self)
        closing = optional_edges(post) or '""'
        if string_only is False or (string_only is None and admits == "no"):
            return self.b.add(hint, f"{self.visit(schema, pointer, hint=hint)} {closing}")
        if admits == "only" and isinstance(s, Mapping):
            raw = self._raw_string(s, pointer, core)
            if raw is not None:
                return self.b.add(hint, f"{raw} {closing}")
        if not core:
            raise UnsupportedSchemaError(
                f"an element value template needs a closing marker after {{value}}, got {post!r}",
                pointer=pointer,
            )
        stop = until(self.b, core, hint="raw")
        return self.b.add(hint, f"{stop} {literal(tail)}?" if tail else stop)

    # -- internals ----------------------------------------------------------------------------

    def _resolve(self, schema: Any, pointer: str) -> Any:
        seen = 0
        while isinstance(schema, Mapping) and "$ref" in schema and len(schema) == 1:
            schema = self._deref(schema["$ref"], _ptr(pointer, "$ref"))
            seen += 1
            if seen > 64:
                raise UnsupportedSchemaError(
                    f"$ref cycle without content at {pointer!r}", pointer=pointer
                )
        return schema

    def _deref(self, ref: Any, pointer: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsupportedSchemaError(
                f"only local $ref ('#/$defs/...') is supported, got {ref!r} at {pointer!r}",
                pointer=pointer,
            )
        node = self.doc
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise UnsupportedSchemaError(
                    f"$ref {ref!r} at {pointer!r} points nowhere", pointer=pointer
                )
        return node

    def _expr(self, schema: Any, pointer: str, hint: str) -> str:
        c, b = self.codec, self.b
        if schema is True or schema == {}:
            return self._any()
        if schema is False:
            raise UnsupportedSchemaError(
                f"schema 'false' at {pointer!r} matches nothing", pointer=pointer
            )
        if not isinstance(schema, Mapping):
            raise UnsupportedSchemaError(
                f"a schema must be an object or a boolean, got {schema!r} at {pointer!r}",
                pointer=pointer,
            )
        _refuse_unsupported(schema, pointer)
        if "$ref" in schema:
            ref = schema["$ref"]
            rest = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
            if rest:
                with _real_pointer(pointer, parts=(_ptr(pointer, "$ref"), pointer)):
                    return self._expr({"allOf": [{"$ref": ref}, rest]}, pointer, hint)
            key = ("ref", c.name, ref)
            if key not in b.memo:
                target = self._deref(ref, _ptr(pointer, "$ref"))
                name = b.name(str(ref).rsplit("/", 1)[-1] or "ref")
                b.memo[key] = name
                b.define(name, self._expr(target, str(ref)[1:], hint))
            return b.memo[key]
        if "allOf" in schema:
            with _pointer_into(self.doc, _ptr(pointer, "allOf")):
                return self._expr(self._merge_all_of(schema, pointer), pointer, hint)
        for kw in ("anyOf", "oneOf"):
            if kw in schema:
                branches = schema[kw]
                if not isinstance(branches, list) or not branches:
                    raise UnsupportedSchemaError(
                        f"{kw!r} at {pointer!r} must be a non-empty list", pointer=_ptr(pointer, kw)
                    )
                base = {k: v for k, v in schema.items() if k != kw and k not in _ANNOTATIONS}
                alts = []
                for i, br in enumerate(branches):
                    at = _ptr(pointer, kw, i)
                    if not base:
                        alts.append(self.visit(br, at, hint=f"{hint}-{i}"))
                        continue
                    with _real_pointer(at, parts=(pointer, at)):
                        alts.append(self.visit({"allOf": [base, br]}, at, hint=f"{hint}-{i}"))
                return " | ".join(dict.fromkeys(alts))
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
                    pointer=_ptr(pointer, "enum"),
                )
            return " | ".join(dict.fromkeys(c.const(v) for v in values))
        typ = schema.get("type")
        if isinstance(typ, list):
            if not typ:
                raise UnsupportedSchemaError(
                    f"empty 'type' list at {pointer!r}", pointer=_ptr(pointer, "type")
                )
            return " | ".join(
                self.visit({**schema, "type": t}, pointer, hint=f"{hint}-{t}") for t in typ
            )
        if typ is None:
            if any(k in schema for k in ("properties", "additionalProperties", "required")):
                typ = "object"
            elif any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
                typ = "array"
            elif any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
                typ = "string"
            elif any(
                k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
            ):
                typ = "number"
            else:
                return self._any()
        if typ == "object":
            return self._object(schema, pointer, hint)
        if typ == "array":
            return self._array(schema, pointer, hint)
        if typ == "string":
            content = self._string_content(schema, pointer, c.char(b))
            return c.quote(content) if content is not None else c.any_string(b)
        if typ == "integer":
            return self._integer(schema, pointer)
        if typ == "number":
            return self._number(schema, pointer)
        if typ == "boolean":
            return f"{c.scalar(b, 'true')} | {c.scalar(b, 'false')}"
        if typ == "null":
            return c.scalar(b, "null")
        raise UnsupportedSchemaError(
            f"unknown type {typ!r} at {_ptr(pointer, 'type')!r}", pointer=_ptr(pointer, "type")
        )

    def _merge_all_of(self, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        parts = schema["allOf"]
        if not isinstance(parts, list):
            raise UnsupportedSchemaError(
                f"'allOf' at {pointer!r} must be a list", pointer=_ptr(pointer, "allOf")
            )
        for i, raw in enumerate(parts):
            part_pointer = _ptr(pointer, "allOf", i)
            part = self._resolve(raw, part_pointer)
            if part is True:
                continue
            if not isinstance(part, Mapping):
                raise UnsupportedSchemaError(
                    f"allOf part {part!r} at {pointer!r} cannot be merged",
                    pointer=_ptr(pointer, "allOf", i),
                )
            if part is not raw and isinstance(raw, Mapping):  # a $ref: point into its target
                part_pointer = str(raw["$ref"])[1:]
            # Refuse here, where the pointer still names the keyword's real place in the schema.
            _refuse_unsupported(part, part_pointer)
            direct = part  # keys merged up from a nested allOf live deeper: point at the part
            if "allOf" in part:
                part = self._merge_all_of(part, part_pointer)
            for k, v in part.items():
                if k in _ANNOTATIONS:
                    continue
                if k == "properties" and isinstance(merged.get(k), Mapping):
                    merged[k] = {**merged[k], **v}
                elif k == "required":
                    merged[k] = list(dict.fromkeys([*merged.get(k, []), *v]))
                elif k in merged and merged[k] != v:
                    raise UnsupportedSchemaError(
                        f"allOf parts at {pointer!r} conflict on {k!r} ({merged[k]!r} vs {v!r}); "
                        "merge them by hand",
                        pointer=_ptr(part_pointer, k) if k in direct else part_pointer,
                    )
                else:
                    merged[k] = v
        return merged

    def _any(self) -> str:
        c, b = self.codec, self.b
        key = ("any", c.name, c.layout)
        if key not in b.memo:
            name = b.name(f"{c.name}-value")
            b.memo[key] = name
            ws, sep = c.pad(b), c.sep(b)
            any_key = c.any_string(b) if c.name != "gemma4" else "[a-zA-Z_] [a-zA-Z0-9_]*"
            kv = f"{any_key} {c.colon(b)} {name}"
            obj = b.add(
                f"{c.name}-object", f"{c.text('{')} {ws} ({kv} ({sep} {kv})*)? {ws} {c.text('}')}"
            )
            arr = b.add(
                f"{c.name}-array",
                f"{c.text('[')} {ws} ({name} ({sep} {name})*)? {ws} {c.text(']')}",
            )
            num = b.add("number", f"{_INT} {_FRAC_EXP}")
            body = " | ".join(
                [
                    obj,
                    arr,
                    c.any_string(b),
                    num,
                    c.scalar(b, "true"),
                    c.scalar(b, "false"),
                    c.scalar(b, "null"),
                ]
            )
            b.define(name, body)
        return b.memo[key]

    def _object(self, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
        c, b = self.codec, self.b
        props = schema.get("properties") or {}
        if not isinstance(props, Mapping):
            raise UnsupportedSchemaError(
                f"'properties' at {pointer!r} must be an object",
                pointer=_ptr(pointer, "properties"),
            )
        required = schema.get("required") or []
        unknown = [r for r in required if r not in props]
        addl = schema.get("additionalProperties", None if "properties" in schema else True)
        if unknown and addl in (None, False):
            raise UnsupportedSchemaError(
                f"required keys {unknown!r} at {pointer!r} are not in 'properties'; declare them",
                pointer=_ptr(pointer, "required"),
            )
        ws, sep, colon = c.pad(b), c.sep(b), c.colon(b)
        items = []
        for k, sub in props.items():
            value = self.visit(sub, _ptr(pointer, "properties", k), hint=f"{hint}-{k}")
            kv = b.add(f"{hint}-{k}-kv", f"{c.key(k)} {colon} {value}")
            items.append((kv, k in required))
        tail_rest = tail_first = ""
        if addl not in (None, False):
            value = self.visit(
                addl if isinstance(addl, (Mapping, bool)) else True,
                _ptr(pointer, "additionalProperties"),
                hint=f"{hint}-extra",
            )
            key = c.any_string(b) if c.name != "gemma4" else "[a-zA-Z_] [a-zA-Z0-9_]*"
            kv = b.add(f"{hint}-extra-kv", f"{key} {colon} {value}")
            tail_rest = f"({sep} {kv})*"
            tail_first = f"({kv} ({sep} {kv})*)?"
        seq = props_sequence(b, items, sep, hint=hint, tail_rest=tail_rest, tail_first=tail_first)
        return f"{c.text('{')} {ws} {seq} {ws} {c.text('}')}"

    def _array(self, schema: Mapping[str, Any], pointer: str, hint: str) -> str:
        c, b = self.codec, self.b
        ws, sep = c.pad(b), c.sep(b)
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        lo = int(schema.get("minItems", 0))
        hi = schema.get("maxItems")
        parts: list[str] = []
        if prefix:
            for i, sub in enumerate(prefix):
                parts.append(self.visit(sub, _ptr(pointer, "prefixItems", i), hint=f"{hint}-{i}"))
            lo = max(0, lo - len(prefix))
            hi = None if hi is None else max(0, int(hi) - len(prefix))
        head = f" {sep} ".join(parts)
        if items is False or hi == 0:
            body = head or '""'
        else:
            item = self.visit(items, _ptr(pointer, "items"), hint=f"{hint}-item")
            rep = _repeat(
                f"({sep} {item})",
                max(0, lo - (0 if parts else 1)),
                None if hi is None else int(hi) - (0 if parts else 1),
            )
            body = f"{head} {rep}" if parts else f"{item} {rep}" if lo >= 1 else f"({item} {rep})?"
        return f"{c.text('[')} {ws} {body} {ws} {c.text(']')}"

    def _string_content(self, schema: Mapping[str, Any], pointer: str, char: str) -> str | None:
        """Expression for constrained string content, or None for any string."""
        if "pattern" in schema:
            pat = schema["pattern"]
            if not isinstance(pat, str):
                raise UnsupportedSchemaError(
                    f"'pattern' at {pointer!r} must be a string", pointer=_ptr(pointer, "pattern")
                )
            return regex_to_gbnf(
                pat, pointer=_ptr(pointer, "pattern"), any_char=char, text=self._content_text
            )
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _group(_FORMATS[fmt])
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        if lo == 0 and hi is None:
            return None
        return _repeat(char, lo, None if hi is None else int(hi))

    def _content_text(self, s: str) -> str:
        """A literal piece of string content, escaped as this codec writes string content."""
        if self._raw_mode or self.codec.name == "gemma4":
            return literal(s)
        if self.codec.name == "python":
            return literal(encode_python_value(s)[1:-1])
        return literal(self.codec.encode(s)[1:-1])

    def _raw_string(self, schema: Mapping[str, Any], pointer: str, stop: str) -> str | None:
        """Raw (unquoted) string content for element values; None means 'until the stop marker'."""
        if "const" in schema:
            return literal(_raw(schema["const"]))
        if "enum" in schema and isinstance(schema["enum"], list):
            return _group(" | ".join(dict.fromkeys(literal(_raw(v)) for v in schema["enum"])))
        char = char_class(stop[:1], negate=True) if stop else "[^\\x00]"
        self._raw_mode = True
        try:
            content = self._string_content(schema, pointer, char)
        finally:
            self._raw_mode = False
        return None if content is None else _group(content)

    def _integer(self, schema: Mapping[str, Any], pointer: str) -> str:
        lo, hi = _bounds(schema, pointer, integer=True)
        if lo is None and hi is None:
            return _group(_INT)
        if lo is not None and hi is not None and lo > hi:
            raise UnsupportedSchemaError(
                f"integer bounds at {pointer!r} admit no value ({lo} > {hi})", pointer=pointer
            )
        if lo is not None and lo >= 0:
            return _group(_uint_range(lo, hi))
        if hi is not None and hi < 0:
            return f'"-" ({_uint_range(-hi, None if lo is None else -lo)})'
        neg = '"-" [1-9] [0-9]{0,18}' if lo is None else f'"-" ({_uint_range(1, -lo)})'
        return f"{neg} | {_uint_range(0, hi)}"

    def _number(self, schema: Mapping[str, Any], pointer: str) -> str:
        lo, hi = _bounds(schema, pointer, integer=False)
        unsigned = '("0" | [1-9] [0-9]{0,18})'
        if lo is not None and lo >= 0:
            return f"{unsigned} {_FRAC_EXP}"
        if hi is not None and hi < 0:
            return f'"-" {unsigned} {_FRAC_EXP}'
        return f"{_INT} {_FRAC_EXP}"


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _admits_string(schema: Any, conv: SchemaConverter) -> str:
    """'only', 'some' or 'no': whether values of ``schema`` at top level may be strings."""
    if schema is True or schema == {} or not isinstance(schema, Mapping):
        return "some"
    if "$ref" in schema:
        return _admits_string(conv._resolve({"$ref": schema["$ref"]}, ""), conv)
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


def _bounds(schema: Mapping[str, Any], pointer: str, *, integer: bool) -> tuple[Any, Any]:
    import math

    lo = hi = None
    for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        v = schema.get(key)
        if v is None or isinstance(v, bool):
            continue  # draft-4 boolean exclusive* flags are handled below
        if not isinstance(v, (int, float)):
            raise UnsupportedSchemaError(
                f"{key!r} at {pointer!r} must be a number, got {v!r}", pointer=_ptr(pointer, key)
            )
        excl = (
            key.startswith("exclusive")
            or schema.get("exclusive" + key[0].upper() + key[1:]) is True
        )
        if key.endswith("inimum"):
            b = (math.floor(v) + 1 if excl else math.ceil(v)) if integer else v
            lo = b if lo is None else max(lo, b)
        else:
            b = (math.ceil(v) - 1 if excl else math.floor(v)) if integer else v
            hi = b if hi is None else min(hi, b)
    if not integer and lo is not None and schema.get("exclusiveMinimum") is not None and lo == 0:
        lo = 0  # sign constraint only
    return lo, hi


def _repeat(x: str, lo: int, hi: int | None) -> str:
    if hi is None:
        return f"{x}{{{lo},}}" if lo > 1 else f"{x}+" if lo == 1 else f"{x}*"
    if hi <= 0:
        return '""'
    return f"{x}{{{lo},{hi}}}" if lo != hi else f"{x}{{{lo}}}"


def _same_len(a: str, z: str) -> str:
    if len(a) == 1:
        return literal(a) if a == z else f"[{a}-{z}]"
    if a[0] == z[0]:
        return f"{literal(a[0])} ({_same_len(a[1:], z[1:])})"
    k = len(a) - 1
    if a[1:] == "0" * k and z[1:] == "9" * k:
        return f"[{a[0]}-{z[0]}] [0-9]{{{k}}}"
    alts = [f"{literal(a[0])} ({_same_len(a[1:], '9' * k)})"]
    if int(a[0]) + 1 <= int(z[0]) - 1:
        alts.append(f"[{int(a[0]) + 1}-{int(z[0]) - 1}] [0-9]{{{k}}}")
    alts.append(f"{literal(z[0])} ({_same_len('0' * k, z[1:])})")
    return " | ".join(alts)


def _uint_range(lo: int, hi: int | None) -> str:
    """Decimal integers (no sign, no leading zeros) in ``[lo, hi]``; ``hi=None`` is unbounded."""
    top = hi if hi is not None else 10 ** len(str(lo)) - 1
    alts = []
    for length in range(len(str(lo)), len(str(top)) + 1):
        a = max(lo, 10 ** (length - 1) if length > 1 else 0)
        z = min(top, 10**length - 1)
        if a <= z:
            alts.append(_same_len(str(a), str(z)))
    if hi is None:
        d = len(str(lo))
        alts.append(f"[1-9] [0-9]{{{d},18}}")
    return " | ".join(f"({a})" for a in alts)


def props_sequence(
    b: GbnfBuilder,
    items: list[tuple[str, bool]],
    sep: str,
    *,
    hint: str,
    tail_rest: str = "",
    tail_first: str = "",
) -> str:
    """Key/value items in order, ``(rule, required)``, joined by ``sep``; optional ones may be
    left out. ``tail_*`` continue the sequence after / instead of the declared items.
    Linear size."""
    rest = tail_rest
    first = tail_first
    for i in range(len(items) - 1, -1, -1):
        kv, req = items[i]
        after = f" {rest}" if rest else ""
        new_first = f"{kv}{after}" if req else f"{kv}{after} | {first or chr(34) * 2}"
        new_rest = f"{sep} {kv}{after}" if req else f"({sep} {kv})?{after}"
        first = b.add(f"{hint}-from{i}", new_first)
        rest = b.add(f"{hint}-after{i}", new_rest)
    return first or '""'


def json_schema_to_gbnf(
    schema: Any, *, prefix: str = "", codec: CodecName = "json", builder: GbnfBuilder | None = None
) -> tuple[str, dict[str, str]]:
    """Compile ``schema``: ``(root rule name, {rule name: body})``. Pass ``builder`` to share rules
    between schemas; ``prefix`` is put in front of every rule name."""
    b = builder or GbnfBuilder(prefix=prefix)
    root = SchemaConverter(b, schema, codec=codec).visit(schema, "", hint="root")
    return root, b.rules


def schema_grammar(schema: Any, *, codec: CodecName = "json") -> str:
    """A complete grammar (root rule ``root``) for values of ``schema``."""
    b = GbnfBuilder()
    root_name = b.name("root")
    value = SchemaConverter(b, schema, codec=codec).visit(schema, "", hint="value")
    b.define(root_name, value)
    return b.render(root_name)
