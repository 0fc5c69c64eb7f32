"""Families whose call body is a head naming the function, then JSON arguments
(``body.kind == "tagged"``): Kimi K2, DeepSeek V3.1 / R1, Mistral v11, Functionary, Solar Open
and gpt-oss (harmony).

Docstrings name the template each marker was copied from (tests/fixtures/templates/).
"""

from __future__ import annotations

from ..registry import Signature, builtin
from ..spec import (
    CallFormat,
    DialectSpec,
    JsonBody,
    MessageHeaders,
    ReasoningMarkers,
    TaggedBody,
    Trigger,
)
from .common import THINK


@builtin(signatures=[Signature(("<|tool_calls_section_begin|>",))], priority=10)
def kimi_k2() -> DialectSpec:
    """Kimi K2: Kimi-K2-Instruct.jinja and moonshotai-Kimi-K2.jinja write
    ``<|tool_calls_section_begin|>``, per call ``<|tool_call_begin|>`` + ``functions.NAME:IDX`` +
    ``<|tool_call_argument_begin|>`` + JSON + ``<|tool_call_end|>``, then
    ``<|tool_calls_section_end|>``. The id ``functions.NAME:IDX`` is the call id and round-trips.
    Models also write the id without ``functions.`` (optional; the parsed id is still the
    template's ``functions.NAME:IDX``, which is what both Kimi templates render for a past call)
    and calls without the section markers (parse-only)."""
    kimi_body = TaggedBody(head="functions.{name}:{index}<|tool_call_argument_begin|>")
    return DialectSpec(
        id="kimi-k2",
        family="Moonshot Kimi K2",
        origin="builtin",
        description="<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}...",
        formats=[
            CallFormat(
                section_open="<|tool_calls_section_begin|>",
                section_close="<|tool_calls_section_end|>",
                call_open="<|tool_call_begin|>",
                call_close="<|tool_call_end|>",
                body=kimi_body,
                optional_markers=["functions."],
            ),
            CallFormat(
                call_open="<|tool_call_begin|>",
                call_close="<|tool_call_end|>",
                body=kimi_body,
                optional_markers=["functions."],
                parse_only=True,
            ),
            # vLLM's Kimi parser also reads the singular section markers some checkpoints write
            CallFormat(
                section_open="<|tool_call_section_begin|>",
                section_close="<|tool_call_section_end|>",
                call_open="<|tool_call_begin|>",
                call_close="<|tool_call_end|>",
                body=kimi_body,
                optional_markers=["functions."],
                parse_only=True,
            ),
        ],
        reasoning=THINK,
        id_template="functions.{name}:{index}",
    )


# DeepSeek's markers use full-width bars (U+FF5C) and U+2581 for spaces.
DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
DS_CALLS_END = "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN = "<｜tool▁call▁begin｜>"
DS_CALL_END = "<｜tool▁call▁end｜>"
# How DeepSeek models really open the section (llama.cpp's DeepSeek parsers accept the same)
DS_CALLS_BEGIN_VARIANTS = (
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
)


# The two DeepSeek call bodies: V3.1's ``NAME<｜tool▁sep｜>{json}`` and V3/R1's
# ``function<｜tool▁sep｜>NAME`` + a fenced JSON block. Each family's models also write the
# other's (V3.1 fine-tunes of V3, R1 distills trained on V3 data).
DS_V31_BODY = TaggedBody(head="{name}<｜tool▁sep｜>")
DS_R1_BODY = TaggedBody(
    head="function<｜tool▁sep｜>{name}", args_open="\n```json\n", args_close="\n```"
)


def _deepseek_formats(canonical: CallFormat, *, other_body: TaggedBody) -> list[CallFormat]:
    """``canonical`` with ``<｜tool▁call▁begin｜>`` optional, then parse-only copies opened by
    the misspelt section markers DeepSeek models write, then parse-only copies of all of these
    with the other DeepSeek call body."""
    fmt = canonical.model_copy(update={"optional_markers": [DS_CALL_BEGIN]})
    variants = [
        fmt.model_copy(update={"section_open": v, "parse_only": True})
        for v in DS_CALLS_BEGIN_VARIANTS
    ]
    other = [
        f.model_copy(update={"body": other_body, "parse_only": True}) for f in (fmt, *variants)
    ]
    return [fmt, *variants, *other]


@builtin(signatures=[Signature((DS_CALLS_BEGIN,))], priority=5)
def deepseek_v3_1() -> DialectSpec:
    """DeepSeek V3.1: deepseek-ai-DeepSeek-V3.1.jinja writes ``<｜tool▁calls▁begin｜>``, per
    call ``<｜tool▁call▁begin｜>`` + name + ``<｜tool▁sep｜>`` + JSON +
    ``<｜tool▁call▁end｜>`` (no separator), then ``<｜tool▁calls▁end｜>``. Full-width ``｜``
    and ``▁``. Thinking may be forced open."""
    return DialectSpec(
        id="deepseek-v3.1",
        family="DeepSeek V3.1",
        origin="builtin",
        description="<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>...",
        formats=_deepseek_formats(
            CallFormat(
                section_open=DS_CALLS_BEGIN,
                section_close=DS_CALLS_END,
                call_open=DS_CALL_BEGIN,
                call_close=DS_CALL_END,
                body=DS_V31_BODY,
            ),
            other_body=DS_R1_BODY,
        ),
        reasoning=THINK,
    )


@builtin(signatures=[Signature((DS_CALLS_BEGIN, "```json"))], priority=10)
def deepseek_r1() -> DialectSpec:
    """DeepSeek R1 and its distills: llama-cpp-deepseek-r1.jinja (and the official
    deepseek-ai-DeepSeek-R1-Distill-*.jinja) write per call ``<｜tool▁call▁begin｜>`` +
    ``function`` + ``<｜tool▁sep｜>`` + name + ``'\\n```json\\n'`` + JSON + ``'\\n```'`` +
    ``<｜tool▁call▁end｜>``, calls joined by ``'\\n'``. The generation prompt ends in
    ``<think>\\n``."""
    return DialectSpec(
        id="deepseek-r1",
        family="DeepSeek R1 / V3",
        origin="builtin",
        description="<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{json}\\n```...",
        formats=_deepseek_formats(
            CallFormat(
                section_open=DS_CALLS_BEGIN,
                section_close=DS_CALLS_END,
                call_open=DS_CALL_BEGIN,
                call_close=DS_CALL_END,
                separator="\n",
                body=DS_R1_BODY,
            ),
            other_body=DS_V31_BODY,
        ),
        reasoning=THINK,
    )


MISTRAL_THINK = ReasoningMarkers(open="[THINK]", close="[/THINK]")
_V11_PLAIN = TaggedBody(head="{name}[ARGS]")
_V11_CALL_ID = TaggedBody(head="{name}[CALL_ID]{id}[ARGS]")


def _mistral_variants() -> list[CallFormat]:
    """What Mistral models write besides their template's layout (parse-only):
    ``[TOOL_CALLS]name{json}`` without ``[ARGS]``, and the pre-v11 JSON list
    ``[TOOL_CALLS][{"name", "arguments", "id"}]``."""
    return [
        CallFormat(call_open="[TOOL_CALLS]", body=TaggedBody(head="{name}"), parse_only=True),
        CallFormat(
            section_open="[TOOL_CALLS][",
            section_close="]",
            separator=", ",
            body=JsonBody(id_key="id"),
            parse_only=True,
        ),
    ]


@builtin(signatures=[Signature(("[TOOL_CALLS]", "[ARGS]"))], priority=10)
def mistral_v11() -> DialectSpec:
    """Mistral v11+ tokenizers (Ministral 3, Devstral, Magistral):
    mistralai-Ministral-3-14B-Reasoning-2512.jinja writes, per call, ``'[TOOL_CALLS]'`` + name +
    ``'[ARGS]'`` + JSON. Reasoning in ``[THINK]...[/THINK]``; some versions put ``[CALL_ID]id``
    before ``[ARGS]`` (second format)."""
    return DialectSpec(
        id="mistral-v11",
        family="Mistral v11+ (Ministral 3, Devstral, Magistral)",
        origin="builtin",
        description="[TOOL_CALLS]NAME[ARGS]{json} per call",
        formats=[
            CallFormat(call_open="[TOOL_CALLS]", body=_V11_PLAIN),
            CallFormat(call_open="[TOOL_CALLS]", body=_V11_CALL_ID),
            *_mistral_variants(),
        ],
        reasoning=MISTRAL_THINK,
        id_format="alnum9",
    )


@builtin(signatures=[Signature(("[TOOL_CALLS]", "[CALL_ID]"))], priority=20)
def mistral_small_3_2() -> DialectSpec:
    """Mistral Small 3.2: Mistral-Small-3.2-24B-Instruct-2506.jinja writes, per call,
    ``'[TOOL_CALLS]'`` + name + ``'[CALL_ID]'`` + a 9-character id + ``'[ARGS]'`` + JSON."""
    return DialectSpec(
        id="mistral-small-3.2",
        family="Mistral Small 3.2",
        origin="builtin",
        description="[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{json} per call",
        formats=[
            CallFormat(call_open="[TOOL_CALLS]", body=_V11_CALL_ID),
            CallFormat(call_open="[TOOL_CALLS]", body=_V11_PLAIN),
            *_mistral_variants(),
        ],
        id_format="alnum9",
    )


@builtin(signatures=[Signature(("<function=", "<|start_header_id|>"))], priority=10)
def functionary_v3_1() -> DialectSpec:
    """Functionary v3.1 (Llama 3.1): meetkai-functionary-medium-v3.1.jinja writes
    ``'<function=' + name + '>'`` + JSON + ``'</function>'`` per call, then ``<|eom_id|>``.
    (Its ``python`` tool's ``<|python_tag|>code`` is raw code, not a JSON call: unsupported.)"""
    return DialectSpec(
        id="functionary-v3.1",
        family="MeetKai Functionary v3.1",
        origin="builtin",
        description="<function=NAME>{json}</function>",
        formats=[CallFormat(body=TaggedBody(head="<function={name}>", tail="</function>"))],
        stop=["<|eom_id|>"],
    )


@builtin(signatures=[Signature((">>>all",))], priority=10)
def functionary_v3_2() -> DialectSpec:
    """Functionary v3.2: meetkai-functionary-medium-v3.2.jinja writes ``'>>>' + name + '\\n'`` +
    arguments per call and ``'>>>all\\n'`` + prose; the generation prompt already ends in ``>>>``
    (callers prepend the prompt's trailing opener before parsing). ``>>>all\\n`` is stripped from
    content; the trigger skips it. The ``python`` tool's code may come raw, ``>>>python\ncode``
    (``raw_args_key``), as llama.cpp's Functionary parser reads it."""
    return DialectSpec(
        id="functionary-v3.2",
        family="MeetKai Functionary v3.2",
        origin="builtin",
        description=">>>NAME\\n{json}; >>>all\\n for prose",
        formats=[
            CallFormat(
                call_open=">>>",
                body=TaggedBody(head="{name}\n", raw_args_key="code"),
                triggers=[Trigger(kind="pattern", value=r"(>>>){name}\n")],
            )
        ],
        strip=[">>>all\n"],
    )


@builtin(signatures=[Signature(("<|tool_call:begin|>",))], priority=10)
def solar_open() -> DialectSpec:
    """Upstage Solar Open: ``<|tool_calls|>`` then per call ``<|tool_call:begin|>`` + id +
    ``<|tool_call:name|>`` + name + ``<|tool_call:args|>`` + JSON + ``<|tool_call:end|>`` (no
    template in the corpus; markers from dialects.md)."""
    return DialectSpec(
        id="solar-open",
        family="Upstage Solar Open",
        origin="builtin",
        description="<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{json}<|tool_call:end|>",
        formats=[
            CallFormat(
                section_open="<|tool_calls|>",
                call_open="<|tool_call:begin|>",
                call_close="<|tool_call:end|>",
                body=TaggedBody(head="{id}<|tool_call:name|>{name}<|tool_call:args|>"),
            )
        ],
    )


_HARMONY_CONSTRAINTS = (" <|constrain|>json", "<|constrain|>json", " json", "")
_HARMONY_ORDERS = (
    ("channel", "recipient", "constraint"),
    ("recipient", "channel", "constraint"),
    ("channel", "constraint", "recipient"),
)
"""Header tokens after the role, in the orders gpt-oss writes them."""


def _harmony_header(channel: str, recipient: str, constraint: str, order: tuple[str, ...]) -> str:
    tokens = {
        "channel": f"<|channel|>{channel}",
        "recipient": f" to={recipient}" if recipient else "",
        "constraint": constraint,
    }
    return "".join(tokens[t] for t in order) + "<|message|>"


def _harmony_variants(known: set[str]) -> list[CallFormat]:
    """Every header a call is written with: the channel (commentary, analysis), the recipient
    and the content type in any of ``_HARMONY_ORDERS``. A recipient without ``functions.``
    (``to=python``) is a call only when it names an offered tool."""
    out: list[CallFormat] = []
    seen = set(known)
    for recipient, offered in (("functions.{name}", False), ("{name}", True)):
        for order in _HARMONY_ORDERS:
            for channel in ("commentary", "analysis"):
                for constraint in _HARMONY_CONSTRAINTS:
                    head = _harmony_header(channel, recipient, constraint, order)
                    if head in seen:
                        continue
                    seen.add(head)
                    out.append(
                        CallFormat(
                            call_close="<|call|>",
                            body=TaggedBody(head=head),
                            parse_only=True,
                            offered_names_only=offered,
                        )
                    )
    return out


def _harmony_framing() -> list[str]:
    """Headers of messages that are content: the final channel (with a content type or not),
    a commentary preamble, either with a stray ``to=assistant``: framing, stripped. (A
    commentary header with a content type belongs to a tool message: a built-in recipient's
    message stays verbatim.)"""
    out: list[str] = []
    for recipient in ("", "assistant"):
        for order in _HARMONY_ORDERS:
            for channel, constraints in (("final", _HARMONY_CONSTRAINTS), ("commentary", ("",))):
                for constraint in constraints:
                    head = _harmony_header(channel, recipient, constraint, order)
                    if head not in out:
                        out.append(head)
    return out


def _harmony_canonical() -> list[CallFormat]:
    return [
        CallFormat(
            call_close="<|call|>",
            body=TaggedBody(
                head="<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            ),
        ),
        CallFormat(
            call_close="<|call|>",
            body=TaggedBody(
                head=" to=functions.{name}<|channel|>commentary <|constrain|>json<|message|>"
            ),
        ),
        CallFormat(
            call_close="<|call|>",
            body=TaggedBody(head=" to=functions.{name}<|channel|>commentary json<|message|>"),
        ),
    ]


@builtin(signatures=[Signature(("<|channel|>", "<|call|>"))], priority=10)
def gpt_oss() -> DialectSpec:
    """gpt-oss (harmony): ``<|channel|>commentary to=functions.NAME
    <|constrain|>json<|message|>`` + JSON + ``<|call|>`` (harmony's canonical form).
    openai-gpt-oss-120b.jinja renders past calls with the recipient in the header,
    ``<|start|>assistant to=functions.NAME<|channel|>commentary json <|message|>`` (third format;
    the second is the same with ``<|constrain|>json``). The analysis channel is reasoning, the
    final channel content; generation stops at ``<|call|>``.

    Parse-only variants (``_harmony_variants``): the header's tokens (channel, recipient,
    content type) in any order gpt-oss writes them, on the commentary or the analysis channel,
    with ``<|constrain|>json``, `` json`` or nothing; a recipient without ``functions.`` that
    names an offered tool. Content headers (final, commentary, ``to=assistant``, a content
    type) are stripped (``_harmony_framing``).
    The parser reads replies by ``messages`` (``parse/header_messages.py``): each header as tokens
    in any order; a message to a built-in recipient that is no offered tool (``browser.search``,
    ``container.exec``, ``python``) is the model's own tool use and goes to reasoning. The
    variants above stay for the grammar builder and the inner parse of a call's body."""
    canonical = _harmony_canonical()
    return DialectSpec(
        id="gpt-oss",
        family="OpenAI gpt-oss (harmony)",
        origin="builtin",
        description="<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{json}...",
        formats=[
            *canonical,
            *_harmony_variants({f.body.head for f in canonical if isinstance(f.body, TaggedBody)}),
        ],
        # a new message (<|start|>assistant) also ends an analysis message left without <|end|>
        reasoning=ReasoningMarkers(
            open="<|channel|>analysis<|message|>",
            close="<|end|>",
            alt_close=["<|start|>assistant"],
            answer_open="<|start|>assistant<|channel|>final<|message|>",
        ),
        strip=["<|start|>assistant", *_harmony_framing(), "<|return|>", "<|end|>"],
        stop=["<|call|>"],
        parallel_calls=False,
        # the parser reads the reply message by message, headers as tokens (parse/headers.py)
        messages=MessageHeaders(
            start="<|start|>assistant",
            body_open="<|message|>",
            ends=["<|end|>", "<|call|>", "<|return|>"],
            reasoning_ends=["<|end|>"],
            recipient=" to=",
            channel="<|channel|>",
            reasoning_names=["analysis"],
            answer_names=["final", "assistant", "user"],
            call_prefixes=["functions."],
        ),
    )
