"""Keys (and names) written as quoted attributes are decoded as the family's values are: where
derivation learnt that the template XML-escapes (``xml_escape``), ``name="x&lt;y"`` is ``x<y``;
where it does not, the text is kept as written. Batch and stream alike. (Tool names cannot hold
the characters XML escapes, see ``tool_defs.py``: keys are where it shows.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunking import feed_chunks
from tooldialect.dialect.spec import DialectSpec
from tooldialect.parse import StreamParser, parse_output
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import detect_dialect

INVENTED = Path(__file__).parent.parent / "fixtures" / "templates" / "invented"


def _tool(name: str, *keys: str) -> dict[str, object]:
    props = {k: {"type": "string"} for k in keys}
    return {"type": "function", "function": {"name": name, "parameters": {"properties": props}}}


TOOLS = [_tool("fn", "x<y", "x&amp;y", "a&b", 'say "hi"', "q")]


def _spec(name: str) -> DialectSpec:
    spec = detect_dialect((INVENTED / name).read_text(encoding="utf-8"), builtins=False)
    assert spec is not None
    return spec


def _calls(out: object) -> list[tuple[str, object]]:
    return [(c.name, c.arguments) for c in out.tool_calls]  # type: ignore[attr-defined]


def _shape(out: object) -> object:
    return (out.content, out.reasoning_content, _calls(out))  # type: ignore[attr-defined]


def _streamed(spec: DialectSpec, chunks: list[str]) -> object:
    return feed_chunks(StreamParser(spec, tools=TOOLS), chunks)


ESCAPED = (
    '<calls><invoke name="fn"><parameter name="x&lt;y">1 &amp; 2</parameter>'
    '<parameter name="say &#34;hi&#34;">z</parameter></invoke></calls>'
)


def test_the_derivations_learn_escaping_from_the_template() -> None:
    assert _spec("xml-escaped-names.jinja").formats[0].body.xml_escape  # type: ignore[union-attr]
    assert not _spec("xml-raw-names.jinja").formats[0].body.xml_escape  # type: ignore[union-attr]


def test_an_escaping_family_decodes_names_and_keys_in_attributes() -> None:
    out = parse_output(ESCAPED, _spec("xml-escaped-names.jinja"), tools=TOOLS)
    assert _calls(out) == [("fn", {"x<y": "1 & 2", 'say "hi"': "z"})]
    assert out.content is None


def test_an_escaping_family_keeps_a_bare_ampersand_a_model_forgot_to_escape() -> None:
    text = '<calls><invoke name="fn"><parameter name="a&b">AT&T</parameter></invoke></calls>'
    out = parse_output(text, _spec("xml-escaped-names.jinja"), tools=TOOLS)
    assert _calls(out) == [("fn", {"a&b": "AT&T"})]


def test_a_family_that_does_not_escape_keeps_attributes_as_written() -> None:
    spec = _spec("xml-raw-names.jinja")
    text = (
        '<calls><invoke name="fn"><parameter name="x&amp;y">1 &amp; 2</parameter></invoke></calls>'
    )
    assert _calls(parse_output(text, spec, tools=TOOLS)) == [("fn", {"x&amp;y": "1 &amp; 2"})]
    out = parse_output(ESCAPED, spec, tools=TOOLS)
    assert _calls(out) == [("fn", {"x&lt;y": "1 &amp; 2", "say &#34;hi&#34;": "z"})]


ROUND_TRIPS = [
    ("xml-escaped-names.jinja", {"x<y": "1 & 2", "a&b": "z", 'say "hi"': "<q>"}),
    # written raw, a "<" inside an attribute would be a tag: such a family cannot write it
    ("xml-raw-names.jinja", {"a&b": "z", 'say "hi"': "1 & 2", "x&amp;y": "&lt;"}),
]


@pytest.mark.parametrize(("template", "arguments"), ROUND_TRIPS)
def test_the_templates_own_render_of_a_call_reads_back(
    template: str, arguments: dict[str, str]
) -> None:
    source = (INVENTED / template).read_text(encoding="utf-8")
    args = json.dumps(arguments)
    call = {"id": "c1", "type": "function", "function": {"name": "fn", "arguments": args}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    text = ChatTemplate(source).render(messages, tools=TOOLS, add_generation_prompt=False)
    written = text[text.index("<calls>") : text.index("</calls>") + len("</calls>")]
    out = parse_output(written, _spec(template), tools=TOOLS)
    assert _calls(out) == [("fn", arguments)]


@pytest.mark.parametrize("template", ["xml-escaped-names.jinja", "xml-raw-names.jinja"])
def test_every_two_way_split_streams_as_batch(template: str) -> None:
    spec = _spec(template)
    text = f"Sure. {ESCAPED} Done."
    batch = _shape(parse_output(text, spec, tools=TOOLS))
    bad = [i for i in range(1, len(text)) if _shape(_streamed(spec, [text[:i], text[i:]])) != batch]
    assert not bad, f"splits at {bad} differ from batch {batch!r}"
