"""Families whose arguments are one element each, values as raw text typed by the tool's schema
(``body.kind == "element"``): Qwen3-Coder, Seed-OSS, GLM 4.5/4.7, MiniMax M2, DeepSeek V3.2 DSML.

Docstrings name the template each marker was copied from (tests/fixtures/templates/).
"""

from __future__ import annotations

from ..registry import Signature, builtin
from ..spec import CallFormat, DialectSpec, ElementBody, ReasoningMarkers
from .common import THINK


@builtin(signatures=[Signature(("<tool_call>", "<function=", "<parameter="))], priority=10)
def qwen3_coder() -> DialectSpec:
    """Qwen3-Coder / Qwen3.5 / Nemotron 3 Nano / Step 3.5: Qwen3-Coder.jinja writes
    ``'\\n<tool_call>\\n<function=' + name + '>\\n'``, per argument ``'<parameter=' + k + '>\\n'`` +
    value + ``'\\n</parameter>\\n'``, then ``'</function>\\n</tool_call>'``
    (stepfun-ai-Step-3.5-Flash.jinja: the same without the newline between calls)."""
    return DialectSpec(
        id="qwen3-coder",
        family="Qwen3-Coder / Qwen3.5 / Step 3.5 / Nemotron 3 Nano",
        origin="builtin",
        description="<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>",
        formats=[
            CallFormat(
                call_open="<tool_call>\n",
                call_close="</tool_call>",
                separator="\n",
                body=ElementBody(
                    head="<function={name}>\n",
                    param="<parameter={key}>\n{value}\n</parameter>\n",
                    tail="</function>\n",
                    trim_value=True,
                ),
            )
        ],
        reasoning=THINK,
    )


@builtin(signatures=[Signature(("<seed:tool_call>",))], priority=10)
def seed_oss() -> DialectSpec:
    """ByteDance Seed-OSS: ByteDance-Seed-OSS.jinja writes ``"\\n" + '<seed:tool_call>' +
    "\\n<function=" + name + ">\\n"``, per argument ``"<parameter=" + k + ">"`` + value +
    ``"</parameter>\\n"``, then ``"</function>\\n" + '</seed:tool_call>'``. Reasoning in
    ``<seed:think>...</seed:think>``."""
    return DialectSpec(
        id="seed-oss",
        family="ByteDance Seed-OSS",
        origin="builtin",
        description="<seed:tool_call>\\n<function=NAME>\\n<parameter=K>V</parameter>\\n</function>\\n</seed:tool_call>",
        formats=[
            CallFormat(
                call_open="<seed:tool_call>\n",
                call_close="</seed:tool_call>",
                separator="\n",
                body=ElementBody(
                    head="<function={name}>\n",
                    param="<parameter={key}>{value}</parameter>\n",
                    tail="</function>\n",
                    trim_value=False,
                ),
            )
        ],
        reasoning=ReasoningMarkers(open="<seed:think>", close="</seed:think>"),
    )


@builtin(signatures=[Signature(("<arg_key>",))], priority=10)
def glm_4_5() -> DialectSpec:
    """GLM 4.5 / 4.6: GLM-4.6.jinja writes ``'\\n<tool_call>' + name`` then (trim_blocks) a newline,
    per argument ``<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n``, then ``</tool_call>``."""
    return DialectSpec(
        id="glm-4.5",
        family="Zhipu GLM 4.5 / 4.6",
        origin="builtin",
        description="<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>",
        formats=[
            CallFormat(
                call_open="<tool_call>",
                call_close="</tool_call>",
                separator="\n",
                body=ElementBody(
                    head="{name}\n",
                    param="<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n",
                    tail="",
                    trim_value=False,
                ),
            )
        ],
        reasoning=THINK,
    )


@builtin(signatures=[Signature(("</arg_key><arg_value>",))], priority=20)
def glm_4_7() -> DialectSpec:
    """GLM 4.7: GLM 4.5's elements with no newlines,
    ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`` (no template in the
    corpus; its signature, ``</arg_key><arg_value>`` adjacent, is unverified)."""
    return DialectSpec(
        id="glm-4.7",
        family="Zhipu GLM 4.7",
        origin="builtin",
        description="<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>",
        formats=[
            CallFormat(
                call_open="<tool_call>",
                call_close="</tool_call>",
                body=ElementBody(
                    head="{name}",
                    param="<arg_key>{key}</arg_key><arg_value>{value}</arg_value>",
                    tail="",
                    trim_value=False,
                ),
            )
        ],
        reasoning=THINK,
    )


@builtin(signatures=[Signature(("<minimax:tool_call>",))], priority=10)
def minimax_m2() -> DialectSpec:
    """MiniMax M2: MiniMax-M2.jinja writes ``'\\n' ~ '<minimax:tool_call>' ~ '\\n'``, per call
    ``'<invoke name="' + name + '">'`` + newline, per argument ``'<parameter name="' + k + '">'`` +
    value + ``'</parameter>'`` + newline, ``'</invoke>' ~ '\\n'``, then ``'</minimax:tool_call>'``.
    The generation prompt ends in ``<think>\\n`` (reasoning forced open)."""
    return DialectSpec(
        id="minimax-m2",
        family="MiniMax M2",
        origin="builtin",
        description='<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="K">V...',
        formats=[
            CallFormat(
                section_open="<minimax:tool_call>\n",
                section_close="</minimax:tool_call>",
                body=ElementBody(
                    head='<invoke name="{name}">\n',
                    param='<parameter name="{key}">{value}</parameter>\n',
                    tail="</invoke>\n",
                    trim_value=False,
                ),
            )
        ],
        reasoning=THINK,
    )


_DSML = "｜DSML｜"  # full-width bars (U+FF5C), as in DeepSeek's encoding_dsv32.py


@builtin(signatures=[Signature((_DSML,))], priority=10)
def deepseek_v3_2() -> DialectSpec:
    """DeepSeek V3.2 DSML: ``<｜DSML｜function_calls>``, per call ``<｜DSML｜invoke
    name="NAME">``, per argument ``<｜DSML｜parameter name="K"
    string="true|false">V</｜DSML｜parameter>`` (``false``: V is JSON), ``</｜DSML｜invoke>``,
    then ``</｜DSML｜function_calls>``, one element per line (no template in the corpus; markers
    from dialects.md and DeepSeek's encoder)."""
    return DialectSpec(
        id="deepseek-v3.2",
        family="DeepSeek V3.2",
        origin="builtin",
        description='<｜DSML｜function_calls><｜DSML｜invoke name="NAME"><｜DSML｜parameter ...',
        formats=[
            CallFormat(
                section_open=f"<{_DSML}function_calls>\n",
                section_close=f"</{_DSML}function_calls>",
                body=ElementBody(
                    head=f'<{_DSML}invoke name="{{name}}">\n',
                    param=(
                        f'<{_DSML}parameter name="{{key}}" string="{{is_string}}">'
                        f"{{value}}</{_DSML}parameter>\n"
                    ),
                    tail=f"</{_DSML}invoke>\n",
                    trim_value=False,
                ),
            )
        ],
        reasoning=THINK,
    )
