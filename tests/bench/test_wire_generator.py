"""The wire-format generator (bench/wire_generator) and its bench (bench/wire_formats.py).

The generator must be deterministic, its templates must render through the project's renderer,
every axis value must occur, its value codecs must write what a reader of each syntax reads back,
and the bench must read the templates whose formats today's derivation covers (so a broken
generator or bench fails here, whatever derivation's rate on the whole space).
"""

from __future__ import annotations

import ast
import html
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `bench`

from bench.wire_generator import (
    AXES,
    BOS,
    EOS,
    encode,
    generate,
    generate_many,
    sample_axes,
)
from bench.wire_generator.codecs import LITERALS, Literal, value_macro

from bench import wire_formats
from tooldialect.conformance import check_template, conversation
from tooldialect.dialect.builtins import get_builtin
from tooldialect.errors import ToolDialectError
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import RICH_ARGUMENTS, tool_for

if sys.version_info >= (3, 11):
    import tomllib

SAMPLE = range(50)

VALUES: list[Any] = [
    RICH_ARGUMENTS,
    {"s": 'it\'s a \\ back"slash" \t tab', "u": "Zoë ✓ <&>", "neg": -4, "f": 1.5},
    ["x", 2, False, None, {"k": [1, {"z": "y"}]}],
    'a "lamp" <b> & co\nsecond line',
    0.25,
    True,
    None,
]


def test_the_same_seed_gives_the_same_template() -> None:
    for seed in (0, 7, 123456):
        a, b = generate(seed), generate(seed)
        assert (a.source, a.axes, a.spelling) == (b.source, b.axes, b.spelling)
    sources = {g.source for g in generate_many(40, seed=3)}
    assert len(sources) == 40
    assert [g.seed for g in generate_many(3, seed=2)] == wire_formats.seeds_for(3, 2)


def test_every_axis_value_occurs() -> None:
    seen: dict[str, Counter[str]] = {axis: Counter() for axis in AXES}
    for g in generate_many(400, seed=0):
        for axis, value in g.axes.as_dict().items():
            seen[axis][value] += 1
    missing = {axis: set(values) - set(seen[axis]) for axis, values in AXES.items()}
    assert not any(missing.values()), missing


def test_fixed_axes_are_kept_and_impossible_ones_refused() -> None:
    g = generate(5, codec="sql", structure="items", envelope="none")
    assert (g.axes.codec, g.axes.structure, g.axes.envelope) == ("sql", "items", "none")
    assert g.axes.separator != "glued"  # no closer and no separator: calls could not be split
    with pytest.raises(ValueError, match="structure"):
        generate(5, codec="markup_attr", structure="object")
    with pytest.raises(ValueError, match="no such axis"):
        sample_axes(__import__("random").Random(0), {"colour": "red"})


@pytest.mark.parametrize("seed", SAMPLE)
def test_sample_renders_whole_conversations(seed: int) -> None:
    g = generate(seed)
    template = ChatTemplate(g.source, bos_token=BOS, eos_token=EOS)
    caps = template.capabilities
    assert all((caps.tools, caps.tool_calls, caps.parallel_calls, caps.tool_role)), g.axes
    # the renderer hands over arguments as objects: the template's codec writes them
    assert template.argument_form == "object", g.axes
    tools = wire_formats.tools()
    short = template.render(conversation(), tools=[tool_for(RICH_ARGUMENTS)])
    long = template.render(wire_formats.long_conversation(), tools=tools)
    for text in ("Be brief.", "Find a lamp.", '{"found": 1}', "Thanks. Another?", "lookup_item"):
        assert text in short, (g.axes, text)
    for text in ('{"ok": 0}', '{"ok": 1}', "Found both.", "Thanks.", "get_weather"):
        assert text in long, (g.axes, text)
    assert g.reply_open in long[-len(g.reply_open) - 30 :]  # the generation prompt
    two = template.render(
        [{"role": "user", "content": "Hi"}, wire_formats.two_call_turn()],
        tools=tools,
        add_generation_prompt=False,
    )
    reply = wire_formats.reply_of(g, two)
    assert reply.index("lookup_item") < reply.index("get_weather"), g.axes
    # a template the bench could not judge is a fault of the generator, not of derivation
    report = check_template(g.source, builtins=False, bos_token=BOS, eos_token=EOS)
    assert report.verdict not in ("no-call", "no-tools", "broken"), (g.axes, report.reason)


def test_strict_templates_refuse_unexpected_roles() -> None:
    odd = [{"role": "user", "content": "zzhello"}, {"role": "critic", "content": "zzcritic"}]
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    strict = ChatTemplate(generate(11, strict="raise").source, bos_token=BOS, eos_token=EOS)
    with pytest.raises(ToolDialectError, match="role"):
        strict.render(odd)
    ok = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert "zzhello" in strict.render([odd[0], ok], add_generation_prompt=False)
    lenient = ChatTemplate(generate(11, strict="lenient").source, bos_token=BOS, eos_token=EOS)
    rendered = lenient.render(odd)
    assert "zzhello" in rendered and "zzcritic" not in rendered


# ---------------------------------------------------------------------------------------------
# Value codecs: the template's macro writes what ``encode`` says, and a reader of the syntax
# (the standard library's where there is one) reads the value back


def _macro_render(codec: str, value: Any) -> str:
    source = "\n".join(
        [
            *value_macro("render_value", codec),
            "{%- for m in messages if m.tool_calls %}",
            "{{- render_value(m.tool_calls[0].function.arguments.v) }}",
            "{%- endfor %}",
        ]
    )
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"v": value}}}
    messages = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    return ChatTemplate(source).render(messages, add_generation_prompt=False)


def _drop_null_members(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [{} if v is None else _drop_null_members(v) for v in value]
    return value


class _Reader:
    """A reader of one ``Literal`` syntax, written from the table, not from the encoder."""

    def __init__(self, syntax: Literal, text: str) -> None:
        self.s, self.t, self.i = syntax, text, 0

    def take(self, token: str) -> bool:
        if self.t.startswith(token, self.i):
            self.i += len(token)
            return True
        return False

    def string(self) -> str:
        q, out = self.s.quote, []
        while True:
            c = self.t[self.i]
            self.i += 1
            if c == q:
                if self.s.escapes == "doubled" and self.take(q):
                    out.append(q)
                    continue
                return "".join(out)
            if c == "\\" and self.s.escapes != "doubled":
                e = self.t[self.i]
                self.i += 1
                if self.s.escapes == "quote_only" and e not in ("\\", q):
                    out.append("\\" + e)
                else:
                    out.append({"n": "\n", "r": "\r", "t": "\t"}.get(e, e))
                continue
            out.append(c)

    def key(self) -> str | None:
        before, after = self.s.key.split("{k}")
        m = re.compile(re.escape(before) + r"(\w+)" + re.escape(after)).match(self.t, self.i)
        if m is None:
            return None
        self.i = m.end()
        return m.group(1)

    def members(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while not self.take(self.s.map_close):
            key = self.key()
            assert key is not None, self.t[self.i :]
            out[key] = self.value()
            self.take(self.s.sep)
        return out

    def items(self) -> list[Any]:
        out = []
        while not self.take(self.s.list_close):
            out.append(self.value())
            self.take(self.s.sep)
        return out

    def value(self) -> Any:
        s = self.s
        for word, value in ((s.true, True), (s.false, False), (s.null, None)):
            if word is not None and self.take(word):
                return value
        if self.take(s.quote):
            return self.string()
        if self.take(s.map_open):
            start = self.i
            if self.key() is not None or self.t.startswith(s.map_close, self.i):
                self.i = start
                return self.members()
            self.i = start
            return self.items()  # Lua: one brace for both
        if self.take(s.list_open):
            return self.items()
        m = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?").match(self.t, self.i)
        assert m is not None, self.t[self.i :]
        self.i = m.end()
        return float(m.group()) if m.group(1) or m.group(2) else int(m.group())


def _read_literal(codec: str, text: str) -> Any:
    reader = _Reader(LITERALS[codec], text)
    value = reader.value()
    assert reader.i == len(text), text[reader.i :]
    return value


def _read(codec: str, text: str) -> Any:
    if codec == "json":
        return json.loads(text)
    if codec == "python":
        return ast.literal_eval(text)
    if codec == "toml_inline" and sys.version_info >= (3, 11):
        return tomllib.loads(f"v = {text}")["v"]
    if codec in LITERALS:
        return _read_literal(codec, text)
    if codec == "typed_prefix":
        kind, rest = text[0], text[1:]
        simple = {"~": None, "?": rest == "true"}
        if kind in simple:
            return simple[kind]
        return rest if kind == "$" else json.loads(rest)
    if codec == "markup_cdata":
        if text.startswith("<![CDATA["):
            return text[9:-3]
        try:
            return json.loads(text)
        except ValueError:
            return text
    if codec == "markup_attr":
        assert text[0] == text[-1] == '"'
        text = text[1:-1]
    assert "<" not in text and '"' not in text  # escaped for markup
    raw = html.unescape(text)
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@pytest.mark.parametrize("codec", AXES["codec"])
def test_codec_macros_write_what_readers_read_back(codec: str) -> None:
    for value in VALUES:
        written = _macro_render(codec, value)
        assert written == encode(codec, value), (codec, value)
        if codec == "toml_inline" and not isinstance(value, (dict, list)):
            continue  # TOML reads a scalar as a key's value only where it has one (no null)
        want = _drop_null_members(value) if codec == "toml_inline" else value
        if codec.startswith("markup") and isinstance(value, str):
            # markup codecs write strings raw (escaped): a string that reads as JSON is the
            # schema's to type; these probe strings never do
            assert not _looks_like_json(value)
        got = _read(codec, written)
        assert wire_formats.same_json(got, want), (codec, written, got)


def _looks_like_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_markup_codecs_escape_what_markup_needs() -> None:
    text = 'a "lamp" <b> & co\nsecond line'
    assert "<" not in encode("markup_text", text) and "&amp;" in encode("markup_text", text)
    assert encode("markup_cdata", text) == f"<![CDATA[{text}]]>"
    assert encode("markup_cdata", "plain words") == "plain words"  # CDATA only when needed
    assert encode("markup_attr", 'say "hi"') == '"say &#34;hi&#34;"'


# ---------------------------------------------------------------------------------------------
# The bench reads what today's catalog covers, and says why it misses what it cannot read

CATALOG = [
    # hermes-like: a JSON object holding the name, in tags
    {"codec": "json", "structure": "object", "name_at": "inside", "envelope": "tag"},
    # one element per argument, JSON values, the name an attribute of the call's element
    {"codec": "json", "structure": "elements", "name_at": "attribute", "nesting": "codec"},
]


@pytest.mark.parametrize("fixed", CATALOG, ids=["json-object-in-tags", "json-elements"])
def test_derivation_reads_formats_inside_todays_catalog(fixed: dict[str, str]) -> None:
    plain = {"section": "none", "ids": "none", "reasoning": "none", "envelope": "tag"}
    for seed in range(6):
        g = generate(seed, **{**plain, **fixed})
        for builtins in (True, False):
            verdict = wire_formats.judge(g, builtins=builtins)
            assert verdict.kind == "read", (g.axes, builtins, verdict)


def test_the_bench_reports_a_spec_that_misreads() -> None:
    g = generate(0, codec="json", structure="object", name_at="inside", envelope="tag")
    template = ChatTemplate(g.source, bos_token=BOS, eos_token=EOS)
    reason = wire_formats.read_two_calls(g, template, get_builtin("pythonic"))
    assert reason.startswith(("reads", "the parser raised", "leaves")), reason


def test_report_tables_count_every_template() -> None:
    rows = [wire_formats.measure(s) for s in range(4)]
    text = wire_formats.markdown(rows, seed=0, seconds=1.0, jobs=1, source="x")
    assert "| codec | json |" in text and "| outcome | builtins | derived only |" in text
    for axis in AXES:
        counted = [line for line in text.splitlines() if line.startswith(f"| {axis} |")]
        assert sum(int(line.split("|")[3]) for line in counted) == 4, axis
    data = json.loads(wire_formats.rows_json(rows, seed=0, seconds=1.0, source="x", note=""))
    assert [r["seed"] for r in data["rows"]] == [0, 1, 2, 3]
    for row, back in zip(rows, data["rows"], strict=True):
        assert back["derived"]["kind"] == row.derived.kind
        same = row.builtins == row.derived
        assert (back["builtins"] == "as derived") is same
