"""Derivation finds the value codec a template writes, by trying every registered codec on the
template's renders of probe calls, never by a name: for each codec, a small template whose
macro writes a call's arguments in that syntax (as a template for a model trained on it would);
for each markup codec, a template of XML-like elements whose values it escapes, writes as
attributes or wraps in CDATA.
The derived spec must read back the template's own call of every JSON type exactly (quotes,
``<``, ``&``, a newline, non-ASCII, nesting), streamed in any chunks too, and the grammar built
from it must accept that call as the template wrote it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.derive import ProbeRenderer
from tooldialect.dialect.spec import DialectSpec, ElementBody, PythonBody
from tooldialect.dialect.value_codecs import markup_codec
from tooldialect.grammar.build import build_grammar
from tooldialect.grammar.codec import LAYOUTS
from tooldialect.grammar.forced import GbnfAutomaton
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import derive_dialect

TURNS = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<u>{{ m.content }}</u>"
    "{%- elif m.role == 'assistant' -%}<a>"
    "{%- if m.tool_calls -%}CALLS"
    "{%- else -%}{{ m.content }}{%- endif -%}</a>"
    "{%- elif m.role == 'tool' -%}<t>{{ m.content }}</t>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<a>{%- endif -%}"
)


def literal_macro(
    *, null: str, string: str, mapping: str, array: str, true: str = "true", false: str = "false"
) -> str:
    """A ``lit(v)`` macro writing any JSON value: the syntax's null, strings, objects, arrays."""
    return (
        "{%- macro lit(v) -%}"
        "{%- if v is none -%}" + null + "{%- elif v is boolean -%}"
        "{{ '" + true + "' if v else '" + false + "' }}"
        "{%- elif v is number -%}{{ v }}"
        "{%- elif v is string -%}" + string + "{%- elif v is mapping -%}" + mapping + ""
        "{%- else -%}" + array + "{%- endif -%}"
        "{%- endmacro -%}"
    )


def members(open_: str, sep: str, close: str, member: str, *, nulls: bool = True) -> str:
    """An object's members; ``nulls=False``: a member whose value is ``None`` left out."""
    each = "v.items()" if nulls else "v.items() if x is not none"
    loop = "{%- for k, x in " + each + " -%}" + member + "{{ '" + sep + "' if not loop.last }}"
    return open_ + loop + "{%- endfor -%}" + close


def items(open_: str, sep: str, close: str) -> str:
    loop = "{%- for x in v -%}{{ lit(x) }}{{ '" + sep + "' if not loop.last }}"
    return open_ + loop + "{%- endfor -%}" + close


BRACE, END = "{{ '{' }}", "{{ '}' }}"
JSON_STRING = "{{ v | tojson }}"
SINGLE = r"""'{{ v | replace('\\', '\\\\') | replace("'", "\\'") | replace('\n', '\\n') }}'"""
DOUBLE = r'''"{{ v | replace('\\', '\\\\') | replace('"', '\\"') | replace('\n', '\\n') }}"'''
SQL_STRING = """'{{ v | replace("'", "''") }}'"""
PHP_SINGLE = r"""'{{ v | replace('\\', '\\\\') | replace("'", "\\'") }}'"""
# plain where YAML reads the text back as the same string, else JSON-quoted
YAML_STRING = (
    "{%- set w = v.replace('_', 'a').replace(' ', 'a').replace('.', 'a').replace('-', 'a')"
    ".replace('/', 'a') -%}"
    "{%- if w and w.isascii() and w.isalnum() and (v[:1].isalpha() or v[:1] == '_')"
    " and v[-1:] != ' ' and v not in ['yes', 'Yes', 'YES', 'no', 'No', 'NO', 'true', 'True',"
    " 'TRUE', 'false', 'False', 'FALSE', 'on', 'On', 'ON', 'off', 'Off', 'OFF', 'null', 'Null',"
    " 'NULL', '~'] -%}{{ v }}{%- else -%}{{ v | tojson }}{%- endif -%}"
)

EACH = "{%- for c in m.tool_calls -%}"
NAME, ARGS_ = "{{ c.function.name }}", "{{ lit(c.function.arguments) }}"

TEMPLATES: dict[str, str] = {
    "js-object": literal_macro(
        null="null",
        string=SINGLE,
        mapping=members(BRACE, ", ", END, "{{ k }}: {{ lit(x) }}"),
        array=items("[", ", ", "]"),
    )
    + TURNS.replace("CALLS", f"<calls>{EACH}{NAME}({ARGS_})\n{{%- endfor -%}}</calls>"),
    "yaml-flow": literal_macro(
        null="null",
        string=YAML_STRING,
        mapping=members(BRACE, ", ", END, "{{ k }}: {{ lit(x) }}"),
        array=items("[", ", ", "]"),
    )
    + TURNS.replace("CALLS", f"{EACH}- call: {NAME} {ARGS_}\n{{%- endfor -%}}"),
    "toml-inline": literal_macro(
        null="null",
        string=JSON_STRING,
        mapping="{%- if v -%}"
        + members("{{ '{ ' }}", ", ", "{{ ' }' }}", "{{ k }} = {{ lit(x) }}", nulls=False)
        + "{%- else -%}{{ '{}' }}{%- endif -%}",
        array=items("[", ", ", "]"),
    )
    + TURNS.replace("CALLS", f"{EACH}[[tool]]\n{NAME} = {ARGS_}\n{{%- endfor -%}}"),
    "lua-table": literal_macro(
        null="nil",
        string=DOUBLE,
        mapping=members(BRACE, ", ", END, "{{ k }} = {{ lit(x) }}"),
        array=items(BRACE, ", ", END),
    )
    + TURNS.replace("CALLS", f"<lua>{EACH}{NAME}{ARGS_}\n{{%- endfor -%}}</lua>"),
    "ruby-hash": literal_macro(
        null="nil",
        string=JSON_STRING,
        mapping=members(BRACE, ", ", END, "{{ k | tojson }} => {{ lit(x) }}"),
        array=items("[", ", ", "]"),
    )
    + TURNS.replace("CALLS", f"<ruby>{EACH}{NAME}({ARGS_})\n{{%- endfor -%}}</ruby>"),
    "ruby-symbols": literal_macro(
        null="nil",
        string=JSON_STRING,
        mapping=members(BRACE, ", ", END, ":{{ k }} => {{ lit(x) }}"),
        array=items("[", ", ", "]"),
    )
    + TURNS.replace("CALLS", f"<ruby>{EACH}{NAME}({ARGS_})\n{{%- endfor -%}}</ruby>"),
    "sql": literal_macro(
        null="NULL",
        string=SQL_STRING,
        mapping=members("JSON_OBJECT(", ", ", ")", "'{{ k }}', {{ lit(x) }}"),
        array=items("JSON_ARRAY(", ", ", ")"),
        true="TRUE",
        false="FALSE",
    )
    + TURNS.replace("CALLS", f"{EACH}SELECT {NAME}({ARGS_});\n{{%- endfor -%}}"),
    "php-array": literal_macro(
        null="null",
        string=PHP_SINGLE,
        mapping=members("[", ", ", "]", "'{{ k }}' => {{ lit(x) }}"),
        array=items("[", ", ", "]"),
    )
    + TURNS.replace(
        "CALLS", f"<?php {{%- for c in m.tool_calls %}} {NAME}({ARGS_});{{%- endfor %}} ?>"
    ),
    "edn": literal_macro(
        null="nil",
        string=JSON_STRING,
        mapping=members(BRACE, " ", END, ":{{ k }} {{ lit(x) }}"),
        array=items("[", " ", "]"),
    )
    + TURNS.replace("CALLS", f"{EACH}({NAME} {ARGS_})\n{{%- endfor -%}}"),
}

ARGS: dict[str, Any] = {
    "city": "Lyon \"old\" 'town' <a&b>\nü \\ end",
    "n": 3,
    "ratio": 2.5,
    "ok": True,
    "none": None,
    "tags": ["a b", "c"],
    "opts": {"depth": 2, "mode": "fast"},
}
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "plan_trip",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "n": {"type": "integer"},
                "ratio": {"type": "number"},
                "ok": {"type": "boolean"},
                "none": {"type": ["string", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {
                    "type": "object",
                    "properties": {
                        "depth": {"type": "integer"},
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                    },
                },
            },
            "required": ["city", "n"],
        },
    },
}
CALL = {"id": "c1", "type": "function", "function": {"name": "plan_trip", "arguments": ARGS}}


def written(text: str) -> dict[str, Any]:
    """The call's arguments as the template wrote them: a ``None`` one it left out (TOML has
    no null), left out."""
    return {k: v for k, v in ARGS.items() if v is not None or k in text}


def own_call(source: str) -> str:
    """The assistant turn the template writes for a past call (between ``<a>`` and ``</a>``)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Plan it."},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]
    full = ProbeRenderer(source).render(messages, tools=[TOOL])
    assert full is not None
    return full[full.index("<a>") + 3 : full.rindex("</a>")]


_SPECS: dict[str, DialectSpec | None] = {}


def derived(name: str) -> DialectSpec:
    if name not in _SPECS:
        _SPECS[name] = derive_dialect(TEMPLATES[name])
    spec = _SPECS[name]
    assert spec is not None, f"nothing derived for the {name} template"
    return spec


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_derivation_picks_the_codec_the_template_writes(name: str) -> None:
    body = derived(name).primary.body
    assert isinstance(body, PythonBody)
    assert body.value_codec == name
    # the spec writes the call exactly as the template does
    assert derived(name).render_call("plan_trip", ARGS) in own_call(TEMPLATES[name])


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_derived_spec_reads_the_templates_own_call(name: str) -> None:
    spec, text = derived(name), own_call(TEMPLATES[name])
    batch = parse_output(text, spec, tools=[TOOL])
    assert [(c.name, c.arguments) for c in batch.tool_calls] == [("plan_trip", written(text))]
    assert not batch.content
    rng = random.Random(name)
    for _ in range(4):
        streamed = feed_in_random_chunks(StreamParser(spec, tools=[TOOL]), text, rng)
        assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
            ("plan_trip", written(text))
        ]
        assert streamed.content == batch.content


def test_a_codec_whose_spelling_differs_a_little_still_reads_the_call() -> None:
    """EDN with commas between entries and items (EDN's commas are whitespace): no codec
    writes it exactly; the EDN codec's reader reads it, so derivation keeps that codec."""
    source = TEMPLATES["edn"].replace("{{ ' ' if not loop.last }}", "{{ ', ' if not loop.last }}")
    text = own_call(source)
    assert ":n 3, :ratio 2.5" in text
    spec = derive_dialect(source)
    assert spec is not None
    body = spec.primary.body
    assert isinstance(body, PythonBody) and body.value_codec == "edn"
    got = parse_output(text, spec, tools=[TOOL]).tool_calls
    assert [(c.name, c.arguments) for c in got] == [("plan_trip", ARGS)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_grammar_accepts_the_templates_own_call(name: str, layout: Any) -> None:
    spec, text = derived(name), own_call(TEMPLATES[name])
    grammar = build_grammar(spec, [TOOL], tool_choice="required", argument_layout=layout)
    assert grammar is not None
    automaton = GbnfAutomaton(grammar.gbnf, grammar.root)
    assert automaton.feed(text)
    # and refuses the call with a JSON object for arguments
    json_call = text.replace(spec.render_call("plan_trip", ARGS), 'plan_trip({"city": "x"})')
    assert not GbnfAutomaton(grammar.gbnf, grammar.root).feed(json_call)


# -- markup codecs: element values escaped, as attributes, or wrapped in CDATA ---------------------

VALUE_TEXT = "{%- set t = v if v is string else v | tojson -%}"
XML_TEXT = "{{ t | replace('&', '&amp;') | replace('<', '&lt;') | replace('>', '&gt;') }}"
MARKUP_VALUES = {
    # (the value as the template writes it, inside an element or as an attribute)
    "html-escape": '<arg name="{{ k }}">{{ t | e }}</arg>',
    "xml-text": f'<arg name="{{{{ k }}}}">{XML_TEXT}</arg>',
    "xml-attr": "<arg name=\"{{ k }}\" value=\"{{ t | replace('&', '&amp;') | replace('<', '&lt;')"
    " | replace('>', '&gt;') | replace('\"', '&quot;') }}\"/>",
    "cdata": "<arg name=\"{{ k }}\">{%- if '<' in t or '&' in t -%}<![CDATA[{{ t }}]]>"
    "{%- else -%}{{ t }}{%- endif -%}</arg>",
    "cdata-lines": "<arg name=\"{{ k }}\">{%- if '<' in t or '&' in t or '\\n' in t -%}"
    "<![CDATA[{{ t }}]]>{%- else -%}{{ t }}{%- endif -%}</arg>",
}
MARKUP_TEMPLATES = {
    name: TURNS.replace(
        "CALLS",
        f'{EACH}<invoke fn="{NAME}">{{%- for k, v in c.function.arguments.items() -%}}'
        f"{VALUE_TEXT}{value}{{%- endfor -%}}</invoke>{{%- endfor -%}}",
    )
    for name, value in MARKUP_VALUES.items()
}
# the templates that escape the JSON of other values too (``t`` is ``v | tojson``)
ESCAPES_JSON = {"html-escape", "xml-attr"}


def derived_markup(name: str) -> DialectSpec:
    key = f"markup/{name}"
    if key not in _SPECS:
        _SPECS[key] = derive_dialect(MARKUP_TEMPLATES[name])
    spec = _SPECS[key]
    assert spec is not None, f"nothing derived for the {name} template"
    return spec


@pytest.mark.parametrize("name", sorted(MARKUP_TEMPLATES))
def test_derivation_picks_the_markup_codec_the_template_writes(name: str) -> None:
    body = derived_markup(name).primary.body
    assert isinstance(body, ElementBody)
    assert (body.text_codec, body.escape_json) == (name, name in ESCAPES_JSON)
    spec = derived_markup(name)
    assert spec.render_call("plan_trip", ARGS) in own_call(MARKUP_TEMPLATES[name])


@pytest.mark.parametrize("name", sorted(MARKUP_TEMPLATES))
def test_the_markup_spec_reads_the_templates_own_call(name: str) -> None:
    spec, text = derived_markup(name), own_call(MARKUP_TEMPLATES[name])
    batch = parse_output(text, spec, tools=[TOOL])
    assert [(c.name, c.arguments) for c in batch.tool_calls] == [("plan_trip", ARGS)]
    rng = random.Random(name)
    for _ in range(4):
        streamed = feed_in_random_chunks(StreamParser(spec, tools=[TOOL]), text, rng)
        assert [(c.name, c.arguments) for c in streamed.tool_calls] == [("plan_trip", ARGS)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(MARKUP_TEMPLATES))
def test_the_markup_grammar_accepts_the_templates_own_call(name: str, layout: Any) -> None:
    spec, text = derived_markup(name), own_call(MARKUP_TEMPLATES[name])
    grammar = build_grammar(spec, [TOOL], tool_choice="required", argument_layout=layout)
    assert grammar is not None
    assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(text)
    if name in ESCAPES_JSON:  # the JSON of a list unescaped is not what the family writes
        raw = text.replace(_escaped_tags(spec), '["a b", "c"]')
        assert raw != text and not GbnfAutomaton(grammar.gbnf, grammar.root).feed(raw)


def _escaped_tags(spec: DialectSpec) -> str:
    body = spec.primary.body
    assert isinstance(body, ElementBody)
    return markup_codec(body.text_codec).escape('["a b", "c"]')


# -- literal codecs as element values -------------------------------------------------------------


def _macro(name: str) -> str:
    return TEMPLATES[name].split("{%- endmacro -%}")[0] + "{%- endmacro -%}"


ELEMENT_LOOP = (
    f'{EACH}<call name="{NAME}">{{%- for k, v in c.function.arguments.items() -%}}'
    '<arg name="{{ k }}">{{ lit(v) }}</arg>{%- endfor -%}</call>{%- endfor -%}'
)
# YAML's plain strings are unquoted: its element values read as raw text (not covered here)
ELEMENT_TEMPLATES = {
    name: _macro(name) + TURNS.replace("CALLS", ELEMENT_LOOP)
    for name in sorted(TEMPLATES)
    if name != "yaml-flow"
}


@pytest.mark.parametrize("name", sorted(ELEMENT_TEMPLATES))
def test_element_values_in_a_codec_derive_read_back_and_are_admitted(name: str) -> None:
    source = ELEMENT_TEMPLATES[name]
    spec, text = derive_dialect(source), own_call(source)
    assert spec is not None
    body = spec.primary.body
    assert isinstance(body, ElementBody)
    assert body.json_values and body.value_codec == name
    assert spec.render_call("plan_trip", ARGS) in text
    got = parse_output(text, spec, tools=[TOOL]).tool_calls
    assert [(c.name, c.arguments) for c in got] == [("plan_trip", ARGS)]
    streamed = feed_in_random_chunks(StreamParser(spec, tools=[TOOL]), text, random.Random(name))
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [("plan_trip", ARGS)]
    for layout in LAYOUTS:
        grammar = build_grammar(spec, [TOOL], tool_choice="required", argument_layout=layout)
        assert grammar is not None
        assert GbnfAutomaton(grammar.gbnf, grammar.root).feed(text), layout
