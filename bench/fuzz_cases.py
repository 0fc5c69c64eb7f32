"""Fuzzing strategies and checks shared by the test suite (few examples) and ``bench/fuzz.py``.

Three targets, each a hypothesis strategy plus a check that raises ``AssertionError`` on a finding:

* schemas: random JSON Schemas -> ``schema_grammar``: an ``UnsupportedSchemaError`` whose pointer
  resolves inside the schema, or a grammar llama.cpp's sampler loads, accepting valid instances
  (hypothesis-jsonschema, written in the grammar's canonical key order) and rejecting clearly
  invalid ones. The sampler part runs in a child process (``bench/fuzz_sampler.py``) so an abort
  is counted, not fatal.
* outputs: random text mixed with every builtin dialect's markers and well-formed calls ->
  parser: never raises, loses no word, streaming equals batch under random chunking.
* messages: malformed OpenAI messages and tools -> the handler's normalisation and prompt render:
  a ``ToolSpecError`` (or a documented acceptance), never another exception.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# Schemas

_SCALAR_TYPES = ["string", "integer", "number", "boolean", "null"]
_FORMATS = ["date", "time", "date-time", "uuid", "email", "uri"]
_PATTERNS = ["^[a-z]+$", "^[0-9]{3}-[0-9]{4}$", "^(ab|cd)*x?$", "^\\w{2,5}$", "^(?=x).*$", "a"]
_UNSUPPORTED = [
    {"not": {"type": "string"}},
    {"multipleOf": 3},
    {"patternProperties": {"^x": {}}},
    {"if": {"type": "string"}, "then": {"minLength": 1}},
    {"minProperties": 1},
]
_REF = {"$ref": "#/$defs/d0"}
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text("abcxyz _-", max_size=6),
)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    string = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 4),
            "maxLength": st.integers(4, 12),
            "format": st.sampled_from(_FORMATS),
            "pattern": st.sampled_from(_PATTERNS),
        },
    )
    integer = st.fixed_dictionaries(
        {"type": st.just("integer")},
        optional={
            "minimum": st.integers(-50, 50),
            "maximum": st.integers(50, 10**6),
            "exclusiveMinimum": st.integers(-100, -51),
        },
    )
    number = st.fixed_dictionaries(
        {"type": st.just("number")},
        optional={"minimum": st.integers(0, 5), "maximum": st.integers(10, 100)},
    )
    return st.one_of(
        string,
        integer,
        number,
        st.sampled_from([{"type": t} for t in _SCALAR_TYPES]),
        st.builds(lambda t: {"type": [t, "null"]}, st.sampled_from(_SCALAR_TYPES[:4])),
        st.lists(_json_scalars, min_size=1, max_size=4, unique_by=json.dumps).map(
            lambda xs: {"enum": xs}
        ),
        _json_scalars.map(lambda x: {"const": x}),
        st.just({}),
        st.just(dict(_REF)),
        st.sampled_from(_UNSUPPORTED),
    )


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    props = st.dictionaries(st.sampled_from("abcdef"), children, max_size=4)

    def obj(p: dict[str, Any], req: list[bool], extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": p}
        required = [k for k, r in zip(p, req, strict=False) if r]
        if required:
            out["required"] = required
        if extra is not None:
            out["additionalProperties"] = extra
        return out

    objects = st.builds(
        obj,
        props,
        st.lists(st.booleans(), min_size=4, max_size=4),
        st.one_of(st.none(), st.booleans(), children),
    )
    arrays = st.builds(
        lambda items, lo, hi: {
            "type": "array",
            "items": items,
            "minItems": lo,
            "maxItems": lo + hi,
        },
        children,
        st.integers(0, 2),
        st.integers(0, 3),
    )
    tuples = st.lists(children, min_size=1, max_size=3).map(
        # the grammar requires every prefix item (documented); instances must have them all
        lambda xs: {"type": "array", "prefixItems": xs, "items": False, "minItems": len(xs)}
    )
    combos = st.builds(
        lambda kw, xs: {kw: xs},
        st.sampled_from(["anyOf", "oneOf", "allOf"]),
        st.lists(children, min_size=1, max_size=3),
    )
    nullable_obj = objects.map(lambda o: {**o, "type": ["object", "null"]})
    return st.one_of(objects, arrays, tuples, combos, nullable_obj)


def _uniquify(schema: Any) -> Any:
    """Give every property a unique name (``p0``, ``p1``...), so one global key order exists."""
    counter = iter(range(10**6))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items() if k not in ("properties", "required")}
        if isinstance(node.get("properties"), dict):
            names = {old: f"p{next(counter)}" for old in node["properties"]}
            out["properties"] = {names[k]: walk(v) for k, v in node["properties"].items()}
            if "required" in node:
                out["required"] = [names[k] for k in node["required"]]
        return out

    return walk(schema)


def _attach_defs(pair: tuple[Any, Any]) -> Any:
    schema, definition = pair
    if '"$ref"' not in json.dumps(schema):
        return schema
    root = schema if isinstance(schema, dict) else {"allOf": [schema]}
    return {"$defs": {"d0": definition}, **root}


def schemas(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Random JSON Schemas over the keywords tool arguments use (and a few unsupported ones)."""
    node = st.recursive(_leaf(), _extend, max_leaves=max_leaves)
    definition = st.recursive(_leaf().filter(lambda s: s != _REF), _extend, max_leaves=4).filter(
        lambda s: '"$ref"' not in json.dumps(s)
    )
    return st.tuples(node, definition).map(_attach_defs).map(_uniquify)


_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "then", "else")


def instance_schema(schema: Any) -> Any:
    """``schema`` as the grammar reads it, for drawing the valid instances it must accept:
    the type the compiler implies written out wherever a subschema has none
    (``grammar.schema.implied_type``: such a schema is narrowed to that type, where JSON
    Schema admits any value), objects that declare keys closed unless they say otherwise (the
    compiler's default), and every ``pattern`` and ``patternProperties`` key read with
    ECMA-262's ASCII classes (``(?a)``: Python's ``\\w`` also matches ``É``, JSON Schema's does
    not). Under ``not`` and ``if`` nothing changes (a type added there would change what the
    schema admits)."""
    from tooldialect.grammar.schema import implied_type

    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if "type" not in out and not any(k in out for k in ("enum", "const", "$ref")):
        typ = implied_type(out)
        if typ is not None:
            out["type"] = typ
    if isinstance(out.get("pattern"), str):
        out["pattern"] = "(?a)" + out["pattern"]
    if isinstance(out.get("patternProperties"), dict):  # key patterns are ECMA-262 too
        out["patternProperties"] = {"(?a)" + k: v for k, v in out["patternProperties"].items()}
    declares = "properties" in out or "patternProperties" in out
    if declares and "additionalProperties" not in out:
        out["additionalProperties"] = False  # closed by default (docs/structured-output.md)
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: instance_schema(v) for k, v in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [instance_schema(v) for v in out[key]]
    for key in _SUBSCHEMAS:
        if key in out:
            out[key] = instance_schema(out[key])
    return out


def deep_schema(depth: int) -> dict[str, Any]:
    """An object nested ``depth`` levels deep (deep nesting, one case per depth)."""
    node: dict[str, Any] = {"type": "string"}
    for level in range(depth):
        node = {"type": "object", "properties": {f"k{level}": node}, "required": [f"k{level}"]}
    return node


def resolve_pointer(schema: Any, pointer: str) -> Any:
    """The value at JSON pointer ``pointer`` in ``schema``; raises ``LookupError`` if none."""
    node = schema
    if pointer in ("", "#"):
        return node
    for raw in pointer.lstrip("#").lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise LookupError(pointer)
    return node


def key_order(schema: Any) -> dict[str, int]:
    """Every property name in declaration order (names are unique, see ``_uniquify``)."""
    order: dict[str, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            for k, v in node.items():
                if k == "properties" and isinstance(v, dict):
                    for name in v:
                        order.setdefault(name, len(order))
                walk(v)

    walk(schema)
    return order


def canonical(value: Any, order: Mapping[str, int]) -> Any:
    """``value`` with object keys in the grammar's order: declared ones first, in order."""
    if isinstance(value, list):
        return [canonical(v, order) for v in value]
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (0, order[k]) if k in order else (1, 0))
        return {k: canonical(value[k], order) for k in keys}
    return value


def within_grammar_limits(value: Any) -> bool:
    """Numbers the grammar writes: integers up to 19 digits, no NaN/inf (documented limits)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return len(str(abs(value))) <= 19
    if isinstance(value, float):
        text = repr(value)
        mantissa = text.split("e")[0].lstrip("-")
        return value == value and abs(value) != float("inf") and len(mantissa) <= 38
    if isinstance(value, list):
        return all(within_grammar_limits(v) for v in value)
    if isinstance(value, dict):
        return all(within_grammar_limits(v) for v in value.values())
    return False


_WRONG_TYPED: dict[str, list[Any]] = {
    "string": [0, True, None, [], {}],
    "integer": ["1", True, None, [], {}, 1.5],
    "number": ["1", True, None, [], {}],
    "boolean": [0, "true", None, [], {}],
    "null": [0, "", False, [], {}],
    "object": [0, "x", True, None, []],
    "array": [0, "x", True, None, {}],
}
GARBAGE = ["", "{", '"unterminated', "[1,,2]", "nul", "'single'", "{'a': 1}", "<tool_call>"]


def clearly_invalid(schema: Any) -> list[str]:
    """Texts no grammar for ``schema`` may accept: broken JSON, and values of the wrong JSON type
    when the schema's root is a plain ``type`` (no combinator, ``$ref``, ``enum`` or ``const``)."""
    out = list(GARBAGE)
    plain = isinstance(schema, dict) and isinstance(schema.get("type"), str)
    if plain and not set(schema) & {"anyOf", "oneOf", "allOf", "$ref", "enum", "const"}:
        out += [json.dumps(v) for v in _WRONG_TYPED.get(schema["type"], [])]
    return out


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _has_bounds(schema: Any) -> bool:
    """Whether a numeric bound appears anywhere in ``schema``."""
    if isinstance(schema, dict):
        return any(k in schema for k in _BOUNDS) or any(_has_bounds(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_bounds(v) for v in schema)
    return False


def _has_exponent(value: Any) -> bool:
    """Whether JSON text of ``value`` writes a float with an exponent (``-4.4e+307``): a bounded
    number is written without one (a documented choice, docs/structured-output.md), so such an
    instance is only fuzzed against schemas without bounds."""
    if isinstance(value, float):
        return "e" in repr(value).lower()
    if isinstance(value, list):
        return any(_has_exponent(v) for v in value)
    if isinstance(value, dict):
        return any(_has_exponent(v) for v in value.values())
    return False


def dumps(value: Any) -> str:
    """JSON text as the grammar writes it: raw non-ASCII, but DEL escaped like other controls."""
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        text = json.dumps(value)
    return text.replace("\x7f", "\\u007f")


# ---------------------------------------------------------------------------------------------
# The sampler, in a child process


def run_sampler_cases(
    cases: list[dict[str, Any]], *, model: Path, timeout: float = 600.0
) -> tuple[list[dict[str, Any]], int]:
    """Check ``cases`` (``{"gbnf", "accept": [...], "reject": [...]}``) on llama.cpp's sampler in
    child processes. Returns the per-case results and how many children died (aborts): a case
    that kills its child is reported ``{"aborted": true}`` and the rest go to a fresh child."""
    results: list[dict[str, Any]] = []
    aborts = 0
    pending = list(cases)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    while pending:
        payload = "\n".join(json.dumps(c) for c in pending) + "\n"
        proc = subprocess.run(
            [sys.executable, "-m", "bench.fuzz_sampler", str(model)],
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=ROOT,
        )
        done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        results += done
        pending = pending[len(done) :]
        if proc.returncode != 0:
            if not pending:
                raise RuntimeError(
                    f"sampler child failed after its last case: {proc.stderr[-2000:]}"
                )
            aborts += 1
            results.append({"aborted": True, "returncode": proc.returncode})
            pending = pending[1:]
    return results, aborts


def iter_chunks(text: str, cuts: list[int]) -> Iterator[str]:
    """``text`` split at the sorted, de-duplicated positions ``cuts``."""
    last = 0
    for cut in sorted({c for c in cuts if 0 < c < len(text)}):
        yield text[last:cut]
        last = cut
    yield text[last:]


def schema_case(schema: Any, instances: list[Any]) -> dict[str, Any] | str:
    """Compile ``schema``: the pointer of an ``UnsupportedSchemaError`` (checked to resolve), or
    a sampler case with ``instances`` (valid, canonical order) to accept and garbage to reject."""
    from tooldialect.errors import UnsupportedSchemaError
    from tooldialect.grammar import schema_grammar

    try:
        gbnf = schema_grammar(schema)
    except UnsupportedSchemaError as exc:
        resolve_pointer(schema, exc.pointer)  # a LookupError here is a finding
        return exc.pointer
    order = key_order(schema)
    accept = [
        dumps(canonical(v, order))
        for v in instances
        if within_grammar_limits(v) and not (_has_bounds(schema) and _has_exponent(v))
    ]
    return {"gbnf": gbnf, "accept": accept, "reject": clearly_invalid(schema), "schema": schema}


# ---------------------------------------------------------------------------------------------
# Model outputs -> parser

_TOOL_NAMES = ["get_weather", "search", "f"]
FUZZ_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
            },
        },
    }
    for name in _TOOL_NAMES
]
_PUNCT = ["{", "}", '"', ":", ",", "[", "]", "(", ")", "<", ">", "/", "\n", " ", "\\", "=", "```"]


_VARIANT_MARKERS = [
    # wrappers around bare calls, other families' markers, end-of-turn text
    "```json\n",
    "```python\n",
    "```\n",
    "\n```",
    "[TOOL_CALLS]",
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<|eot_id|>",
    "</think>",
    # harmony header tokens, in any order
    "<|start|>assistant",
    "<|channel|>",
    "<|constrain|>json",
    "<|message|>",
    " to=functions.get_weather",
    " to=container.exec",
    " to=assistant",
    "commentary",
    "final",
    "<|call|>",
]
END_OF_TURN = ("<|im_end|>", "<|eot_id|>")
"""End-of-turn markers the soup is parsed with too: words before the first one must survive."""


def _variants(spec: Any, calls: list[str]) -> list[str]:
    """The long-tail variants of rendered calls: JSON-escaped (``\\n``, ``\\"``), with a
    broken quote in the arguments, and the opener's first tag doubled."""
    out: list[str] = []
    for c in calls:
        out.append(json.dumps(c)[1:-1])  # the whole call written JSON-escaped
        at = c.find('"Paris"')
        if at >= 0:
            out.append(c[: at + 3] + '"' + c[at + 3 :])  # broken JSON inside the arguments
    opener = spec.primary.opener().strip()
    if opener.startswith("<"):
        out.append(opener[: opener.find(">") + 1] + calls[0])  # a doubled opening tag
    return out


INVENTED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "templates" / "invented"
DERIVED = "derived:"
"""Prefix of a fuzzed dialect name that is the spec derived from an invented template."""


@functools.cache
def fuzz_spec(name: str) -> Any:
    """The builtin spec ``name``, or for ``derived:FILE`` the spec derivation alone reads off the
    invented template ``FILE`` (header-addressed messages, nested element bodies...)."""
    from tooldialect.dialect.spec import DialectSpec
    from tooldialect.verify import detect_dialect

    if not name.startswith(DERIVED):
        return DialectSpec.builtin(name)
    source = (INVENTED / name[len(DERIVED) :]).read_text(encoding="utf-8")
    return detect_dialect(source, builtins=False)


def derived_names() -> list[str]:
    """``derived:FILE`` for every invented template derivation reads a spec from."""
    names = [DERIVED + p.name for p in sorted(INVENTED.glob("*.jinja"))]
    return [n for n in names if fuzz_spec(n) is not None]


def dialect_markers(name: str) -> list[str]:
    """Every non-empty string in the spec ``name`` (``fuzz_spec``: markers, keys, templates),
    calls it renders, whole and cut short, their long-tail variants (``_variants``) and the
    markers of other wrappers, end-of-turn text and harmony headers (``_VARIANT_MARKERS``)."""
    spec = fuzz_spec(name)
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, str) and node.strip():
            found.add(node)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list | tuple):
            for v in node:
                walk(v)

    walk(spec.model_dump(mode="json"))
    calls = [
        spec.render_call("get_weather", {"city": "Paris", "n": 3}),
        spec.render_calls([("search", {"city": "x"}, None), ("f", {}, None)]),
    ]
    cut = [c[: len(c) // 2] for c in calls]
    return sorted(found) + calls + cut + _variants(spec, calls) + _VARIANT_MARKERS


def _invalid_utf8(data: bytes) -> str:
    """Bytes that are not valid UTF-8, decoded as a byte-level tokenizer's pieces would be:
    replacement characters, or lone surrogates (``surrogateescape``)."""
    try:
        return data.decode("utf-8", errors="surrogateescape")
    except UnicodeDecodeError:  # pragma: no cover - surrogateescape never raises
        return data.decode("utf-8", errors="replace")


_INVALID_UTF8 = st.binary(min_size=1, max_size=6).map(_invalid_utf8) | st.binary(
    min_size=1, max_size=6
).map(lambda b: b.decode("utf-8", errors="replace"))


@st.composite
def model_outputs(draw: st.DrawFn, markers: list[str]) -> tuple[str, list[str], list[int]]:
    """``(text, words, cuts)``: markers, punctuation, random invalid UTF-8 and unique words
    mixed; chunk boundaries."""
    pieces: list[str] = []
    words: list[str] = []
    for i in range(draw(st.integers(1, 24))):
        kind = draw(st.integers(0, 10))
        if kind < 4:
            word = f"w{i}q"
            words.append(word)
            pieces.append(word)
        elif kind < 7:
            pieces.append(draw(st.sampled_from(markers)))
        elif kind < 10:
            pieces.append(draw(st.sampled_from(_PUNCT)))
        else:
            pieces.append(draw(_INVALID_UTF8))
        pieces.append(draw(st.sampled_from(["", " ", "\n"])))
    text = "".join(pieces)
    cuts = draw(st.lists(st.integers(0, max(len(text), 1)), max_size=12))
    return text, words, cuts


def _kept(result: Any) -> str:
    kept = [result.content or "", result.reasoning_content or ""]
    kept += [c.name + c.arguments_json + c.id for c in result.tool_calls]
    return "\x00".join(kept)


def check_output(name: str, text: str, words: list[str], cuts: list[int]) -> None:
    """The parser never raises, loses no word, and streams what it parses in one piece (under
    the given chunking, plain and with the end-of-turn markers of ``END_OF_TURN``, where the
    words before the first marker must survive)."""
    from tooldialect.parse import StreamParser, parse_output

    spec = fuzz_spec(name)

    def shape(r: Any) -> Any:
        return (r.content, r.reasoning_content, [(c.name, c.arguments) for c in r.tool_calls])

    for ends in ((), END_OF_TURN):
        batch = parse_output(text, spec, tools=FUZZ_TOOLS, end_of_turn=ends)
        head = min((text.find(e) for e in ends if e in text), default=len(text))
        joined = _kept(batch)
        lost = [w for w in words if w in text[:head] and w not in joined]
        assert not lost, f"{name}: words {lost} lost from {text!r} -> {batch!r}"
        parser = StreamParser(spec, tools=FUZZ_TOOLS, end_of_turn=ends)
        for chunk in iter_chunks(text, cuts):
            parser.feed(chunk)
        parser.close()
        streamed = parser.result
        assert shape(streamed) == shape(batch), f"{name}: chunks {list(iter_chunks(text, cuts))!r}"


# ---------------------------------------------------------------------------------------------
# Messages and tools -> handler

_BASE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
_CALL = {
    "id": "call00001",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
BASE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [_CALL]},
    {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
    {"role": "user", "content": "Thanks"},
]
_MISSING = object()
REFUSALS: list[str] = []
"""Messages of templates that refused a conversation on purpose (for the report)."""
_MESSAGE_EDITS: list[tuple[str, Any]] = [
    ("role", _MISSING),
    ("role", 123),
    ("role", ""),
    ("role", "narrator"),
    ("role", None),
    ("content", 5),
    ("content", {"a": 1}),
    ("content", _MISSING),
    ("content", None),
    ("content", [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]),
    ("content", ["plain part", {"type": "text", "text": "x"}]),
    ("content", [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
    ("content", [{"type": "input_audio", "input_audio": {"data": "AAAA"}}]),
    ("content", [{"type": "text"}]),
    ("content", [{"type": "text", "text": 5}]),
    ("content", [7]),
    ("content", "x" * 100_000),
    ("content", "{{ 7 * 7 }} {% raise %}"),
    ("tool_calls", "x"),
    ("tool_calls", [5]),
    ("tool_calls", [{"function": {"name": 5}}]),
    ("tool_calls", [{"function": {"name": "get_weather", "arguments": 5}}]),
    ("tool_calls", [{"function": {"name": "get_weather", "arguments": "not json"}}]),
    ("tool_calls", [{"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]),
    ("tool_calls", [{"id": 5, "function": {"name": "get_weather", "arguments": "{}"}}]),
    ("tool_calls", []),
    ("tool_call_id", 5),
    ("tool_call_id", "nomatch01"),
    ("name", 5),
]
_LIST_EDITS = [
    "as_dict",
    "as_str",
    "empty",
    "message_str",
    "message_none",
    "orphan_tool",
    "two_systems",
    "assistant_first",
]
_TOOL_EDITS = [
    "duplicate_name",
    "huge_description",
    "no_parameters",
    "bad_type",
    "name_int",
    "not_a_list",
]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Any, Any]:
    """``(messages, tools)``: the base conversation with a few random edits."""
    messages: Any = json.loads(json.dumps(BASE_MESSAGES))
    tools: Any = [json.loads(json.dumps(_BASE_TOOL))]
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(messages) - 1))
        key, value = draw(st.sampled_from(_MESSAGE_EDITS))
        if value is _MISSING:
            messages[index].pop(key, None)
        else:
            messages[index][key] = json.loads(json.dumps(value))
    edit = draw(st.sampled_from([None, None, None, *_LIST_EDITS]))
    if edit == "orphan_tool":
        messages.insert(1, {"role": "tool", "tool_call_id": "zzz", "content": "orphan"})
    elif edit == "two_systems":
        messages.insert(1, {"role": "system", "content": "again"})
    elif edit == "assistant_first":
        messages.insert(0, {"role": "assistant", "content": "hello"})
    elif edit == "message_str":
        messages[draw(st.integers(0, len(messages) - 1))] = "hi"
    elif edit == "message_none":
        messages[draw(st.integers(0, len(messages) - 1))] = None
    elif edit == "as_dict":
        messages = messages[0]
    elif edit == "as_str":
        messages = "hello"
    elif edit == "empty":
        messages = []
    tool_edit = draw(st.sampled_from([None, None, *_TOOL_EDITS]))
    if tool_edit == "duplicate_name":
        tools.append(json.loads(json.dumps(_BASE_TOOL)))
    elif tool_edit == "huge_description":
        tools[0]["function"]["description"] = "d" * 200_000
    elif tool_edit == "no_parameters":
        tools[0]["function"].pop("parameters")
    elif tool_edit == "bad_type":
        tools[0]["type"] = "retrieval"
    elif tool_edit == "name_int":
        tools[0]["function"]["name"] = 5
    elif tool_edit == "not_a_list":
        tools = tools[0]
    return messages, tools


def check_conversation(template: Any, spec: Any, messages: Any, tools: Any) -> str:
    """Validate and render like ``ToolChatHandler.prepare``; returns the outcome's name.

    Allowed: a prompt; a ``ToolSpecError`` naming ``messages[i]...`` or ``tools[...]``; a
    ``TemplateError`` only when the template refused on purpose (``raise_exception``), never a
    Python error from inside it. The caller's objects are never mutated."""
    import copy

    import jinja2

    from tooldialect.errors import RenderBudgetError, TemplateError, ToolSpecError
    from tooldialect.frontend.render import render_prompt
    from tooldialect.prompt.request_messages import validate_messages
    from tooldialect.tool_defs import normalize_tools

    before = copy.deepcopy((messages, tools))
    try:
        validate_messages(messages)
        defs = normalize_tools(tools)
        render_prompt(template, spec, messages, tools=defs)
        outcome = "rendered"
    except ToolSpecError as exc:
        text = str(exc)
        assert text.startswith(("messages", "tools")) or "messages[" in text or "tools[" in text, (
            text
        )
        outcome = "tool_spec_error"
    except RenderBudgetError as exc:
        raise AssertionError(f"render budget hit on a small conversation: {exc}") from exc
    except TemplateError as exc:
        # raise_exception raises jinja's base TemplateError: the template refusing on purpose.
        # Anything else (UndefinedError, a Python error) is the template tripping over the input.
        text = str(exc)
        outcome = "template_refused" if type(exc.__cause__) is jinja2.TemplateError else "crashed"
        REFUSALS.append(f"{outcome}: {text}")
    assert (messages, tools) == before, "caller's messages or tools were mutated"
    return outcome
