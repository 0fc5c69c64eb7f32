"""Markup codecs: how an element body writes a string value inside markup (``ElementBody.
text_codec``), escaped as text, as an attribute value, or wrapped in CDATA only where it needs
it. A table per codec over the strings they treat differently, and Hypothesis: any string reads
back from what the codec writes, and an escaping codec leaves no markup in it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldialect.dialect.value_codecs import markup_codec, markup_codec_names

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MARKUP_STRINGS: dict[str, str] = {
    "plain": "Lyon",
    "markup": '<a href="x">&amp;</a>',
    "quotes": 'it\'s "q"',
    "newline": "l1\nl2",
    "cdata_close": "a]]>b <",
}
ESCAPED: dict[str, dict[str, str]] = {
    "html-escape": {
        "plain": "Lyon",
        "markup": "&lt;a href=&#34;x&#34;&gt;&amp;amp;&lt;/a&gt;",
        "quotes": "it&#39;s &#34;q&#34;",
        "newline": "l1\nl2",
        "cdata_close": "a]]&gt;b &lt;",
    },
    "xml-text": {
        "plain": "Lyon",
        "markup": '&lt;a href="x"&gt;&amp;amp;&lt;/a&gt;',
        "quotes": 'it\'s "q"',
        "newline": "l1\nl2",
        "cdata_close": "a]]&gt;b &lt;",
    },
    "xml-attr": {
        "plain": "Lyon",
        "markup": "&lt;a href=&quot;x&quot;&gt;&amp;amp;&lt;/a&gt;",
        "quotes": "it's &quot;q&quot;",
        "newline": "l1\nl2",
        "cdata_close": "a]]&gt;b &lt;",
    },
    "cdata": {
        "plain": "Lyon",
        "markup": '<![CDATA[<a href="x">&amp;</a>]]>',
        "quotes": 'it\'s "q"',
        "newline": "l1\nl2",
        "cdata_close": "<![CDATA[a]]]]><![CDATA[>b <]]>",
    },
    "cdata-lines": {
        "plain": "Lyon",
        "markup": '<![CDATA[<a href="x">&amp;</a>]]>',
        "quotes": 'it\'s "q"',
        "newline": "<![CDATA[l1\nl2]]>",
        "cdata_close": "<![CDATA[a]]]]><![CDATA[>b <]]>",
    },
}


@pytest.mark.parametrize(
    ("name", "key"),
    [(n, k) for n in sorted(ESCAPED) for k in MARKUP_STRINGS],
    ids=lambda x: str(x),
)
def test_a_markup_codec_writes_and_reads_each_string(name: str, key: str) -> None:
    codec, text = markup_codec(name), MARKUP_STRINGS[key]
    assert codec.escape(text) == ESCAPED[name][key]
    assert codec.unescape(codec.escape(text)) == text


def test_every_markup_codec_is_in_the_table() -> None:
    assert sorted(markup_codec_names()) == sorted(ESCAPED)


@pytest.mark.parametrize("name", sorted(ESCAPED))
@PROPERTY
@given(text=st.text(max_size=20))
def test_any_string_reads_back_through_markup(name: str, text: str) -> None:
    codec = markup_codec(name)
    written = codec.escape(text)
    assert codec.unescape(written) == text
    if codec.decodes_entities:  # nothing in it is markup
        assert "<" not in written
    assert codec.encode(3) == "3" and codec.encode(text) == written
