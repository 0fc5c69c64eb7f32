"""Model outputs per structure, read with the spec derived from the invented template.

Each row is written as a model of that family would write it, with the variants real models
write: stray whitespace, a missing closer, several calls, calls with prose, reasoning the template
never shows. The spec is derived from the template alone (``builtins=False``); batch and streamed
(random chunks) must agree.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from chunking import feed_in_random_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import detect_dialect

INVENTED = Path(__file__).parent.parent / "fixtures" / "templates" / "invented"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "units": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "strict": {"type": "boolean"},
                    "stops": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "city": {"type": "string"},
                                "hours": {"type": "number"},
                            },
                        },
                    },
                    "filters": {
                        "type": "object",
                        "properties": {"min": {"type": "integer"}, "label": {"type": "string"}},
                    },
                },
            },
        },
    }
    for name in ("get_weather", "get_time")
]
W = "get_weather"
T = "get_time"
PARIS = {"city": "Paris", "days": 2}

# (template, output, expected calls, expected content)
ROWS: list[tuple[str, str, list[tuple[str, dict[str, Any]]], str | None]] = [
    # namespace token before every tag
    (
        "ns-prefixed-invoke.jinja",
        '⁂<tool_call>\n⁂<invoke name="get_weather">\n⁂<parameter name="city">Paris⁂</parameter>\n'
        '⁂<parameter name="days">2⁂</parameter>\n⁂</invoke>\n⁂</tool_call>',
        [(W, PARIS)],
        None,
    ),
    (
        "ns-prefixed-invoke.jinja",
        'Let me check.\n⁂<tool_call>\n⁂<invoke name="get_weather">\n⁂<parameter name="city">Paris'
        '⁂</parameter>\n⁂</invoke>\n⁂</tool_call>\n⁂<tool_call>\n⁂<invoke name="get_time">\n'
        '⁂<parameter name="city">Oslo⁂</parameter>\n⁂</invoke>\n⁂</tool_call>',
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        "Let me check.",
    ),
    # attributes inside special-token markers, typed
    (
        "attr-markers-typed.jinja",
        '<|open|>call tool="get_weather" index="0"<|sep|><|open|>argument key="city" type="string"'
        '<|sep|>Paris<|close|>argument<|sep|><|open|>argument key="days" type="integer"<|sep|>2'
        "<|close|>argument<|sep|><|close|>call<|sep|>",
        [(W, PARIS)],
        None,
    ),
    (
        "attr-markers-typed.jinja",
        '<|open|>call tool="get_weather" index="0"<|sep|><|open|>argument key="city" type="string"'
        '<|sep|>2024<|close|>argument<|sep|><|open|>argument key="strict" type="boolean"<|sep|>'
        "true<|close|>argument<|sep|>",  # the call's closer is missing at the end
        [(W, {"city": "2024", "strict": True})],
        None,
    ),
    (
        "type-attr-short.jinja",
        '<run tool="get_weather"><param name="city" t="str">Paris</param>'
        '<param name="tags" t="list">["a", "b"]</param></run>',
        [(W, {"city": "Paris", "tags": ["a", "b"]})],
        None,
    ),
    (
        "string-flag-args.jinja",
        '\n<fc name="get_weather"><a k="city" string="true">Paris</a>'
        '<a k="days" string="false">2</a></fc>',
        [(W, PARIS)],
        None,
    ),
    # the key as the tag; a tag-like text inside a value stays text
    (
        "key-as-tag-flat.jinja",
        '<tool name="get_weather">\n<city>Paris</city>\n<days>2</days>\n</tool>',
        [(W, PARIS)],
        None,
    ),
    (
        "key-as-tag-flat.jinja",
        '<tool name="get_weather">\n  <city>Paris</city>\n  <days>2</days>\n</tool>',
        [(W, PARIS)],
        None,
    ),
    (
        "key-as-tag-flat.jinja",
        '<tool name="get_weather">\n<city>Use <b>bold</b> here</city>\n<days>2</days>\n</tool>',
        [(W, {"city": "Use <b>bold</b> here", "days": 2})],
        None,
    ),
    # the key as the tag, nested: objects as child elements, arrays as <item> per element
    (
        "key-as-tag-nested.jinja",
        '<use tool="get_weather"><city>Paris</city><stops><item><city>Lyon</city><hours>2</hours>'
        "</item><item><city>Nice</city></item></stops><filters><min>3</min><label>warm</label>"
        "</filters><tags><item>a</item><item>b</item></tags></use>",
        [
            (
                W,
                {
                    "city": "Paris",
                    "stops": [{"city": "Lyon", "hours": 2}, {"city": "Nice"}],
                    "filters": {"min": 3, "label": "warm"},
                    "tags": ["a", "b"],
                },
            )
        ],
        None,
    ),
    (
        "key-as-tag-nested.jinja",
        '<use tool="get_weather">\n  <city>Paris</city>\n  <stops>\n    <item>\n'
        "      <city>Lyon</city>\n    </item>\n  </stops>\n</use>",
        [(W, {"city": "Paris", "stops": [{"city": "Lyon"}]})],
        None,
    ),
    (
        "key-as-tag-nested.jinja",
        '<use tool="get_weather"><city>Rue <b>du</b> Bac</city><days>2</days></use>',
        [(W, {"city": "Rue <b>du</b> Bac", "days": 2})],
        None,
    ),
    (
        "key-as-tag-nested.jinja",
        'Checking both.\n<use tool="get_weather"><city>Paris</city></use>\n'
        '<use tool="get_time"><city>Oslo</city>',  # the last closer is missing
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        "Checking both.",
    ),
    (
        "key-as-tag-nested.jinja",
        '<use tool="get_weather"><stops>[{"city": "Lyon"}]</stops><tags>["a"]</tags></use>',
        [(W, {"stops": [{"city": "Lyon"}], "tags": ["a"]})],  # JSON in place of elements
        None,
    ),
    (
        "nested-singular-items.jinja",
        '<invoke name="get_weather">\n<city>A &amp; B</city>\n<tags><tag>x &lt; y</tag>'
        "<tag>z</tag></tags>\n</invoke>",
        [(W, {"city": "A & B", "tags": ["x < y", "z"]})],
        None,
    ),
    (
        "nested-singular-items.jinja",
        '<invoke name="get_weather">\n<city>AT&T <i>Park</i></city>\n<filters>\n<min>1</min>\n'
        "</filters>\n</invoke>",  # an unescaped & and a tag-like word stay text
        [(W, {"city": "AT&T <i>Park</i>", "filters": {"min": 1}})],
        None,
    ),
    (
        "nested-escaped-params.jinja",
        '<call fn="get_weather">\n<parameter name="filters"><field name="min">3</field>'
        '<field name="label">a &quot;b&quot;</field></parameter>\n<parameter name="stops">'
        '<entry><field name="city">Lyon</field></entry></parameter>\n</call>',
        [(W, {"filters": {"min": 3, "label": 'a "b"'}, "stops": [{"city": "Lyon"}]})],
        None,
    ),
    (
        "nested-escaped-params.jinja",
        'Sure.<call fn="get_weather"><parameter name="city">Paris &lt;FR&gt;</parameter>'
        '</call><call fn="get_time"><parameter name="city">Oslo</parameter></call>',
        [(W, {"city": "Paris <FR>"}), (T, {"city": "Oslo"})],
        "Sure.",
    ),
    (
        "repeated-key-arrays.jinja",
        '<do action="get_weather"><city>Paris</city><tags>a</tags><tags>b <i>c</i></tags>'
        "<stops><city>Lyon</city></stops><stops><city>Nice</city><hours>2</hours></stops></do>",
        [
            (
                W,
                {
                    "city": "Paris",
                    "tags": ["a", "b <i>c</i>"],
                    "stops": [{"city": "Lyon"}, {"city": "Nice", "hours": 2}],
                },
            )
        ],
        None,
    ),
    (
        "repeated-key-arrays.jinja",
        'Both. <do action="get_weather">\n  <tags>a</tags>\n  <tags>["b", "c"]</tags>\n</do>'
        '<do action="get_time"><tags>x</tags>',  # a JSON list is its elements; closer missing
        [(W, {"tags": ["a", "b", "c"]}), (T, {"tags": ["x"]})],
        "Both.",
    ),
    # XML-escaped attribute values
    (
        "xml-escaped-attrs.jinja",
        '<tool_use name="get_weather"><arg name="city" value="Rock &amp; Roll &#39;n&#x27; '
        '&quot;blues&quot;"/><arg name="days" value="2"/></tool_use>',
        [(W, {"city": "Rock & Roll 'n' \"blues\"", "days": 2})],
        None,
    ),
    (
        "xml-escaped-attrs.jinja",
        'One moment. <tool_use name="get_weather">\n  <arg name="city" value="Paris"/>\n'
        '</tool_use><tool_use name="get_time"><arg name="city" value="Oslo"/>',
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        "One moment.",
    ),
    # padded elements: unpadded values, a JSON object body, array-of-object values
    (
        "padded-params.jinja",
        "<<call get_weather>>\n<<arg city>>\nParis\n<</arg>>\n<<arg days>>\n2\n<</arg>>\n<</call>>",
        [(W, PARIS)],
        None,
    ),
    (
        "padded-params.jinja",
        "<<call get_weather>>\n<<arg city>>Paris<</arg>>\n<<arg days>>2<</arg>>\n<</call>>",
        [(W, PARIS)],
        None,
    ),
    (
        "padded-params.jinja",
        '<<call get_weather>>\n{"city": "Paris", "days": 2}\n<</call>>',
        [(W, PARIS)],
        None,
    ),
    (
        "padded-params.jinja",
        '<<call get_weather>>\n<<arg stops>>\n[{"city": "Lyon", "hours": 1.5}, {"city": "Nice"}]'
        "\n<</arg>>\n<</call>>",
        [(W, {"stops": [{"city": "Lyon", "hours": 1.5}, {"city": "Nice"}]})],
        None,
    ),
    (
        "padded-params.jinja",
        "<<call get_weather>>\n<<arg city>>\nParis\n<<arg days>>\n2\n<</arg>>\n<</call>>",
        [(W, PARIS)],  # the first value's closer is missing
        None,
    ),
    # values in wrappers
    (
        "cdata-values.jinja",
        '<invoke fn="get_weather">\n<arg name="city"><![CDATA[line one\n<b>&two]]></arg>\n'
        "</invoke>",
        [(W, {"city": "line one\n<b>&two"})],
        None,
    ),
    (
        "json-string-values.jinja",
        '<act>get_weather\n<arg_k>stops</arg_k><arg_v>[{"city": "Lyon", "hours": 2}]</arg_v>\n'
        "</act>",
        [(W, {"stops": [{"city": "Lyon", "hours": 2}]})],
        None,
    ),
    (
        "cdata-values.jinja",
        '<invoke fn="get_weather">\n<arg name="city"><![CDATA[a</arg>&b]]></arg>\n'
        '<arg name="days">2</arg>\n</invoke>',
        [(W, {"city": "a</arg>&b", "days": 2})],
        None,
    ),
    (
        "json-string-values.jinja",
        '<act>get_weather\n<arg_k>city</arg_k><arg_v>"Seoul"</arg_v>\n'
        "<arg_k>days</arg_k><arg_v>3</arg_v>\n</act>",
        [(W, {"city": "Seoul", "days": 3})],
        None,
    ),
    (
        "key-value-lines.jinja",
        '\n[[call get_weather]]\ncity = "Paris"\ndays = 2\n[[/call]]',
        [(W, PARIS)],
        None,
    ),
    # recipient headers
    (
        "recipient-header.jinja",
        ' to=get_weather<|body|>{"city": "Paris", "days": 2}<|eom|>',
        [(W, PARIS)],
        None,
    ),
    (
        "recipient-per-call.jinja",
        '>>get_weather<|b|>{"city": "Paris"}<|x|><|m|>bot>>get_time<|b|>{"city": "Oslo"}<|x|>',
        [(W, {"city": "Paris"}), (T, {"city": "Oslo"})],
        None,
    ),
    # content channel
    (
        "content-channel.jinja",
        "<|open|>response<|sep|>It is sunny.<|close|>response<|sep|>",
        [],
        "It is sunny.",
    ),
    (
        "content-channel.jinja",
        '<|open|>calls<|sep|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]'
        "<|close|>calls<|sep|>",
        [(W, PARIS)],
        None,
    ),
    # closers repeating the function name
    (
        "closer-names-function.jinja",
        '<call:get_weather>{"city": "Paris", "days": 2}</call:get_weather>\n'
        '<call:get_time>{"city": "Oslo"}</call:get_time>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        None,
    ),
    (
        "closer-names-function.jinja",
        '<call:get_weather>{"city": "Paris", "days": 2}',  # closer missing at the end
        [(W, PARIS)],
        None,
    ),
    (
        "element-closer-names-function.jinja",
        "<fn:get_weather><p:city>Paris</p:city><p:days>2</p:days></fn:get_weather>",
        [(W, PARIS)],
        None,
    ),
    (
        "name-as-tag.jinja",
        'Checking. <calls><get_weather>{"city": "Paris", "days": 2}</get_weather></calls>',
        [(W, PARIS)],
        "Checking.",
    ),
    # turn header differing from the generation prompt: the model writes the calls right away
    (
        "header-differs.jinja",
        '<calls>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]</calls>',
        [(W, PARIS)],
        None,
    ),
    # a marker typo in history: the model writes what the instructions show, both are read
    (
        "typo-history.jinja",
        '\n<fcall>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</fcall>',
        [(W, PARIS)],
        None,
    ),
    (
        "typo-history.jinja",
        '\n<fcal>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</fcall>',
        [(W, PARIS)],
        None,
    ),
    # reasoning the template never mentions: a call quoted inside must not run
    (
        "unmentioned-think.jinja",
        '<think>I could write <|call|>{"tool": "get_time", "args": {}}<|/call|> but no.</think>'
        '<|call|>{"tool": "get_weather", "args": {"city": "Paris", "days": 2}}<|/call|>',
        [(W, PARIS)],
        None,
    ),
    (
        "pipe-python-list.jinja",
        '<|act|>[get_weather(city="Paris", days=2), get_time(city="Oslo")]<|/act|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        None,
    ),
    # a format only the tool instructions show
    (
        "instructions-only.jinja",
        'Sure. <|act_start|>[get_weather(city="Paris", days=2), get_time(city="Oslo")]<|act_end|>',
        [(W, PARIS), (T, {"city": "Oslo"})],
        "Sure.",
    ),
    (
        "ns-prefixed-json.jinja",
        'ns:<calls> ns:<call>{"fn": "get_weather", "in": {"city": "Paris", "days": 2}}ns:</call>'
        "ns:</calls>",
        [(W, PARIS)],
        None,
    ),
    (
        "renamed-section.jinja",
        '<tool_batch>\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n</tool_batch>',
        [(W, PARIS)],
        None,
    ),
]

_SPECS: dict[str, DialectSpec] = {}


def _spec(name: str) -> DialectSpec:
    if name not in _SPECS:
        source = (INVENTED / name).read_text(encoding="utf-8")
        _SPECS[name] = detect_dialect(source, builtins=False)
    return _SPECS[name]


def _calls(out: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in out.tool_calls]


@pytest.mark.parametrize(
    ("name", "text", "calls", "content"), ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)]
)
def test_derived_spec_reads_model_output(
    name: str, text: str, calls: list[tuple[str, dict[str, Any]]], content: str | None
) -> None:
    spec = _spec(name)
    assert spec.origin == "derived"
    out = parse_output(text, spec, tools=TOOLS)
    assert _calls(out) == calls
    assert (out.content or None) == content
    rng = random.Random(text)
    streamed = feed_in_random_chunks(StreamParser(spec, tools=TOOLS), text, rng)
    assert _calls(streamed) == calls


def test_every_structure_has_rows() -> None:
    assert len({r[0] for r in ROWS}) >= 20
