"""build_grammar: render_call output round-trips through forced and lazy grammars for every body
kind and every builtin dialect; wrong names and missing arguments are rejected."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conftest import model_path
from grammar_check import (
    grammar_accepts,
    lazy_grammar_accepts,
    validate_grammar,
    vocab_of,
)
from tooldialect.dialect.builtins import builtin_dialects
from tooldialect.dialect.spec import (
    CallFormat,
    DialectSpec,
    ElementBody,
    JsonBody,
    PythonBody,
    ReasoningMarkers,
    TaggedBody,
    Trigger,
)
from tooldialect.errors import UnsupportedToolChoiceError
from tooldialect.grammar import build_grammar, trigger_pattern


@pytest.fixture(scope="module")
def vocab_llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "units": {"enum": ["c", "f"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}},
    },
]
ARGS = {"city": 'Paris <b> "x"', "days": 3, "units": "c", "tags": ["a", "b"]}

HANDMADE = {
    "element-qwen3-coder": DialectSpec(
        id="t-element",
        formats=[
            CallFormat(call_open="<tool_call>\n", call_close="</tool_call>", body=ElementBody())
        ],
    ),
    "element-is-string": DialectSpec(
        id="t-dsml",
        formats=[
            CallFormat(
                section_open="<calls>",
                section_close="</calls>",
                body=ElementBody(
                    head='<invoke name="{name}">',
                    param='<p name="{key}" string="{is_string}">{value}</p>',
                    tail="</invoke>",
                ),
            )
        ],
    ),
    "element-delimited": DialectSpec(
        id="t-kv",
        formats=[
            CallFormat(
                call_open="<|act|>",
                body=ElementBody(
                    head="{name}\n",
                    param="{key}: {value}",
                    tail="\n<|act_end|>",
                    trim_value=False,
                    param_separator=" ;; ",
                ),
            )
        ],
    ),
    "element-delimited-lines": DialectSpec(
        id="t-kv-lines",
        formats=[
            CallFormat(
                call_open="<|act|>",
                body=ElementBody(
                    head="{name}\n",
                    param="{key}: {value}",
                    tail="\n<|act_end|>",
                    trim_value=False,
                    json_values=True,
                    param_separator="\n",
                ),
            )
        ],
    ),
    "tagged-mistral-v11": DialectSpec(
        id="t-mistral",
        formats=[CallFormat(call_open="[TOOL_CALLS]", body=TaggedBody(head="{name}[ARGS]"))],
    ),
    "tagged-kimi": DialectSpec(
        id="t-kimi",
        id_template="functions.{name}:{index}",
        formats=[
            CallFormat(
                section_open="<|tool_calls_section_begin|>",
                section_close="<|tool_calls_section_end|>",
                call_open="<|tool_call_begin|>",
                call_close="<|tool_call_end|>",
                body=TaggedBody(head="functions.{name}:{index}<|tool_call_argument_begin|>"),
            )
        ],
    ),
    "tagged-fenced": DialectSpec(
        id="t-fence",
        formats=[
            CallFormat(
                call_open="<call>",
                body=TaggedBody(
                    head="function<sep>{name}",
                    args_open="\n```json\n",
                    args_close="\n```",
                    tail="</call>",
                ),
            )
        ],
    ),
    "python-list": DialectSpec(
        id="t-py",
        formats=[
            CallFormat(section_open="[", section_close="]", separator=", ", body=PythonBody())
        ],
    ),
    "python-gemma4": DialectSpec(
        id="t-g4",
        formats=[
            CallFormat(
                call_open="<|tool_call>",
                call_close="<tool_call|>",
                body=PythonBody(
                    call_open="call:{name}{{",
                    call_close="}}",
                    assign=":",
                    arg_separator=",",
                    value_codec="gemma4",
                ),
            )
        ],
    ),
    "json-name-as-key": DialectSpec(
        id="t-apertus",
        formats=[
            CallFormat(
                section_open="<|tools_prefix|>[",
                section_close="]<|tools_suffix|>",
                separator=", ",
                body=JsonBody(name_key=None),
            )
        ],
    ),
    "json-arguments-as-string": DialectSpec(
        id="t-str",
        formats=[
            CallFormat(
                call_open="<fc>",
                call_close="</fc>",
                body=JsonBody(arguments_as_string=True, extra={"type": "function"}),
            )
        ],
    ),
    "json-id-after": DialectSpec(
        id="t-nemo",
        id_format="alnum9",
        formats=[
            CallFormat(
                section_open="[TOOL_CALLS][",
                section_close="]",
                separator=", ",
                body=JsonBody(id_key="id"),
            )
        ],
    ),
    "json-id-first": DialectSpec(
        id="t-r7b",
        id_format="numeric",
        formats=[
            CallFormat(
                section_open="<|START_ACTION|>[",
                section_close="]<|END_ACTION|>",
                separator=",",
                body=JsonBody(
                    name_key="tool_name",
                    arguments_key="parameters",
                    id_key="tool_call_id",
                    id_first=True,
                ),
            )
        ],
    ),
    "reasoning-hermes": DialectSpec(
        id="t-think",
        reasoning=ReasoningMarkers(),
        formats=[
            CallFormat(call_open="<tool_call>\n", call_close="\n</tool_call>", body=JsonBody())
        ],
    ),
}


def _specs() -> list[tuple[str, DialectSpec]]:
    return [
        *HANDMADE.items(),
        *((f"builtin-{n}", DialectSpec.builtin(n)) for n in builtin_dialects()),
    ]


SPECS = _specs()


def _skip_if_unforcible(spec: DialectSpec) -> None:
    if not spec.forcible:
        pytest.skip(f"{spec.id} is not forcible")


@pytest.mark.model
@pytest.mark.parametrize("layout", ["free", "canonical"], ids=["free", "canonical"])
@pytest.mark.parametrize(("key", "spec"), SPECS, ids=[k for k, _ in SPECS])
def test_round_trip(vocab_llama: Any, key: str, spec: DialectSpec, layout: Any) -> None:
    one = spec.render_call("get_weather", ARGS)
    two = spec.render_calls([("get_weather", {"city": "x", "days": 14}, None), ("ping", {}, None)])
    lazy = build_grammar(spec, TOOLS, argument_layout=layout)
    assert lazy is not None and lazy.lazy
    validate_grammar(lazy.gbnf, vocab=vocab_of(vocab_llama))
    patterns = lazy.lazy_patterns()
    if patterns:
        lead = "" if spec.primary.at_start_only else "Sure thing. "
        for text in (one, two) if spec.parallel_calls else (one,):
            assert lazy_grammar_accepts(
                lazy.gbnf, lead + text, llama=vocab_llama, trigger_patterns=patterns
            ), text
    if not spec.forcible:
        return
    forced = build_grammar(spec, TOOLS, tool_choice="required", argument_layout=layout)
    assert forced is not None and forced.forced and not forced.lazy
    validate_grammar(forced.gbnf, vocab=vocab_of(vocab_llama))
    assert grammar_accepts(forced.gbnf, one, llama=vocab_llama), one
    assert grammar_accepts(forced.gbnf, two, llama=vocab_llama) is spec.parallel_calls, two
    single = build_grammar(
        spec, TOOLS, tool_choice="required", parallel_tool_calls=False, argument_layout=layout
    )
    assert single is not None
    assert grammar_accepts(single.gbnf, one, llama=vocab_llama)
    assert not grammar_accepts(single.gbnf, two, llama=vocab_llama)
    named = build_grammar(
        spec,
        TOOLS,
        tool_choice={"type": "function", "function": {"name": "ping"}},
        argument_layout=layout,
    )
    assert named is not None
    assert grammar_accepts(named.gbnf, spec.render_call("ping", {}), llama=vocab_llama)
    assert not grammar_accepts(named.gbnf, one, llama=vocab_llama)
    # a wrong name and a missing required argument are rejected
    assert not grammar_accepts(forced.gbnf, spec.render_call("get_weathr", ARGS), llama=vocab_llama)
    assert not grammar_accepts(
        forced.gbnf, spec.render_call("get_weather", {"city": "x"}), llama=vocab_llama
    )
    assert not grammar_accepts(
        forced.gbnf, spec.render_call("get_weather", {"city": "x", "days": 15}), llama=vocab_llama
    )


@pytest.mark.model
def test_forced_reasoning_block(vocab_llama: Any) -> None:
    spec = HANDMADE["reasoning-hermes"]
    call = spec.render_call("ping", {})
    g = build_grammar(spec, TOOLS, tool_choice="required")
    assert g is not None
    assert grammar_accepts(g.gbnf, call, llama=vocab_llama)
    assert grammar_accepts(
        g.gbnf, "<think>\nplan: <tool maybe\n</think>\n\n" + call, llama=vocab_llama
    )
    opened = build_grammar(spec, TOOLS, tool_choice="required", reasoning_open=True)
    assert opened is not None
    assert grammar_accepts(opened.gbnf, "still thinking </thin</think>\n" + call, llama=vocab_llama)
    assert not grammar_accepts(opened.gbnf, call, llama=vocab_llama)


@pytest.mark.model
def test_lazy_trigger_ignores_calls_inside_reasoning(vocab_llama: Any) -> None:
    spec = HANDMADE["reasoning-hermes"]
    call = spec.render_call("ping", {})
    g = build_grammar(spec, TOOLS)
    assert g is not None and g.trigger_words == []
    pats = g.lazy_patterns()
    # quoted inside reasoning: no trigger there; the real call after </think> is constrained
    assert lazy_grammar_accepts(
        g.gbnf,
        "<think>maybe " + call + " ok</think>\n" + call,
        llama=vocab_llama,
        trigger_patterns=pats,
    )
    assert not lazy_grammar_accepts(
        g.gbnf, "<think>" + call + "</think> plain answer", llama=vocab_llama, trigger_patterns=pats
    )
    opened = build_grammar(spec, TOOLS, reasoning_open=True)
    assert opened is not None
    assert not lazy_grammar_accepts(
        opened.gbnf,
        call + "</think> fine",
        llama=vocab_llama,
        trigger_patterns=opened.lazy_patterns(),
    )


T = Trigger(kind="word", value="<tool_call>")
R = ReasoningMarkers()
PATTERN_CASES = [
    ("plain", T, None, False, "hi <tool_call>{", "<tool_call>{"),
    ("plain-no", T, None, False, "hi <tool_", None),
    ("closed-think", T, R, False, "<think>a <tool_call> b</think>x<tool_call>{", "<tool_call>{"),
    ("inside-think", T, R, False, " <think>a <tool_call> b", None),
    ("no-think", T, R, False, "text <tool_call>", "<tool_call>"),
    ("open-think", T, R, True, "a <tool_call> b", None),
    ("open-think-closed", T, R, True, "a <tool_call></think>\n<tool_call>", "<tool_call>"),
    (
        "anchored",
        Trigger(kind="pattern", value=r'^\s*(\{\s*"name")'),
        R,
        False,
        '<think>x</think>\n {"name"',
        '{"name"',
    ),
    (
        "anchored-late",
        Trigger(kind="pattern", value=r'^\s*(\{\s*"name")'),
        None,
        False,
        'hi {"name"',
        None,
    ),
    (
        "full",
        Trigger(kind="pattern_full", value=r"\[TOOL_CALLS\].*"),
        None,
        False,
        "[TOOL_CALLS]x",
        "[TOOL_CALLS]x",
    ),
]


@pytest.mark.parametrize(
    ("trigger", "reasoning", "opened", "text", "replay"),
    [c[1:] for c in PATTERN_CASES],
    ids=[c[0] for c in PATTERN_CASES],
)
def test_trigger_patterns_python_re(
    trigger: Trigger, reasoning: Any, opened: bool, text: str, replay: str | None
) -> None:
    m = re.fullmatch(trigger_pattern(trigger, reasoning, reasoning_open=opened), text)
    if replay is None:
        assert m is None
    else:
        assert m is not None
        start = next((m.start(i) for i in range(1, m.re.groups + 1) if m.group(i)), m.start())
        assert text[start:] == replay


def test_none_and_no_tools() -> None:
    spec = DialectSpec.builtin("hermes")
    assert build_grammar(spec, TOOLS, tool_choice="none") is None
    assert build_grammar(spec, []) is None


def test_unforcible_dialect_raises() -> None:
    spec = DialectSpec(
        id="t-x", forcible=False, unforcible_reason="calls hide in a header", formats=[CallFormat()]
    )
    with pytest.raises(UnsupportedToolChoiceError, match=r"t-x.*calls hide in a header"):
        build_grammar(spec, TOOLS, tool_choice="required")


@pytest.mark.parametrize("name", ["hermes", "llama-3", "mistral-v11"])
@pytest.mark.parametrize("choice", ["required", "auto"])
def test_spec_without_parallel_calls_allows_one_call(name: str, choice: str) -> None:
    """``spec.parallel_calls=False`` limits the grammar to one call even when the request allows
    several (model-free: checked with the pure-Python GBNF automaton)."""
    from tooldialect.grammar.forced import GbnfAutomaton

    def accepts(gbnf: str, root: str, text: str) -> bool:
        return GbnfAutomaton(gbnf, root).feed(text)

    parallel = DialectSpec.builtin(name)
    if not parallel.parallel_calls:
        parallel = parallel.model_copy(update={"parallel_calls": True})
    single = parallel.model_copy(update={"parallel_calls": False})
    one = parallel.render_call("get_weather", ARGS)
    two = parallel.render_calls([("get_weather", ARGS, None), ("ping", {}, None)])
    assert two.startswith(one.rstrip())
    for spec, both in ((parallel, True), (single, False)):
        g = build_grammar(spec, TOOLS, tool_choice=choice, parallel_tool_calls=True)
        assert g is not None
        assert accepts(g.gbnf, g.root, one), (spec.parallel_calls, one)
        assert accepts(g.gbnf, g.root, two) is both, (spec.parallel_calls, two)
