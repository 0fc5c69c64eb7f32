"""The Jinja that writes an assistant turn's calls: the argument structure (a macro), and the loop
over ``message.tool_calls`` with the envelope, the name, the id, the separator and the section.

Axis values are documented in the package docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .codecs import LITERALS, key_expr
from .draw import Draw
from .space import WireAxes
from .text import emit, indent, lit, pattern_expr

__all__ = ["CallsJinja", "calls_jinja"]

CALL_WORDS = ("tool_call", "call", "function_call", "invoke", "action", "fn", "use_tool", "op")
SECTION_WORDS = ("tool_calls", "calls", "actions", "function_calls", "batch", "ops")
ELEMENT_WORDS = ("invoke", "call", "function", "tool", "run", "request")
ARGS_ELEMENT_WORDS = ("args", "params", "input", "call_args")
NAME_KEYS = ("name", "tool", "function", "action")
ARGS_KEYS = ("arguments", "args", "parameters", "input")
ID_KEYS = ("id", "call_id", "ref")


@dataclass(frozen=True)
class CallsJinja:
    """The macros the calls need (before the template's first use) and the loop writing them."""

    macros: list[str]
    loop: list[str]


def _envelope(axes: WireAxes, draw: Draw) -> tuple[str, str]:
    w = draw.word("call_word", CALL_WORDS)
    spellings: dict[str, list[tuple[str, str]]] = {
        "special": [("<|{w}|>", "<|/{w}|>"), ("<|{w}_begin|>", "<|{w}_end|>")],
        "tag": [("<{w}>", "</{w}>"), ("<{w}>\n", "\n</{w}>")],
        "bracket": [("[{W}]", "[/{W}]"), ("[[{w}]]", "[[/{w}]]"), ("[{W}]", "")],
        "word": [("Action: ", ""), ("CALL ", " END"), (">>> ", ""), ("{T}: ", "")],
        "none": [("", "")],
    }
    opener, closer = draw.one("envelope", spellings[axes.envelope])
    fill = {"w": w, "W": w.upper(), "T": w.title().replace("_", "")}
    return opener.format(**fill), closer.format(**fill)


def _section(axes: WireAxes, draw: Draw) -> tuple[str, str]:
    if axes.section == "none":
        return "", ""
    s = draw.word("section_word", SECTION_WORDS)
    spellings = [
        ("<|{s}|>", "<|/{s}|>"),
        ("<{s}>\n", "\n</{s}>"),
        ("[{S}]", "[/{S}]"),
        ("<|{s}_begin|>", "<|{s}_end|>"),
    ]
    opener, closer = draw.one("section", spellings)
    return opener.format(s=s, S=s.upper()), closer.format(s=s, S=s.upper())


def _separator(axes: WireAxes, draw: Draw) -> str:
    fixed = {"newline": "\n", "blank_line": "\n\n", "glued": "", "comma": ", "}
    if axes.separator in fixed:
        return fixed[axes.separator]
    return draw.one("separator_marker", ["<|next|>", "<|and|>", " ||| ", "<|sep|>"])


class _Args:
    """Writes the argument structure's macros; ``self.v`` is the value macro's name."""

    def __init__(self, axes: WireAxes, draw: Draw, value: str) -> None:
        self.axes, self.draw, self.v = axes, draw, value
        self.syntax = LITERALS.get(axes.codec)
        self.skip_null = " if value is not none" if axes.codec == "toml_inline" else ""
        self.name_key = draw.word("name_key", NAME_KEYS)
        self.args_key = draw.word("args_key", ARGS_KEYS)
        self.id_key = draw.word("id_key", ID_KEYS)
        self.items_open = ""

    def val(self, expr: str) -> str:
        return f"{self.v}({expr})"

    def key(self, expr: str) -> str:
        return key_expr(self.axes.codec, expr)

    def wrap_map(self, inner: str) -> list[str]:
        """``render_arguments`` for a structure that is one value of a map syntax (the object,
        literal records): the name inside the map, the name as its key, or the value alone."""
        assert self.syntax is not None
        s = self.syntax
        opener, sep, close = lit(s.map_open), lit(s.sep), lit(s.map_close)
        if self.axes.name_at == "key":
            return [emit(f"{opener} ~ {self.key('name')} ~ {inner} ~ {close}")]
        if self.axes.name_at != "inside":
            return [emit(inner)]
        head = opener
        if _id_place(self.axes) == "member":
            head += f" ~ {self.key(lit(self.id_key))} ~ {self.val('call_id')} ~ {sep}"
        head += f" ~ {self.key(lit(self.name_key))} ~ {self.val('name')} ~ {sep}"
        return [emit(f"{head} ~ {self.key(lit(self.args_key))} ~ {inner} ~ {close}")]

    def nested(self, macro: str, ends: tuple[str, str, str, str], sep: str) -> list[str]:
        """``render_nested(v)``: an object through ``macro``, an array item by item between
        ``ends`` (list open, item open, item close, list close: Jinja expressions), else a
        value."""
        list_open, item_open, item_close, list_close = ends
        return [
            "{%- macro render_nested(v) %}",
            "    {%- if v is mapping %}",
            "        " + emit(f"{macro}(v)"),
            "    {%- elif v is iterable and v is not string %}",
            "        " + emit(list_open),
            "        {%- for x in v %}",
            "            " + emit(f"{item_open} ~ render_nested(x) ~ {item_close}"),
            "            {%- if not loop.last %}",
            "                " + emit(sep),
            "            {%- endif %}",
            "        {%- endfor %}",
            "        " + emit(list_close),
            "    {%- else %}",
            "        " + emit(self.val("v")),
            "    {%- endif %}",
            "{%- endmacro %}",
        ]

    def inner_value(self) -> str:
        return "render_nested(value)" if self.axes.nesting == "structure" else self.val("value")


Pattern = Callable[[str], str]
"""A Jinja expression around a key expression (``lambda k: "'<' ~ " + k + " ~ '>'"``)."""


def _per_argument(
    a: _Args, head: Pattern, joiner: str, close: Pattern | None = None, *, name: bool = True
) -> list[str]:
    """One ``head(key)`` + value (+ ``close(key)``) per argument, joined by ``joiner``; first the
    name under its key where it goes inside (``name``: this is the call's own argument list)."""

    def around(key: str, value: str) -> str:
        return f"{head(key)} ~ {value}" + (f" ~ {close(key)}" if close else "")

    lines = []
    if name and a.axes.name_at == "inside":
        lines += [
            emit(around(lit(a.name_key), a.val("name"))),
            "{%- if args %}",
            "    " + emit(joiner),
            "{%- endif %}",
        ]
    return [
        *lines,
        f"{{%- for key, value in args.items(){a.skip_null} %}}",
        "    " + emit(around("key", a.inner_value())),
        "    {%- if not loop.last %}",
        "        " + emit(joiner),
        "    {%- endif %}",
        "{%- endfor %}",
    ]


def _object(a: _Args) -> tuple[list[str], list[str]]:
    return [], a.wrap_map(a.val("args"))


def _items(a: _Args) -> tuple[list[str], list[str]]:
    assign, sep, term = a.draw.one(
        "items",
        [
            ("=", ", ", ""),
            (": ", ", ", ""),
            ("=", "; ", ""),
            (" = ", "\n", ""),
            (": ", "", ";\n"),
            (" => ", ", ", ""),
            ("=", " ", ""),
        ],
    )
    wraps = [("", ""), ("{", "}")]
    if a.axes.name_at == "before":
        wraps.append(("(", ")"))
    opener, closer = a.draw.one("items_wrap", wraps)
    a.items_open = opener
    lines = [
        emit(lit(opener)),
        *_per_argument(a, lambda k: f"{k} ~ {lit(assign)}", lit(sep), lambda _: lit(term)),
    ]
    return [], [*lines, emit(lit(closer))]


def _records(a: _Args) -> tuple[list[str], list[str]]:
    rn, rv = a.draw.one(
        "record_keys", [("name", "value"), ("key", "val"), ("param", "arg"), ("field", "data")]
    )
    if a.syntax is not None:
        s = a.syntax
        sep = lit(s.sep)
        record = (
            f"{lit(s.map_open)} ~ {a.key(lit(rn))} ~ {a.val('key')} ~ {sep} ~ "
            f"{a.key(lit(rv))} ~ {a.inner_value()} ~ {lit(s.map_close)}"
        )
        macro = [
            "{%- macro render_records(args) %}",
            "    " + emit(lit(s.list_open)),
            f"    {{%- for key, value in args.items(){a.skip_null} %}}",
            "        " + emit(record),
            "        {%- if not loop.last %}",
            "            " + emit(sep),
            "        {%- endif %}",
            "    {%- endfor %}",
            "    " + emit(lit(s.list_close)),
            "{%- endmacro %}",
        ]
        ends = (lit(s.list_open), "''", "''", lit(s.list_close))
        nested = a.nested("render_records", ends, sep)
        return [*macro, *nested], a.wrap_map("render_records(args)")
    elements = [w for w in ("param", "arg", "entry", "record") if w not in (rn, rv)]
    el = a.draw.word("record_element", elements)
    joiner = lit(a.draw.one("record_joiner", ["", "\n"]))
    record = f"'<{el}><{rn}>' ~ key ~ '</{rn}><{rv}>' ~ {a.inner_value()} ~ '</{rv}></{el}>'"
    macro = [
        "{%- macro render_records(args) %}",
        "    {%- for key, value in args.items() %}",
        "        " + emit(record),
        "        {%- if not loop.last %}",
        "            " + emit(joiner),
        "        {%- endif %}",
        "    {%- endfor %}",
        "{%- endmacro %}",
    ]
    nested = a.nested("render_records", ("''", "'<item>'", "'</item>'", "''"), "''")
    body = "render_records(args)"
    if a.axes.name_at == "inside":
        tag = a.name_key
        body = f"'<{tag}>' ~ {a.val('name')} ~ '</{tag}>' ~ {joiner} ~ {body}"
    return [*macro, *nested], [emit(body)]


def _headings(a: _Args) -> tuple[list[str], list[str]]:
    pattern = a.draw.one(
        "argument_heading", ["## {k}\n", "### {k}\n", "[{k}]\n", "@{k}:\n", "-- {k} --\n"]
    )
    return [], _per_argument(a, lambda k: pattern_expr(pattern, k=k), lit("\n"))


def _attributes(a: _Args) -> tuple[list[str], list[str]]:
    return [], _per_argument(a, lambda k: f"' ' ~ {k} ~ '='", "''")


def _open_markers(a: _Args) -> tuple[list[str], list[str]]:
    km, vm = a.draw.one(
        "open_markers",
        [("<|arg|>", "<|val|>"), ("<|key|>", "<|value|>"), ("@@", "::"), ("<param:", ">")],
    )
    return [], _per_argument(a, lambda k: f"{lit(km)} ~ {k} ~ {lit(vm)}", "''")


def _elements(a: _Args) -> tuple[list[str], list[str]]:
    p = a.draw.word("element_word", ("parameter", "param", "arg", "field"))
    opener, closer = a.draw.one(
        "element",
        [
            (f'<{p} name="{{k}}">', f"</{p}>"),
            ("<{k}>", "</{k}>"),
            (f"<{p}={{k}}>\n", f"\n</{p}>"),
            (f"<{p}:{{k}}>", f"</{p}:{{k}}>"),
        ],
    )
    joiner = lit(a.draw.one("element_joiner", ["", "\n"]))

    def head(k: str) -> str:
        return pattern_expr(opener, k=k)

    def close(k: str) -> str:
        return pattern_expr(closer, k=k)

    body = _per_argument(a, head, joiner, close)
    if a.axes.nesting != "structure":
        return [], body
    # nested objects as child elements, arrays as one item element per value
    children = _per_argument(a, head, joiner, close, name=False)
    macro = ["{%- macro render_elements(args) %}", *indent(children), "{%- endmacro %}"]
    item = a.draw.word("item_word", ("item", "li", "entry"))
    ends = ("''", f"'<{item}>'", f"'</{item}>'", "''")
    return [*macro, *a.nested("render_elements", ends, joiner)], body


_STRUCTURES: dict[str, Callable[[_Args], tuple[list[str], list[str]]]] = {
    "object": _object,
    "items": _items,
    "records": _records,
    "headings": _headings,
    "attributes": _attributes,
    "open_markers": _open_markers,
    "elements": _elements,
}


def _arguments_macro(a: _Args) -> list[str]:
    helpers, body = _STRUCTURES[a.axes.structure](a)
    return [
        *helpers,
        "{%- macro render_arguments(name, args, call_id) %}",
        *indent(body),
        "{%- endmacro %}",
    ]


def _call_id(axes: WireAxes, draw: Draw) -> list[str]:
    if axes.ids == "caller":
        return ["{%- set call_id = call.id if call.id is defined and call.id else 'call' %}"]
    if axes.ids == "counter":
        prefix = lit(draw.word("counter_prefix", ("call_", "c", "t", "id")))
        return ["{%- set ns.calls = ns.calls + 1 %}", f"{{%- set call_id = {prefix} ~ ns.calls %}}"]
    exprs = {
        "none": "''",
        "index0": "loop.index0 | string",
        "index1": "loop.index | string",
        "letters": "'abcdefghijklmnopqrstuvwxyz'[loop.index0]",
    }
    return [f"{{%- set call_id = {exprs[axes.ids]} %}}"]


def _key_element(axes: WireAxes) -> bool:
    """Whether the name is the tag of the call's element (``<NAME ...>``), not a map key."""
    if axes.name_at != "key":
        return False
    markup_records = axes.structure == "records" and axes.codec not in LITERALS
    return axes.structure in ("elements", "attributes") or markup_records


def _id_place(axes: WireAxes) -> str:
    """Where the id goes: ``attr`` (an attribute of the call's element), ``member`` (a member of
    the call's map, written by ``render_arguments``), ``token`` (text after the envelope) or
    ``none``."""
    if axes.ids == "none":
        return "none"
    if axes.name_at == "attribute" or _key_element(axes):
        return "attr"
    in_map = axes.structure == "object" or (axes.structure == "records" and axes.codec in LITERALS)
    return "member" if axes.name_at == "inside" and in_map else "token"


def _named_call(a: _Args, args: str, id_attr: str) -> list[str]:
    """The call's name and its arguments (``args``: the expression writing them)."""
    axes, draw = a.axes, a.draw
    attrs = axes.structure == "attributes"
    element = draw.word("element_name", ELEMENT_WORDS)
    name_attr = draw.word("name_attribute", ("name", "tool", "function"))
    glue = lit(draw.one("inner_glue", ["", "\n"]))
    head = ""
    if axes.name_at == "attribute":
        head = f"'<{element} {name_attr}=\"' ~ fn.name ~ '\"' ~ {id_attr}"
    elif _key_element(axes):
        head = f"'<' ~ fn.name ~ {id_attr}"
    if head:
        if attrs:
            return [emit(f"{head} ~ {args} ~ '/>'")]
        close = f"'</{element}>'" if axes.name_at == "attribute" else "'</' ~ fn.name ~ '>'"
        return [emit(f"{head} ~ '>' ~ {glue} ~ {args} ~ {glue} ~ {close}")]
    if attrs:
        args = f"'<{draw.word('args_element', ARGS_ELEMENT_WORDS)}' ~ {args} ~ '/>'"
    if axes.name_at == "before":
        glues = ["", " ", "\n", ": "] if axes.structure == "object" else [" ", "\n", ""]
        if axes.structure == "items":
            glues = [""] if a.items_open in ("(", "{") else [" ", "\n"]
        if axes.structure == "headings":
            glues = ["\n"]  # a heading starts a line
        return [emit(f"fn.name ~ {lit(draw.one('name_glue', glues))} ~ {args}")]
    if axes.name_at == "heading":
        pattern = draw.one(
            "name_heading", ["### {n}\n", "# {n}\n", "[{n}]\n", "=== {n} ===\n", "{n}:\n"]
        )
        return [emit(f"{pattern_expr(pattern, n='fn.name')} ~ {args}")]
    return [emit(args)]


def calls_jinja(axes: WireAxes, draw: Draw, value: str, *, strict: bool) -> CallsJinja:
    """The argument macros and the call loop for ``axes`` (``value``: the value macro's name)."""
    a = _Args(axes, draw, value)
    macros = _arguments_macro(a)
    env_open, env_close = _envelope(axes, draw)
    sec_open, sec_close = _section(axes, draw)
    sep = _separator(axes, draw)
    place = _id_place(axes)
    id_attr = f"' {a.id_key}=\"' ~ call_id ~ '\"'" if place == "attr" else "''"
    token = draw.one("id_token", ["[{id}] ", "#{id} ", "({id}) ", "id={id} "])
    body = [
        "{%- set fn = call.function if call.function is defined else call %}",
    ]
    if strict:
        body += [
            "{%- if fn.arguments is string %}",
            "    {{- raise_exception('Tool call arguments must be an object, not a string.') }}",
            "{%- endif %}",
        ]
    # a string is never written through the codec: the renderer would take a JSON string shown
    # inside a single-quoted literal for a template that wants strings, and send it JSON
    body += [
        "{%- set args = fn.arguments if fn.arguments is mapping else {} %}",
        *_call_id(axes, draw),
    ]
    body += [
        "{%- if not loop.first %}",
        "    " + emit(lit(sep)),
        "{%- endif %}",
        emit(lit(env_open)),
    ]
    if place == "token":
        body.append(emit(pattern_expr(token, id="call_id")))
    body += _named_call(a, "render_arguments(fn.name, args, call_id)", id_attr)
    body.append(emit(lit(env_close)))
    loop = [
        emit(lit(sec_open)),
        "{%- for call in message.tool_calls %}",
        *indent(body),
        "{%- endfor %}",
        emit(lit(sec_close)),
    ]
    return CallsJinja(macros, loop)
