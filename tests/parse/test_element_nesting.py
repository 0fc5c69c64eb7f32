"""Element bodies that nest (objects as child elements, arrays as one element per item), escape
(XML entities) or hold a JSON object instead of elements: ``render_call`` writes, the parser
reads back, batch and streamed in any chunking, and the grammar writes the same canonical form."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldialect.dialect.bodies import encode_element_value
from tooldialect.dialect.element_values import singular, xml_escape, xml_unescape
from tooldialect.dialect.spec import CallFormat, DialectSpec, ElementBody
from tooldialect.parse import StreamParser, parse_output
from tooldialect.verify import detect_dialect


def _spec(call_open: str = "", **body: Any) -> DialectSpec:
    fields: dict[str, Any] = {
        "head": '<use tool="{name}">',
        "param": "<{key}>{value}</{key}>",
        "tail": "</use>",
        "trim_value": False,
        "child": "<{key}>{value}</{key}>",
        "item": "<item>{value}</item>",
        "omit_none": True,
    }
    fields.update(body)
    fmt = CallFormat(call_open=call_open, body=ElementBody(**fields))
    return DialectSpec(id="t", formats=[fmt])


NESTED = _spec()
SINGULAR = _spec(item="<{singular}>{value}</{singular}>", xml_escape=True)
ATTRS = _spec(
    call_open="<call ",
    head='fn="{name}">\n',
    param='<p name="{key}">{value}</p>\n',
    tail="</call>",
    child='<f name="{key}">{value}</f>',
    item="<e>{value}</e>",
    xml_escape=True,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "stops": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "hours": {"type": "number"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "opts": {
            "type": "object",
            "properties": {"late": {"type": "boolean"}, "note": {"type": ["string", "null"]}},
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
TOOLS = [{"type": "function", "function": {"name": "trip", "parameters": SCHEMA}}]


def _calls(out: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in out.tool_calls]


def _streamed(text: str, spec: DialectSpec, seed: int) -> list[tuple[str, Any]]:
    rng = random.Random(seed)
    parser = StreamParser(spec, tools=TOOLS)
    i = 0
    while i < len(text):
        n = rng.randint(1, 9)
        parser.feed(text[i : i + n])
        i += n
    parser.close()
    return _calls(parser.result)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("a &amp; b", "a & b"),
        ("&lt;x&gt; &quot;q&quot; &apos;s&apos; &#39;t&#39; &#34;", "<x> \"q\" 's' 't' \""),
        ("&#x263A; &#9731;", "\u263a \u2603"),
        ("AT&T &copy; & &amp", "AT&T &copy; & &amp"),  # not an entity: kept as written
        ("&#0; &#xD800;", "&#0; &#xD800;"),  # no such character: kept
    ],
)
def test_xml_unescape_decodes_only_entities(text: str, want: str) -> None:
    assert xml_unescape(text) == want


def test_xml_escape_round_trips() -> None:
    text = "a<b & \"c\" 'd' > e"
    assert "<" not in xml_escape(text) and '"' not in xml_escape(text)
    assert xml_unescape(xml_escape(text)) == text


@pytest.mark.parametrize(
    ("key", "one"), [("tags", "tag"), ("cities", "city"), ("class", "class"), ("data", "data")]
)
def test_singular(key: str, one: str) -> None:
    assert singular(key) == one


def test_render_writes_children_items_and_leaves_none_out() -> None:
    args = {"city": "Paris", "stops": [{"city": "Lyon", "hours": 2}], "opts": {"note": None}}
    text = NESTED.render_call("trip", {**args, "days": None})
    assert text == (
        '<use tool="trip"><city>Paris</city><stops><item><city>Lyon</city><hours>2</hours>'
        "</item></stops><opts></opts></use>"
    )
    assert _calls(parse_output(text, NESTED, tools=TOOLS)) == [
        ("trip", {"city": "Paris", "stops": [{"city": "Lyon", "hours": 2}], "opts": {}})
    ]


def test_singular_items_and_escapes_are_written() -> None:
    text = SINGULAR.render_call("trip", {"tags": ["a<b", "c&d"]})
    assert text == '<use tool="trip"><tags><tag>a&lt;b</tag><tag>c&amp;d</tag></tags></use>'


def test_a_tag_whose_key_the_schema_lacks_is_text() -> None:
    text = '<use tool="trip"><city>Rue <b>du</b> Bac<br/></city><days>2</days></use>'
    out = parse_output(text, NESTED, tools=TOOLS)
    assert _calls(out) == [("trip", {"city": "Rue <b>du</b> Bac<br/>", "days": 2})]


def test_a_nested_value_with_an_unknown_child_stays_text() -> None:
    text = '<use tool="trip"><opts><late>true</late><color>red</color></opts></use>'
    out = parse_output(text, NESTED, tools=TOOLS)
    assert _calls(out) == [("trip", {"opts": "<late>true</late><color>red</color>"})]


def test_a_json_object_in_place_of_the_elements() -> None:
    text = 'Ok. <call fn="trip">\n{"city": "Paris", "stops": [{"city": "Lyon"}]}\n</call> Done.'
    out = parse_output(text, ATTRS, tools=TOOLS)
    assert _calls(out) == [("trip", {"city": "Paris", "stops": [{"city": "Lyon"}]})]
    assert (out.content or "").split() == ["Ok.", "Done."]
    assert _streamed(text, ATTRS, 3) == _calls(out)


def test_a_broken_json_object_body_is_no_call() -> None:
    text = '<call fn="trip">\n{"city": "Paris", oops}\n</call>'
    out = parse_output(text, ATTRS, tools=TOOLS)
    assert _calls(out) == []
    assert out.content == text


# no newlines: a value on lines of its own is the model's layout (tested in test_derived_outputs)
_TEXT = st.text(alphabet=st.sampled_from(list("ab <>&\"'x;#/")), max_size=12)
_STOP = st.fixed_dictionaries(
    {},
    optional={
        "city": _TEXT,
        "hours": st.integers(-5, 99),
        "tags": st.lists(_TEXT, max_size=3),
    },
)
_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "city": _TEXT,
        "days": st.integers(0, 30),
        "stops": st.lists(_STOP, max_size=3),
        "opts": st.fixed_dictionaries({}, optional={"late": st.booleans(), "note": _TEXT}),
        "tags": st.lists(_TEXT, max_size=3),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=_ARGS, seed=st.integers(0, 1000))
@pytest.mark.parametrize("spec", [SINGULAR, ATTRS], ids=["key-as-tag", "attrs"])
def test_escaped_nested_values_round_trip(
    spec: DialectSpec, args: dict[str, Any], seed: int
) -> None:
    text = spec.render_call("trip", args)
    want = [("trip", args)]
    assert _calls(parse_output(text, spec, tools=TOOLS)) == want, text
    assert _streamed(text, spec, seed) == want


# --- the grammar writes the canonical nested form ----------------------------------------------


@pytest.fixture(scope="module")
def vocab(smollm2_path: Path) -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(smollm2_path), vocab_only=True, verbose=False, n_threads=2)


@pytest.mark.model
@pytest.mark.parametrize("spec", [NESTED, SINGULAR, ATTRS], ids=["nested", "singular", "attrs"])
def test_grammar_writes_nested_and_escaped_values(spec: DialectSpec, vocab: Any) -> None:
    from grammar_check import grammar_accepts
    from tooldialect.grammar import build_grammar

    body = spec.primary.body
    assert isinstance(body, ElementBody)
    args = {
        "city": "Lyon & Co" if body.xml_escape else "Lyon",
        "stops": [{"city": "Nice", "hours": 1.5, "tags": ["sea"]}, {"city": "Dax"}],
        "opts": {"late": True},
        "tags": ["a", "b"],
    }
    forced = build_grammar(spec, TOOLS, tool_choice="required")
    assert forced is not None
    text = spec.render_call("trip", args)
    assert grammar_accepts(forced.gbnf, text, root=forced.root, llama=vocab), text
    # JSON in place of the child elements is read, never written
    nested = encode_element_value(body, "tags", ["a", "b"])
    assert nested in text
    as_json = text.replace(nested, '["a", "b"]')
    assert not grammar_accepts(forced.gbnf, as_json, root=forced.root, llama=vocab), as_json
    if body.xml_escape:  # a raw & is not the escaped form
        assert not grammar_accepts(
            forced.gbnf, text.replace("&amp;", "&"), root=forced.root, llama=vocab
        )


CDATA = _spec(param='<arg name="{key}">{value}</arg>\n', child="", item="", omit_none=False)
CDATA_TEXT = '<use tool="trip"><arg name="city"><![CDATA[a</arg>\n<b>&c]]></arg>\n</use>'


def test_cdata_values_read_batch_and_streamed() -> None:
    want = [("trip", {"city": "a</arg>\n<b>&c"})]
    assert _calls(parse_output(CDATA_TEXT, CDATA, tools=TOOLS)) == want
    for seed in range(5):
        assert _streamed(CDATA_TEXT, CDATA, seed) == want


@pytest.mark.model
def test_grammar_accepts_a_cdata_value_without_the_closer(vocab: Any) -> None:
    """The raw-text grammar admits a CDATA section (which the parser unwraps) as long as it does
    not hold the value's closer; the canonical form is the raw text."""
    from grammar_check import grammar_accepts
    from tooldialect.grammar import build_grammar

    forced = build_grammar(CDATA, TOOLS, tool_choice="required")
    assert forced is not None
    ok = CDATA_TEXT.replace("a</arg>\n", "a\n")
    assert grammar_accepts(forced.gbnf, ok, root=forced.root, llama=vocab), ok
    assert not grammar_accepts(forced.gbnf, CDATA_TEXT, root=forced.root, llama=vocab)


REPEATED = _spec(child="<{key}>{value}</{key}>", item="", repeat_arrays=True)


def test_repeated_keys_collect_an_array() -> None:
    args = {"tags": ["a", "b"], "stops": [{"city": "Lyon"}, {"city": "Nice", "hours": 2}]}
    text = REPEATED.render_call("trip", args)
    assert text == (
        '<use tool="trip"><tags>a</tags><tags>b</tags><stops><city>Lyon</city></stops>'
        "<stops><city>Nice</city><hours>2</hours></stops></use>"
    )
    assert _calls(parse_output(text, REPEATED, tools=TOOLS)) == [("trip", args)]
    assert _streamed(text, REPEATED, 7) == [("trip", args)]


@pytest.mark.model
def test_grammar_writes_repeated_keys(vocab: Any) -> None:
    from grammar_check import grammar_accepts
    from tooldialect.grammar import build_grammar

    forced = build_grammar(REPEATED, TOOLS, tool_choice="required")
    assert forced is not None
    stops = [{"city": "Lyon"}, {"city": "Nice"}]
    text = REPEATED.render_call(
        "trip", {"city": "Dax", "stops": stops, "tags": ["a", "b"]}
    )  # the grammar writes schema order
    assert grammar_accepts(forced.gbnf, text, root=forced.root, llama=vocab), text
    # objects in a repeated array are child elements: JSON in their place is never written
    nested = "<stops><city>Lyon</city></stops><stops><city>Nice</city></stops>"
    as_json = text.replace(nested, '<stops>[{"city": "Lyon"}, {"city": "Nice"}]</stops>')
    assert nested in text and not grammar_accepts(
        forced.gbnf, as_json, root=forced.root, llama=vocab
    )


def test_a_cut_attribute_is_no_parameter() -> None:
    """An attribute-like field (``{is_string}``, ``{type}``) never spans a tag: an attribute
    cut by the next element is text, and no word of the reply is lost (found by the fuzz)."""
    spec = detect_dialect(
        (
            Path(__file__).parent.parent / "fixtures/templates/invented/string-flag-args.jinja"
        ).read_text(encoding="utf-8"),
        builtins=False,
    )
    assert spec is not None
    text = '<fc name="f"><a k="city" string="truXYZ<a k="days" string="false">2</a></fc>'
    out = parse_output(text, spec)
    kept = (out.content or "") + "".join(c.arguments_json for c in out.tool_calls)
    assert "XYZ" in kept


def test_an_untyped_nested_value_is_what_it_spells() -> None:
    """A member declared with no type, written by ``str()`` (Python's ``None``, ``True``) or as
    JSON, reads as that scalar; other text stays text."""
    schema = {"type": "object", "properties": {"opts": {"type": "object", "properties": {}}}}
    tools = [{"type": "function", "function": {"name": "trip", "parameters": schema}}]
    text = (
        '<use tool="trip"><opts><a>None</a><b>True</b><c>null</c><d>2.5</d><e>hall</e></opts></use>'
    )
    want = {"opts": {"a": None, "b": True, "c": None, "d": 2.5, "e": "hall"}}
    assert _calls(parse_output(text, NESTED, tools=tools)) == [("trip", want)]
    parser = StreamParser(NESTED, tools=tools)
    for ch in text:
        parser.feed(ch)
    parser.close()
    assert _calls(parser.result) == [("trip", want)]
