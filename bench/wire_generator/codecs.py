"""Value codecs: how a generated template spells one JSON value, as a Jinja macro the template
itself calls, and the same spelling in Python (``encode``) for the tests.

Literal syntaxes (JSON, Python, YAML flow, TOML inline, JavaScript, Lua, Ruby, PHP, EDN, SQL) are
one table (``Literal``) read by one macro writer; markup escapes and type prefixes are macros of
their own. The JSON codec calls ``tojson``, as real templates do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .text import emit, lit, pattern_expr

__all__ = ["LITERALS", "Literal", "encode", "key_expr", "value_macro"]


@dataclass(frozen=True)
class Literal:
    """A literal syntax with maps, lists, strings and the three constants."""

    quote: str
    escapes: str
    """``backslash`` (``\\\\``, the quote, ``\\n``, ``\\r``, ``\\t``), ``doubled`` (the quote
    doubled, everything else raw: SQL) or ``quote_only`` (``\\\\`` and the quote: PHP)."""
    true: str
    false: str
    null: str | None
    """``None``: the syntax has no null (TOML); a null member is left out."""
    map_open: str
    map_close: str
    key: str
    """A member's key, ``{k}`` the key (``"{k}": ``, ``{k} = ``, ``:{k} ``)."""
    list_open: str
    list_close: str
    sep: str = ", "


LITERALS: dict[str, Literal] = {
    "json": Literal('"', "backslash", "true", "false", "null", "{", "}", '"{k}": ', "[", "]"),
    "python": Literal("'", "backslash", "True", "False", "None", "{", "}", "'{k}': ", "[", "]"),
    "yaml_flow": Literal('"', "backslash", "true", "false", "null", "{", "}", "{k}: ", "[", "]"),
    "toml_inline": Literal('"', "backslash", "true", "false", None, "{ ", " }", "{k} = ", "[", "]"),
    "js_object": Literal("'", "backslash", "true", "false", "null", "{", "}", "{k}: ", "[", "]"),
    "lua_table": Literal('"', "backslash", "true", "false", "nil", "{", "}", "{k} = ", "{", "}"),
    "ruby_hash": Literal('"', "backslash", "true", "false", "nil", "{", "}", ":{k} => ", "[", "]"),
    "php_array": Literal(
        "'", "quote_only", "true", "false", "null", "[", "]", "'{k}' => ", "[", "]"
    ),
    "edn": Literal('"', "backslash", "true", "false", "nil", "{", "}", ":{k} ", "[", "]", " "),
    "sql": Literal(
        "'", "doubled", "TRUE", "FALSE", "NULL", "JSON_OBJECT(", ")", "'{k}', ", "ARRAY[", "]"
    ),
}

_BACKSLASH = (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))


def _replacements(syntax: Literal) -> list[tuple[str, str]]:
    q = syntax.quote
    if syntax.escapes == "doubled":
        return [(q, q + q)]
    if syntax.escapes == "quote_only":
        return [("\\", "\\\\"), (q, "\\" + q)]
    return [_BACKSLASH[0], (q, "\\" + q), *_BACKSLASH[1:]]


def key_expr(codec: str, key: str) -> str:
    """The Jinja expression writing member key ``key`` (an expression) of ``codec``'s maps."""
    return pattern_expr(LITERALS[codec].key, k=key)


def _literal_macro(name: str, codec: str) -> list[str]:
    s = LITERALS[codec]
    escaped = "v" + "".join(f" | replace({lit(a)}, {lit(b)})" for a, b in _replacements(s))
    members = "v.items()" + (" if x is not none" if s.null is None else "")
    null = emit(lit(s.null)) if s.null is not None else emit(lit("{}"))
    return [
        f"{{%- macro {name}(v) %}}",
        "    {%- if v is none %}",
        "        " + null,
        "    {%- elif v is boolean %}",
        "        " + emit(f"{lit(s.true)} if v else {lit(s.false)}"),
        "    {%- elif v is number %}",
        "        " + emit("v"),
        "    {%- elif v is string %}",
        "        " + emit(f"{lit(s.quote)} ~ {escaped} ~ {lit(s.quote)}"),
        "    {%- elif v is mapping %}",
        "        " + emit(lit(s.map_open)),
        f"        {{%- for k, x in {members} %}}",
        "            " + emit(key_expr(codec, "k") + f" ~ {name}(x)"),
        "            {%- if not loop.last %}",
        "                " + emit(lit(s.sep)),
        "            {%- endif %}",
        "        {%- endfor %}",
        "        " + emit(lit(s.map_close)),
        "    {%- else %}",
        "        " + emit(lit(s.list_open)),
        "        {%- for x in v %}",
        "            " + emit(f"{name}(x)"),
        "            {%- if not loop.last %}",
        "                " + emit(lit(s.sep)),
        "            {%- endif %}",
        "        {%- endfor %}",
        "        " + emit(lit(s.list_close)),
        "    {%- endif %}",
        "{%- endmacro %}",
    ]


def _markup_macro(name: str, codec: str) -> list[str]:
    if codec == "markup_cdata":
        needs = "'<' in v or '&' in v or '\\n' in v"
        string = [
            f"        {{%- if {needs} %}}",
            "            " + emit("'<![CDATA[' ~ v ~ ']]>'"),
            "        {%- else %}",
            "            " + emit("v"),
            "        {%- endif %}",
        ]
        other = emit("v | tojson")
    else:
        quote = lit('"') + " ~ " if codec == "markup_attr" else ""
        close = " ~ " + lit('"') if codec == "markup_attr" else ""
        string = ["        " + emit(f"{quote}(v | e){close}")]
        other = emit(f"{quote}(v | tojson | e){close}")
    return [
        f"{{%- macro {name}(v) %}}",
        "    {%- if v is string %}",
        *string,
        "    {%- else %}",
        "        " + other,
        "    {%- endif %}",
        "{%- endmacro %}",
    ]


def _typed_macro(name: str) -> list[str]:
    return [
        f"{{%- macro {name}(v) %}}",
        "    {%- if v is none %}",
        "        " + emit(lit("~")),
        "    {%- elif v is boolean %}",
        "        " + emit("'?true' if v else '?false'"),
        "    {%- elif v is number %}",
        "        " + emit("'#' ~ v"),
        "    {%- elif v is string %}",
        "        " + emit("'$' ~ v"),
        "    {%- elif v is mapping %}",
        "        " + emit("'%' ~ v | tojson"),
        "    {%- else %}",
        "        " + emit("'@' ~ v | tojson"),
        "    {%- endif %}",
        "{%- endmacro %}",
    ]


def value_macro(name: str, codec: str) -> list[str]:
    """The Jinja macro ``name(v)`` writing one value in ``codec``."""
    if codec == "json":
        return [f"{{%- macro {name}(v) %}}", "    " + emit("v | tojson"), "{%- endmacro %}"]
    if codec in LITERALS:
        return _literal_macro(name, codec)
    if codec == "typed_prefix":
        return _typed_macro(name)
    return _markup_macro(name, codec)


# ---------------------------------------------------------------------------------------------
# The same spellings in Python


def _escape_markup(text: str) -> str:
    # markupsafe's escape, which Jinja's ``e`` filter is
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"), ("'", "&#39;")):
        text = text.replace(a, b)
    return text


def _number(value: float) -> str:
    return str(value)


def _encode_literal(syntax: Literal, value: Any) -> str:
    if value is None:
        return syntax.null if syntax.null is not None else "{}"
    if isinstance(value, bool):
        return syntax.true if value else syntax.false
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        text: str = value
        for a, b in _replacements(syntax):
            text = text.replace(a, b)
        return syntax.quote + text + syntax.quote
    if isinstance(value, Mapping):
        members = [
            syntax.key.replace("{k}", k) + _encode_literal(syntax, v)
            for k, v in value.items()
            if v is not None or syntax.null is not None
        ]
        return syntax.map_open + syntax.sep.join(members) + syntax.map_close
    items = [_encode_literal(syntax, v) for v in value]
    return syntax.list_open + syntax.sep.join(items) + syntax.list_close


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def encode(codec: str, value: Any) -> str:
    """What ``value_macro(..., codec)`` writes for ``value``."""
    if codec == "json":
        return _json(value)
    if codec in LITERALS:
        return _encode_literal(LITERALS[codec], value)
    if codec == "typed_prefix":
        if value is None:
            return "~"
        if isinstance(value, bool):
            return "?true" if value else "?false"
        if isinstance(value, (int, float)):
            return "#" + _number(value)
        if isinstance(value, str):
            return "$" + value
        return ("%" if isinstance(value, Mapping) else "@") + _json(value)
    if codec == "markup_cdata":
        if not isinstance(value, str):
            return _json(value)
        needs = any(c in value for c in "<&\n")
        return f"<![CDATA[{value}]]>" if needs else value
    text = _escape_markup(value if isinstance(value, str) else _json(value))
    return f'"{text}"' if codec == "markup_attr" else text
