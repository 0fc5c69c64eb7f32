"""One test per vendored chat template: the template's builtin dialect, checked end to end.

For each of tests/fixtures/templates/*.jinja:

* detection picks the expected builtin (table below);
* a probe call (one argument of every JSON type) round-trips ``render_call`` -> ``parse_output``;
* the tool-call grammar accepts exactly that text, forced and lazy, on llama.cpp's own sampler
  (SmolLM2 vocab, ``@pytest.mark.model``);
* a whole tool conversation rendered through the model's own template contains what
  ``render_call`` writes (modulo whitespace and Python/JSON literal spelling): the alignment check
  between template and spec, as xgrammar does it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tooldialect.dialect.spec import DialectSpec, ElementBody, JsonBody, TaggedBody
from tooldialect.verify import detect_dialect

TEMPLATES = Path(__file__).parent.parent / "fixtures" / "templates"

PROBE_NAME = "probe_tool"
# keys sorted (Gemma 4 prints arguments with dictsort); ASCII so tojson escaping cannot differ
PROBE_ARGS: dict[str, Any] = {
    "a_text": "Hi there",
    "b_int": 42,
    "c_num": 2.5,
    "d_flag": True,
    "e_none": None,
    "f_list": [1, 2],
    "g_obj": {"k": "v"},
}
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": PROBE_NAME,
        "description": "A sentinel tool whose arguments cover every JSON type.",
        "parameters": {
            "type": "object",
            "properties": {
                "a_text": {"type": "string", "description": "a string"},
                "b_int": {"type": "integer", "description": "an integer"},
                "c_num": {"type": "number", "description": "a number"},
                "d_flag": {"type": "boolean", "description": "a boolean"},
                # not "type": "null": Hermes' and Command R+'s json_to_python_type recurse forever
                # on it (a string is "iterable"); anyOf still types element values for the parser
                "e_none": {"anyOf": [{"type": "null"}], "description": "always null"},
                "f_list": {"type": "array", "items": {"type": "integer"}, "description": "a list"},
                "g_obj": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "an object",
                },
            },
            "required": ["a_text", "b_int"],
        },
    },
}


@dataclass(frozen=True)
class Case:
    dialect: str
    """The builtin detection must pick."""
    calls: int = 2
    """Calls in the alignment conversation (1 where the template renders only one)."""
    align_format: int | None = 0
    """Index of the spec format the template's rendering matches; None: no alignment check."""
    skip_align: str = ""
    """Why the alignment check does not apply to this template."""
    kwargs: tuple[tuple[str, str], ...] = ()
    """Extra template variables the template needs."""


CALLS_NOT_RENDERED = "template never renders assistant tool_calls (calls stay in content)"

CASES: dict[str, Case] = {
    "ByteDance-Seed-OSS.jinja": Case("seed-oss"),
    "Cohere2MoE.jinja": Case("command-r7b"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": Case("command-r-plus"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": Case("command-r7b"),
    "GLM-4.6.jinja": Case("glm-4.5"),
    "GigaChat3-10B-A1.8B.jinja": Case("gigachat", calls=1),
    "HuggingFaceTB-SmolLM3-3B.jinja": Case("polyfill-json"),
    "Kimi-K2-Instruct.jinja": Case("kimi-k2"),
    "LFM2-8B-A1B.jinja": Case("lfm2", align_format=None, skip_align=CALLS_NOT_RENDERED),
    "LFM2.5-8B-A1B.jinja": Case("lfm2"),
    "MiniMax-M2.jinja": Case("minimax-m2"),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": Case("mistral-small-3.2"),
    "NVIDIA-Nemotron-Nano-v2.jinja": Case("nemotron-v2"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": Case("hermes"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": Case("hermes"),
    "Qwen-QwQ-32B.jinja": Case("hermes"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": Case("hermes"),
    "Qwen-Qwen3-0.6B.jinja": Case("hermes"),
    "Qwen2.5-Coder-0.5B-Instruct.jinja": Case("hermes"),
    "Qwen3-Coder.jinja": Case("qwen3-coder"),
    "SmolLM2-135M-Instruct.jinja": Case("polyfill-json"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": Case("deepseek-r1"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": Case("deepseek-r1"),
    "deepseek-ai-DeepSeek-V3.1.jinja": Case("deepseek-v3.1"),
    "fireworks-ai-llama-3-firefunction-v2.jinja": Case(
        "firefunction-v2", kwargs=(("functions", "[]"), ("datetime", "2024-07-01"))
    ),
    "gemma4.jinja": Case("gemma4"),
    "google-gemma-2-2b-it.jinja": Case("polyfill-json"),
    "google-gemma-4-31B-it.jinja": Case("gemma4"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": Case(
        "granite-3", align_format=None, skip_align=CALLS_NOT_RENDERED
    ),
    "ibm-granite-granite-4.0.jinja": Case("granite-4"),
    "llama-cpp-deepseek-r1.jinja": Case("deepseek-r1"),
    "llama-cpp-lfm2.jinja": Case("lfm2", align_format=None, skip_align=CALLS_NOT_RENDERED),
    "llama-cpp-rwkv-world.jinja": Case("polyfill-json"),
    "meetkai-functionary-medium-v3.1.jinja": Case("functionary-v3.1"),
    "meetkai-functionary-medium-v3.2.jinja": Case("functionary-v3.2"),
    # the template raises "This model only supports single tool-calls at once!"
    "meta-llama-Llama-3.1-8B-Instruct.jinja": Case("llama-3", calls=1),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": Case("llama-3", calls=1),
    "microsoft-Phi-3.5-mini-instruct.jinja": Case("polyfill-json"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": Case("mistral-v11"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": Case("mistral-nemo"),
    "moonshotai-Kimi-K2.jinja": Case("kimi-k2"),
    # past calls carry the recipient in the header: spec format 2, not harmony's canonical form
    "openai-gpt-oss-120b.jinja": Case("gpt-oss", calls=1, align_format=2),
    "stepfun-ai-Step-3.5-Flash.jinja": Case("qwen3-coder"),
    # past calls carry ", \"id\": ...": spec format 1; the generated turn has none (format 0)
    "unsloth-Apriel-1.5.jinja": Case("apriel", align_format=1),
}

TEMPLATE_FILES = sorted(p.name for p in TEMPLATES.glob("*.jinja"))


def test_table_covers_every_vendored_template() -> None:
    assert sorted(CASES) == TEMPLATE_FILES


def _spec_for(name: str) -> DialectSpec:
    return detect_dialect((TEMPLATES / name).read_text(encoding="utf-8"))


def _probe_calls(spec: DialectSpec, n: int) -> list[tuple[str, dict[str, Any], str]]:
    return [(PROBE_NAME, PROBE_ARGS, spec.new_id(name=PROBE_NAME, index=i)) for i in range(n)]


@pytest.mark.parametrize("name", TEMPLATE_FILES, ids=TEMPLATE_FILES)
def test_detects_expected_builtin(name: str) -> None:
    spec = _spec_for(name)
    assert spec.id == CASES[name].dialect
    assert spec.origin in ("builtin", "polyfill")


@pytest.mark.parametrize("name", TEMPLATE_FILES, ids=TEMPLATE_FILES)
def test_probe_call_round_trips_through_parser(name: str) -> None:
    parse = pytest.importorskip("tooldialect.parse")
    spec = _spec_for(name)
    n = 2 if spec.parallel_calls else 1
    calls = _probe_calls(spec, n)
    text = spec.render_calls(calls)
    out = parse.parse_output(text, spec, tools=[PROBE_TOOL])
    assert [(c.name, c.arguments) for c in out.tool_calls] == [(PROBE_NAME, PROBE_ARGS)] * n
    assert out.content is None
    if _writes_native_id(spec):
        # native ids come back as written (Kimi functions.NAME:IDX, Mistral 9 characters, Cohere)
        assert [c.id for c in out.tool_calls] == [c[2] for c in calls]


def _writes_native_id(spec: DialectSpec) -> bool:
    body = spec.primary.body
    if isinstance(body, JsonBody):
        return body.id_key is not None
    if isinstance(body, (TaggedBody, ElementBody)):
        return "{id}" in body.head or spec.id_template is not None
    return spec.id_template is not None


def _normalise(text: str) -> str:
    """Whitespace dropped; Python literal spelling (True, None, 'x') read as JSON's."""
    text = re.sub(r"\s+", "", text).replace("'", '"')
    for py, js in (("True", "true"), ("False", "false"), ("None", "null")):
        text = re.sub(rf"\b{py}\b", js, text)
    return text


@pytest.mark.parametrize("name", TEMPLATE_FILES, ids=TEMPLATE_FILES)
def test_template_renders_what_render_call_writes(name: str) -> None:
    case = CASES[name]
    if case.align_format is None:
        pytest.skip(case.skip_align)
    template_mod = pytest.importorskip("tooldialect.prompt.template")
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    spec = detect_dialect(source)
    calls = _probe_calls(spec, case.calls)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Call the probe."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": fn, "arguments": args}}
                for fn, args, cid in calls
            ],
        },
        *(
            {"role": "tool", "tool_call_id": cid, "name": fn, "content": "probe result"}
            for fn, _, cid in calls
        ),
    ]
    tmpl = template_mod.ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    if spec.polyfill is not None:
        # no tool support: the polyfill writes the calls into the assistant's content
        prompt = pytest.importorskip("tooldialect.frontend.render")
        rendered = prompt.render_prompt(
            tmpl, spec, messages, tools=[PROBE_TOOL], **dict(case.kwargs)
        )
    else:
        rendered = tmpl.render(messages, tools=[PROBE_TOOL], **dict(case.kwargs))
    fmt = spec.formats[case.align_format]
    expected = spec.model_copy(update={"formats": [fmt]}).render_calls(calls)
    assert _normalise(expected) in _normalise(rendered), (
        f"{name}: the template does not render {expected!r}; it rendered:\n{rendered}"
    )


# --- grammar checks on llama.cpp's sampler ------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("name", TEMPLATE_FILES, ids=TEMPLATE_FILES)
def test_grammar_accepts_render_call(name: str, smollm2_vocab: Any) -> None:
    grammar = pytest.importorskip("tooldialect.grammar")
    check = pytest.importorskip("grammar_check")
    spec = _spec_for(name)
    text = spec.render_calls(_probe_calls(spec, 2 if spec.parallel_calls else 1))

    forced = grammar.build_grammar(spec, [PROBE_TOOL], tool_choice="required")
    assert forced is not None and forced.forced
    assert check.grammar_accepts(forced.gbnf, text, root=forced.root, llama=smollm2_vocab)
    # a grammar that accepts anything would pass the line above: it must refuse a wrong name
    wrong = text.replace(PROBE_NAME, "other_tool", 1)
    assert not check.grammar_accepts(forced.gbnf, wrong, root=forced.root, llama=smollm2_vocab)

    lazy = grammar.build_grammar(spec, [PROBE_TOOL], tool_choice="auto")
    assert lazy is not None and lazy.lazy
    assert check.lazy_grammar_accepts(
        lazy.gbnf,
        text,
        root=lazy.root,
        llama=smollm2_vocab,
        trigger_patterns=lazy.lazy_patterns(),
    )
