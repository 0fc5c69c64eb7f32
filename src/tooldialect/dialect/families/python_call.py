"""Families whose calls are Python-style (``body.kind == "python"``): pythonic lists (Llama 3.2/4,
ToolACE), LFM2, Gemma 4's ``call:NAME{...}``, and the emulated Gemma 3 ``tool_code`` polyfill.

Docstrings name the template each marker was copied from (tests/fixtures/templates/).
"""

from __future__ import annotations

from ..registry import Signature, builtin
from ..spec import (
    CallFormat,
    DialectSpec,
    JsonBody,
    Polyfill,
    PythonBody,
    ReasoningMarkers,
    Trigger,
)
from .common import THINK

_LIST_SEPARATOR = ", "

# A pythonic call list at the start of the reply: "[" then an identifier and "(".
PYTHONIC_TRIGGER = Trigger(kind="pattern", value=r"^\s*(\[{name}\()")


@builtin(signatures=[Signature(("[func_name1(",))], priority=10)
def pythonic() -> DialectSpec:
    """Pythonic call lists ``[f(a=1, b="x"), g()]`` at the start of the reply (Llama 3.2 pythonic
    variant, Llama 4, ToolACE). No template in the corpus: the signature is the example these
    templates show the model,
    ``[func_name1(params_name1=params_value1, ...), func_name2(params)]``."""
    return DialectSpec(
        id="pythonic",
        family="Pythonic (Llama 3.2 / 4 pythonic, ToolACE)",
        origin="builtin",
        description="[f(a=1), g()] at the start of the reply",
        formats=[
            CallFormat(
                section_open="[",
                section_close="]",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                at_start_only=True,
                triggers=[PYTHONIC_TRIGGER],
            )
        ],
    )


@builtin(signatures=[Signature(("<|python_start|>",))], priority=10)
def llama_4_pythonic() -> DialectSpec:
    """Llama 4: the pythonic list wrapped in ``<|python_start|>...<|python_end|>`` (no template in
    the corpus); a bare list at the start is the second format. Models often leave out
    ``<|python_end|>`` (optional) or the brackets (a parse-only third format)."""
    return DialectSpec(
        id="llama-4-pythonic",
        family="Meta Llama 4",
        origin="builtin",
        description="<|python_start|>[f(a=1), g()]<|python_end|>",
        formats=[
            CallFormat(
                section_open="<|python_start|>[",
                section_close="]<|python_end|>",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                optional_markers=["<|python_end|>"],
            ),
            CallFormat(
                section_open="[",
                section_close="]",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                at_start_only=True,
                triggers=[PYTHONIC_TRIGGER],
            ),
            CallFormat(
                section_open="<|python_start|>",
                section_close="<|python_end|>",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                optional_markers=["<|python_end|>"],
                parse_only=True,
            ),
        ],
        strip=["<|eom|>", "<|eot|>"],
        stop=["<|eom|>"],
    )


@builtin(
    signatures=[Signature(("<|tool_call_start|>",)), Signature(("<|tool_list_start|>",))],
    priority=10,
)
def lfm2() -> DialectSpec:
    """Liquid LFM2 / LFM2.5: LFM2.5-8B-A1B.jinja writes ``"<|tool_call_start|>["`` + calls
    ``name(k=v, ...)`` joined by ``", "`` + ``"]<|tool_call_end|>"`` (LFM2-8B-A1B.jinja and
    llama-cpp-lfm2.jinja only list tools between ``<|tool_list_start|>`` and ``<|tool_list_end|>``
    and keep calls in the content). LFM2.5 reasons in ``<think>``. Read too (parse-only): a JSON
    list ``[{"name", "arguments"}]`` in the same markers (what LFM2 writes when its system prompt
    asks for JSON, as llama.cpp's LFM2 support does), calls without the brackets, and a missing
    ``<|tool_call_end|>``."""
    return DialectSpec(
        id="lfm2",
        family="Liquid LFM2 / LFM2.5",
        origin="builtin",
        description='<|tool_call_start|>[f(a="x")]<|tool_call_end|>',
        formats=[
            CallFormat(
                section_open="<|tool_call_start|>[",
                section_close="]<|tool_call_end|>",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                optional_markers=["<|tool_call_end|>"],
            ),
            CallFormat(
                section_open="<|tool_call_start|>[",
                section_close="]<|tool_call_end|>",
                separator=_LIST_SEPARATOR,
                body=JsonBody(),
                optional_markers=["<|tool_call_end|>"],
                parse_only=True,
            ),
            CallFormat(
                section_open="<|tool_call_start|>",
                section_close="<|tool_call_end|>",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                optional_markers=["<|tool_call_end|>"],
                parse_only=True,
            ),
        ],
        reasoning=THINK,
        strip=["<|im_end|>"],
    )


@builtin(signatures=[Signature(("<|tool_call>call:",))], priority=10)
def gemma4() -> DialectSpec:
    """Gemma 4: google-gemma-4-31B-it.jinja and gemma4.jinja write, per call,
    ``'<|tool_call>call:' + name + '{'``, ``key:value`` pairs joined by ``,`` (keys sorted, strings
    in ``<|"|>``), then ``'}<tool_call|>'``; a turn with calls ends in ``<|tool_response>``.
    Reasoning in ``'<|channel>thought\\n'`` ... ``'<channel|>'``. Other channels are content
    wrappers (the template strips every ``<|channel>...<channel|>`` from history): their headers,
    a stray ``<channel|>`` and the end-of-turn ``<turn|>`` are stripped."""
    return DialectSpec(
        id="gemma4",
        family="Google Gemma 4",
        origin="builtin",
        description='<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>',
        formats=[
            CallFormat(
                call_open="<|tool_call>",
                call_close="<tool_call|>",
                body=PythonBody(
                    call_open="call:{name}{{",
                    call_close="}",
                    assign=":",
                    arg_separator=",",
                    value_codec="bare-key",
                ),
            )
        ],
        reasoning=ReasoningMarkers(open="<|channel>thought", close="<channel|>"),
        strip=[
            "<|channel>final",
            "<|channel>answer",
            "<|channel>response",
            "<channel|>",
            "<turn|>",
        ],
        stop=["<|tool_response>"],
    )


GEMMA3_GUIDE = (
    "You have access to functions. Their signatures, as JSON Schema:\n{tools}\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of\n{example}\n"
    "and write nothing after it. The result comes back in a ```tool_output block. "
    "Call a function only when it is needed; otherwise answer normally."
)


@builtin(
    signatures=[
        Signature(("<start_of_turn>", "<start_of_image>"), none_of=("tools",)),
        Signature(("<start_of_turn>", "first_user_prefix"), none_of=("tools",)),
    ],
    priority=1,
)
def gemma3_tool_code() -> DialectSpec:
    """Gemma 3 (emulated; its templates have no tool support and reject ``role: tool``): Google's
    function-calling guide for Gemma 3, calls as Python in a ```` ```tool_code ```` fence, results
    echoed back as a user turn in ```` ```tool_output ````. Recognised by the Gemma 3 template's
    ``<start_of_turn>`` plus its image/system-prefix handling, which Gemma 2's lacks."""
    return DialectSpec(
        id="gemma3-tool-code",
        family="Google Gemma 3 (emulated tools)",
        origin="polyfill",
        description="```tool_code\\nf(a=1)\\n``` fences, results as ```tool_output user turns",
        formats=[
            CallFormat(
                section_open="```tool_code\n",
                section_close="\n```",
                separator="\n",
                body=PythonBody(),
            ),
            # the pythonic list some Gemma 3 fine-tunes write inside the fence (parse-only)
            CallFormat(
                section_open="```tool_code\n[",
                section_close="]\n```",
                separator=_LIST_SEPARATOR,
                body=PythonBody(),
                parse_only=True,
            ),
        ],
        polyfill=Polyfill(
            guide=GEMMA3_GUIDE,
            result_role="user",
            result_template="```tool_output\n{content}\n```",
        ),
    )
