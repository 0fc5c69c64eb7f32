"""Families whose call body is one JSON object (``body.kind == "json"``), in some envelope.

Each function's docstring names the template its markers were copied from
(tests/fixtures/templates/, from llama.cpp's models/templates corpus); "no template in the
corpus" means the markers come from /work/shared/docs/dialects.md and the family's published
format, unverified against a template.
"""

from __future__ import annotations

from ..registry import Signature, builtin
from ..spec import CallFormat, DialectSpec, JsonBody, PythonBody, ReasoningMarkers, Trigger
from .common import THINK, hermes_formats

_ARRAY_SEPARATOR = ", "


@builtin(signatures=[Signature(("<|start_of_role|>", "<tool_call>"))], priority=10)
def granite_4() -> DialectSpec:
    """IBM Granite 4.0: hermes layout. ibm-granite-granite-4.0.jinja writes
    ``'<tool_call>\\n{"name": "'`` ... ``'}\\n</tool_call>'`` with ``'\\n'`` between calls."""
    return DialectSpec(
        id="granite-4",
        family="IBM Granite 4",
        origin="builtin",
        description="<tool_call>\\n{json}\\n</tool_call> per call, as hermes",
        formats=hermes_formats(),
    )


@builtin
def mimo() -> DialectSpec:
    """Xiaomi MiMo: hermes layout with ``<think>`` reasoning (no template in the corpus; detection
    of a MiMo template yields ``hermes``, which writes the same text)."""
    return DialectSpec(
        id="mimo",
        family="Xiaomi MiMo",
        origin="builtin",
        description="<tool_call>\\n{json}\\n</tool_call> per call, <think> reasoning",
        formats=hermes_formats(),
        reasoning=THINK,
    )


@builtin(signatures=[Signature(("<TOOLCALL>[",))], priority=10)
def nemotron_v2() -> DialectSpec:
    """NVIDIA Nemotron Nano v2: NVIDIA-Nemotron-Nano-v2.jinja writes ``'<TOOLCALL>['``, calls
    joined by ``', '``, then ``']</TOOLCALL>'``; the generation prompt opens ``<think>\\n``."""
    return DialectSpec(
        id="nemotron-v2",
        family="NVIDIA Nemotron Nano v2",
        origin="builtin",
        description="<TOOLCALL>[{json}, ...]</TOOLCALL>",
        formats=[
            CallFormat(
                section_open="<TOOLCALL>[", section_close="]</TOOLCALL>", separator=_ARRAY_SEPARATOR
            )
        ],
        reasoning=THINK,
    )


@builtin(signatures=[Signature(("<tool_calls>[", "]</tool_calls>"))], priority=10)
def apriel() -> DialectSpec:
    """ServiceNow Apriel 1.5: unsloth-Apriel-1.5.jinja writes ``'\\n<tool_calls>['``, calls
    joined by ``', '``, then ``']</tool_calls>'``. Past turns also carry ``, "id": "..."``
    (second format); the turn being generated does not. Final answers sit in ``[BEGIN FINAL
    RESPONSE]`` markers."""

    def envelope(body: JsonBody) -> CallFormat:
        return CallFormat(
            section_open="<tool_calls>[",
            section_close="]</tool_calls>",
            separator=_ARRAY_SEPARATOR,
            body=body,
        )

    return DialectSpec(
        id="apriel",
        family="ServiceNow Apriel 1.5",
        origin="builtin",
        description="<tool_calls>[{json}, ...]</tool_calls>",
        formats=[envelope(JsonBody()), envelope(JsonBody(id_key="id"))],
        reasoning=ReasoningMarkers(
            open="<thinking>",
            close="</thinking>",
            # Apriel 1.5 Thinker reasons after this phrase (some template versions put it in the
            # generation prompt) until the final-response marker
            alt_open=["Here are my reasoning steps:"],
            alt_close=["[BEGIN FINAL RESPONSE]"],
        ),
        strip=["[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]", "<|end|>"],
    )


@builtin(signatures=[Signature(("<|start_of_role|>", "<|tool_call|>"))], priority=10)
def granite_3() -> DialectSpec:
    """IBM Granite 3.x: ibm-granite-granite-3.3-2B-Instruct.jinja tells the model to "respond only
    with <|tool_call|> followed by a JSON list" (the template never renders past calls). Thinking
    mode writes ``<think>...</think>`` then ``<response>...</response>``."""
    return DialectSpec(
        id="granite-3",
        family="IBM Granite 3.x",
        origin="builtin",
        description="<|tool_call|>[{json}, ...]",
        formats=[
            CallFormat(
                section_open="<|tool_call|>[", section_close="]", separator=_ARRAY_SEPARATOR
            ),
            # Granite 3.0 checkpoints open the list with <tool_call> (vLLM's parser reads both)
            CallFormat(
                section_open="<tool_call>[",
                section_close="]",
                separator=_ARRAY_SEPARATOR,
                parse_only=True,
            ),
        ],
        reasoning=THINK,
        strip=["<response>", "</response>"],
    )


@builtin(signatures=[Signature((" functools[",))], priority=10)
def firefunction_v2() -> DialectSpec:
    """FireFunction v2: fireworks-ai-llama-3-firefunction-v2.jinja appends ``' functools['`` +
    calls joined by ``', '`` + ``']'`` to the assistant content."""
    return DialectSpec(
        id="firefunction-v2",
        family="Fireworks FireFunction v2",
        origin="builtin",
        description=" functools[{json}, ...]",
        formats=[
            CallFormat(section_open=" functools[", section_close="]", separator=_ARRAY_SEPARATOR)
        ],
    )


@builtin(signatures=[Signature(("<|tool|>", "<|/tool|>"))], priority=5)
def phi_4() -> DialectSpec:
    """Phi-4-mini: ``functools[{json}, ...]`` (no template in the corpus; Phi-4-mini's template
    lists tools between ``<|tool|>`` and ``<|/tool|>``, which is its signature)."""
    return DialectSpec(
        id="phi-4",
        family="Microsoft Phi-4-mini",
        origin="builtin",
        description="functools[{json}, ...]",
        formats=[
            CallFormat(section_open="functools[", section_close="]", separator=_ARRAY_SEPARATOR)
        ],
    )


@builtin(signatures=[Signature(("function call", "<|role_sep|>"))], priority=10)
def gigachat() -> DialectSpec:
    """GigaChat 3: GigaChat3-10B-A1.8B.jinja renders the assistant turn, then a ``function call``
    role turn: ``'<|message_sep|>\\n\\n'`` + ``'function call' + '<|role_sep|>\\n'`` + the JSON.
    Only
    ``tool_calls[0]`` is rendered, so one call per reply. ``<|function_call|>{json}`` (GigaChat
    3.1) is the second format. Models vary the whitespace between ``<|message_sep|>`` and the
    ``function call`` role, or drop the separator: the role header alone is a third (parse-only)
    format."""
    return DialectSpec(
        id="gigachat",
        family="Sber GigaChat 3",
        origin="builtin",
        description="<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{json}",
        formats=[
            CallFormat(call_open="<|message_sep|>\n\nfunction call<|role_sep|>\n"),
            CallFormat(call_open="<|function_call|>"),
            CallFormat(call_open="function call<|role_sep|>\n", parse_only=True),
        ],
        parallel_calls=False,
    )


@builtin(signatures=[Signature(("<|START_ACTION|>",))], priority=10)
def command_r7b() -> DialectSpec:
    """Command R7B / Cohere2 MoE: CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja and
    Cohere2MoE.jinja write ``<|START_ACTION|>[`` then ``{"tool_call_id": "0", "tool_name": ...,
    "parameters": {...}}`` joined by ``,`` then ``]<|END_ACTION|>``; ids are the running call index.
    Reasoning in ``<|START_THINKING|>...<|END_THINKING|>``, prose in ``<|START_RESPONSE|>...``."""
    return DialectSpec(
        id="command-r7b",
        family="Cohere Command R7B / Command A",
        origin="builtin",
        description='<|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]<|END_ACTION|>',
        formats=[
            CallFormat(
                section_open="<|START_ACTION|>[\n    ",
                section_close="\n]<|END_ACTION|>",
                separator=",\n    ",
                body=JsonBody(
                    name_key="tool_name",
                    arguments_key="parameters",
                    id_key="tool_call_id",
                    id_first=True,
                ),
            )
        ],
        reasoning=ReasoningMarkers(open="<|START_THINKING|>", close="<|END_THINKING|>"),
        # content wrappers: R7B writes <|START_RESPONSE|>, Command A / Cohere2 <|START_TEXT|>
        strip=[
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
            "<|START_TEXT|>",
            "<|END_TEXT|>",
            "<|END_OF_TURN_TOKEN|>",
        ],
        id_format="numeric",
    )


@builtin(
    signatures=[Signature(("<|CHATBOT_TOKEN|>", "Action:"), none_of=("<|START_ACTION|>",))],
    priority=5,
)
def command_r_plus() -> DialectSpec:
    """Command R+ (tool_use): CohereForAI-c4ai-command-r-plus-tool_use.jinja writes
    ``'\\nAction:\\n```json\\n[\\n'``, indented ``{"tool_name": ..., "parameters": ...}`` objects
    joined by ``',\\n'``, then ``"\\n]```\\n"``."""
    return DialectSpec(
        id="command-r-plus",
        family="Cohere Command R+",
        origin="builtin",
        description='Action:\\n```json\\n[{"tool_name", "parameters"}, ...]\\n```',
        formats=[
            CallFormat(
                section_open="Action:\n```json\n[\n",
                section_close="\n]```",
                separator=",\n",
                body=JsonBody(name_key="tool_name", arguments_key="parameters"),
            )
        ],
    )


@builtin(signatures=[Signature(("<|tools_prefix|>",))], priority=10)
def apertus() -> DialectSpec:
    """Swiss AI Apertus: ``<|tools_prefix|>[{"NAME": {args}}]<|tools_suffix|>``, the name as the
    key (no template in the corpus). Reasoning between ``<|inner_prefix|>`` and
    ``<|inner_suffix|>``."""
    return DialectSpec(
        id="apertus",
        family="Swiss AI Apertus",
        origin="builtin",
        description='<|tools_prefix|>[{"NAME": {...}}, ...]<|tools_suffix|>',
        formats=[
            CallFormat(
                section_open="<|tools_prefix|>[",
                section_close="]<|tools_suffix|>",
                separator=_ARRAY_SEPARATOR,
                body=JsonBody(name_key=None),
            )
        ],
        reasoning=ReasoningMarkers(open="<|inner_prefix|>", close="<|inner_suffix|>"),
    )


# llama.cpp's trigger {\s*("type"\s*:\s*"function"\s*,\s*)?"name"\s*:\s*", narrowed to what
# our grammar accepts: no "type" key and bounded whitespace (the matched text is replayed into
# the grammar, and a misfit aborts the process); anchored at the start of the reply.
LLAMA3_TRIGGER = Trigger(
    kind="pattern",
    value=r'^\s*(\{[ \t]{0,4}(?:\n[ \t]{0,8})?"name"[ \t]{0,4}:[ \t]{0,4}"{name}")',
)


@builtin(signatures=[Signature(("<|start_header_id|>", '"parameters": '))], priority=10)
def llama_3() -> DialectSpec:
    """Llama 3.1 / 3.2 / 3.3 JSON tool calls: meta-llama-Llama-3.1-8B-Instruct.jinja and
    meta-llama-Llama-3.2-3B-Instruct.jinja write ``'{"name": "'`` + name + ``'", '`` +
    ``'"parameters": '`` + args + ``"}"`` with no marker. ``<|python_tag|>`` may precede the JSON
    (second format: ``<|python_tag|>`` once, then calls joined by ``;``); ``<|eom_id|>`` ends an
    ipython turn. Models also write ``arguments`` for ``parameters``, and ``;`` with any
    whitespace or a bare newline between calls."""
    body = JsonBody(arguments_key="parameters", arguments_aliases=["arguments"])
    return DialectSpec(
        id="llama-3",
        family="Meta Llama 3.x",
        origin="builtin",
        description='{"name": ..., "parameters": {...}} at the start of the reply',
        formats=[
            CallFormat(
                body=body,
                separator="; ",
                at_start_only=True,
                triggers=[LLAMA3_TRIGGER],
                alt_separators=[""],
            ),
            CallFormat(
                body=body, section_open="<|python_tag|>", separator="; ", alt_separators=[""]
            ),
            # Llama 3.1 built-in tools: <|python_tag|>brave_search.call(query="...")
            CallFormat(
                section_open="<|python_tag|>",
                body=PythonBody(call_open="{name}.call("),
                parse_only=True,
            ),
        ],
        strip=["<|eom_id|>", "<|eot_id|>"],
        stop=["<|eom_id|>"],
    )


@builtin(signatures=[Signature(("[TOOL_CALLS][",), none_of=("[ARGS]",))], priority=10)
def mistral_nemo() -> DialectSpec:
    """Mistral Nemo (pre-v11 tokenizer): mistralai-Mistral-Nemo-Instruct-2407.jinja writes
    ``"[TOOL_CALLS]["``, each call as ``{"name": ..., "arguments": ...`` + ``', "id": "'`` + id +
    ``'"}'``, joined by ``", "``, then ``"]"``. The template rejects ids that are not 9
    characters."""
    return DialectSpec(
        id="mistral-nemo",
        family="Mistral Nemo",
        origin="builtin",
        description='[TOOL_CALLS][{"name", "arguments", "id"}, ...]',
        formats=[
            CallFormat(
                section_open="[TOOL_CALLS][",
                section_close="]",
                separator=_ARRAY_SEPARATOR,
                body=JsonBody(id_key="id"),
            ),
            # one call written as a bare object, without the list (parse-only)
            CallFormat(call_open="[TOOL_CALLS]", body=JsonBody(id_key="id"), parse_only=True),
        ],
        id_format="alnum9",
    )
