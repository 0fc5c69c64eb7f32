"""The four body shapes of a call (``CallFormat.body``), each with what it writes.

* ``json``    - the whole call is a JSON object: ``{"name": ..., "arguments": {...}}``; key names
  vary, the name may be the key itself (Apertus), arguments may be a JSON string.
* ``tagged``  - a *head* template holds the name, then JSON arguments (optionally fenced by
  ``args_open``/``args_close``), then a *tail*.
* ``element`` - head, then one element per argument whose value is raw text typed by the tool's
  JSON Schema, then tail.
* ``python``  - ``name(k=v, ...)`` calls whose keys and values a value codec spells
  (``dialect/value_codecs``): Python literals, Gemma 4's ``call:name{k:<|"|>v<|"|>}``,
  ``f({city: 'Paris'})``, ``f{city = "Paris"}``, ``f(['city' => 'Paris'])``...

The grammar builds each shape's rule in ``grammar/bodies/`` and the parser reads it with the
reader ``parse/body_kinds.py`` names, both looked up by the body's class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from .element_values import json_type, singular
from .templates import SpecModel, format_template
from .value_codecs import TOKEN_QUOTE, canonical_codec_name, value_codec
from .value_codecs.markup import canonical_markup_name, markup_codec

__all__ = [
    "Body",
    "ElementBody",
    "JsonBody",
    "PythonBody",
    "TaggedBody",
    "dumps",
    "encode_element_params",
    "encode_element_value",
    "render_body",
]


class JsonBody(SpecModel):
    """The call is one JSON object."""

    kind: Literal["json"] = "json"
    name_key: str | None = "name"
    """Key holding the function name; ``None`` means the name *is* the single key (Apertus)."""
    arguments_key: str = "arguments"
    """Key holding the arguments (``parameters`` for Llama 3 and Command R)."""
    id_key: str | None = None
    """Key holding a call id the model writes (Mistral ``id``, Command R7B ``tool_call_id``)."""
    id_first: bool = False
    """Write ``id_key`` before the name (Command R7B) instead of after the arguments (Mistral)."""
    arguments_first: bool = False
    """Write the arguments before the name (the parser reads either order; the name then comes
    after the arguments, so a call streams once its object is complete)."""
    arguments_as_string: bool = False
    """Arguments are a JSON-encoded string rather than an object."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Constant keys written before the name, e.g. ``{"type": "function"}``."""
    arguments_aliases: list[str] = Field(default_factory=list)
    """Other keys the parser reads as the arguments (never written): Llama 3 models trained on
    ``parameters`` also write ``arguments``."""

    def head_template(self) -> str:
        """The template every call starts with (``""``: the body opens with JSON)."""
        return ""

    def render(self, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
        """Encode one call's body (no envelope)."""
        return dumps(_json_body_object(self, name, args, call_id))


class TaggedBody(SpecModel):
    """A head template naming the function, then JSON arguments, then a tail."""

    kind: Literal["tagged"] = "tagged"
    head: str = "{name}"
    """Template before the arguments; must contain ``{name}``, may contain ``{id}``/``{index}``."""
    args_open: str = ""
    """Text right before the JSON arguments (e.g. a code fence ``\\n```json\\n``)."""
    args_close: str = ""
    """Text right after the JSON arguments."""
    tail: str = ""
    """Text after ``args_close``; may repeat ``{name}`` (``</{name}>``)."""
    raw_args_key: str = ""
    """Read, never written: where the text after the head is not a JSON object, the call's raw
    text (to ``tail``, the next call's opener or the end of the reply) is the value of this key,
    for a tool whose schema has it as a string property (Functionary's ``python`` tool writes
    ``>>>python\nprint(1)``)."""

    def head_template(self) -> str:
        return self.head

    def render(self, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
        return (
            format_template(self.head, name=name, id=call_id, index=index)
            + self.args_open
            + dumps(dict(args))
            + self.args_close
            + format_template(self.tail, name=name)
        )


class ElementBody(SpecModel):
    """A head, then one element per argument with a raw text value, then a tail."""

    kind: Literal["element"] = "element"
    head: str = "<function={name}>\n"
    """Template before the first parameter; must contain ``{name}``."""
    param: str = "<parameter={key}>\n{value}\n</parameter>\n"
    """Template of one parameter: ``{key}``, ``{value}`` and optionally ``{is_string}``."""
    tail: str = "</function>\n"
    """Text after the last parameter; may repeat ``{name}`` (``</call:{name}>``)."""
    trim_value: bool = True
    """Strip one newline on each side of a value when parsing (Qwen3-Coder writes them)."""
    json_values: bool = False
    """Values are written as literals, strings quoted, in the value codec ``value_codec``
    (JSON by default: ``<arg_value>"Seoul"</arg_value>``, ``k = "v"``; ``k={a = 1}`` in Lua):
    the parser decodes a quoted value to the string it holds, another with the codec."""
    value_codec: Annotated[str, AfterValidator(canonical_codec_name)] = "json"
    """The value codec of ``json_values`` (``dialect/value_codecs``)."""
    value_quote: str = TOKEN_QUOTE
    """Which of its quotes ``value_codec`` writes (``PythonBody.string_quote``)."""
    type_names: dict[str, str] = Field(default_factory=dict)
    """What the template writes for ``{type}`` in ``param`` per JSON type (``string``,
    ``integer``, ``number``, ``boolean``, ``array``, ``object``, ``null``), e.g.
    ``{"string": "str", "integer": "int"}``; the parser types a value by it."""
    unescape_value: bool = False
    """The family writes newlines and tabs inside values as the two characters ``\\n`` /
    ``\\t``: the parser decodes them in string values. Off by default, as a value may hold a
    real backslash-n (a regex, a Windows path)."""
    text_codec: Annotated[str, AfterValidator(canonical_markup_name)] = ""
    """How string values are written inside the markup, a markup codec
    (``dialect/value_codecs/markup.py``): ``html-escape`` (``&amp;``, ``&lt;``, ``&gt;``,
    ``&#34;``, ``&#39;``, Jinja's ``| e``), ``xml-text``, ``xml-attr``, ``cdata`` (a CDATA
    section where the value holds ``<`` or ``&``)...; ``""``: as they are. ``render_call`` and
    grammars write that form, the parser reads it back. A spec saved with ``xml_escape: true``
    loads as ``html-escape``."""
    escape_json: bool = False
    """The JSON text of other values goes through ``text_codec`` too (``{{ v | tojson | e }}``,
    an attribute value ``value="[&#34;a&#34;]"``)."""
    child: str = ""
    """Template of one member of an object value, ``{key}`` and ``{value}``
    (``<{key}>{value}</{key}>``): objects are written as child elements, recursively. Empty:
    objects are written as JSON."""
    item: str = ""
    """Template of one element of an array value, ``{value}`` and optionally ``{key}`` (the
    array's key) or ``{singular}`` (its singular, ``tags`` -> ``tag``): ``<item>{value}</item>``.
    Empty: arrays are written as JSON."""
    omit_none: bool = False
    """Arguments (and nested members) whose value is ``None`` are left out."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_xml_escape(cls, data: Any) -> Any:
        # ``xml_escape: true`` (saved before markup codecs) is Jinja's ``| e``
        if isinstance(data, Mapping) and "xml_escape" in data:
            legacy = data["xml_escape"]
            data = {k: v for k, v in data.items() if k != "xml_escape"}
            if legacy and not data.get("text_codec"):
                data["text_codec"] = "html-escape"
        return data

    @property
    def xml_escape(self) -> bool:
        """String values hold entities the parser decodes (an escaping ``text_codec``)."""
        return bool(self.text_codec) and markup_codec(self.text_codec).decodes_entities

    repeat_arrays: bool = False
    """An array argument is written as one parameter per element, the key repeated
    (``<tag>a</tag><tag>b</tag>``); the parser collects repeated keys of an array parameter."""
    param_separator: str = ""
    """Text between two parameters, never after the last (`` ;; ``, ``, ``, ``<|and|>``, a
    line break): ``param`` then ends at its ``{value}`` (``{key}: {value}``), and a value runs
    to the next separator followed by a parameter of one of the tool's keys, or to the tail."""

    def head_template(self) -> str:
        return self.head

    def render(self, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
        params = encode_element_params(self, args)
        head = format_template(self.head, name=name, id=call_id, index=index)
        return head + params + format_template(self.tail, name=name)


class PythonBody(SpecModel):
    """A Python-style call: ``name(k=v, ...)`` or Gemma 4's ``call:name{k:v}``."""

    kind: Literal["python"] = "python"
    call_open: str = "{name}("
    """Template before the first argument; must contain ``{name}``."""
    call_close: str = ")"
    """Text after the last argument."""
    assign: str = "="
    """Between key and value."""
    arg_separator: str = ", "
    """Between two arguments."""
    value_codec: Annotated[str, AfterValidator(canonical_codec_name)] = "python"
    """How keys and values are written, a registered codec (``dialect/value_codecs``):
    ``python`` literals, ``bare-key`` (bare keys, strings between ``string_quote`` tokens,
    JSON-ish scalars; Gemma 4; saved as ``gemma4`` before it had this name), ``json``,
    ``js-object``, ``yaml-flow``, ``toml-inline``, ``lua-table``, ``ruby-hash``, ``php-array``,
    ``edn``..."""
    string_quote: str = TOKEN_QUOTE
    """The token around strings under a token-quoted codec (Gemma 4's ``<|"|>``,
    FunctionGemma's ``<escape>``), or which of its quotes a codec of several writes (``'`` or
    ``"``; the default stands for the codec's first)."""

    def head_template(self) -> str:
        return self.call_open

    def render(self, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
        codec, quote = value_codec(self.value_codec), self.string_quote
        inner = self.arg_separator.join(
            codec.encode_key(k, quote=quote) + self.assign + codec.encode(v, quote=quote)
            for k, v in codec.written(args, quote=quote).items()
        )
        head = format_template(self.call_open, name=name, id=call_id, index=index)
        return head + inner + self.call_close


Body = Annotated[JsonBody | TaggedBody | ElementBody | PythonBody, Field(discriminator="kind")]


def render_body(body: Body, name: str, args: Mapping[str, Any], call_id: str, index: int) -> str:
    """Encode one call's body (no envelope)."""
    return body.render(name, args, call_id, index)


def _json_body_object(
    body: JsonBody, name: str, args: Mapping[str, Any], call_id: str
) -> dict[str, Any]:
    arguments: Any = dumps(dict(args)) if body.arguments_as_string else dict(args)
    if body.name_key is None:
        return {name: arguments}
    obj: dict[str, Any] = {}
    if body.id_key and body.id_first:
        obj[body.id_key] = call_id
    obj.update(body.extra)
    if body.arguments_first:
        obj[body.arguments_key] = arguments
    obj[body.name_key] = name
    obj[body.arguments_key] = arguments
    if body.id_key and not body.id_first:
        obj[body.id_key] = call_id
    return obj


def dumps(value: Any) -> str:
    """``value`` as JSON, as bodies write it (non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


# -- element values: raw text, JSON, XML-escaped text, or nested child elements


def _fill(template: str, **values: str) -> str:
    return format_template(template, **values)


def _scalar(body: ElementBody, value: Any) -> str:
    if body.json_values:
        return value_codec(body.value_codec).encode(value, quote=body.value_quote)
    if isinstance(value, str):
        return markup_codec(body.text_codec).escape(value) if body.text_codec else value
    text = json.dumps(value, ensure_ascii=False)
    return markup_codec(body.text_codec).escape(text) if body.escape_json else text


def encode_element_value(body: ElementBody, key: str, value: Any) -> str:
    """The text of one value: objects and arrays as child elements where the body nests them
    (``None`` members left out where it omits them), other values as raw text or JSON."""
    if isinstance(value, Mapping) and body.child:
        return "".join(
            _fill(body.child, key=str(k), value=encode_element_value(body, str(k), v))
            for k, v in value.items()
            if not (v is None and body.omit_none)
        )
    if isinstance(value, (list, tuple)) and body.item:
        one = singular(key)
        return "".join(
            _fill(body.item, key=key, singular=one, value=encode_element_value(body, key, x))
            for x in value
        )
    return _scalar(body, value)


def _param(body: ElementBody, key: str, value: Any) -> str:
    kind = json_type(value)
    return _fill(
        body.param,
        key=key,
        value=encode_element_value(body, key, value),
        is_string="true" if isinstance(value, str) else "false",
        type=body.type_names.get(kind, kind),
    )


def encode_element_params(body: ElementBody, args: Mapping[str, Any]) -> str:
    """Every argument's parameter element, in order (``None`` ones left out where the body
    omits them, an array as one parameter per element where it repeats them), joined by the
    body's ``param_separator``."""
    out = []
    for key, value in args.items():
        if value is None and body.omit_none:
            continue
        if isinstance(value, (list, tuple)) and body.repeat_arrays:
            out += [_param(body, key, x) for x in value]
        else:
            out.append(_param(body, key, value))
    return body.param_separator.join(out)
