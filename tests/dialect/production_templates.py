"""Invented production-style chat templates, composed from independent feature axes.

Real chat templates are long and irregular: several features at once (macros, ``namespace()``
state, content as parts, reasoning blocks, grouped tool results, tool lists in the system turn
with an example call). The invented families in ``tests/fixtures/templates/invented`` are short
and regular. This module composes 100-200 line templates from feature axes, each with a few
real-world variants spelled with markers invented here (none occurs in the real corpus), and
picks a seeded pairwise covering of the combinations: every pair of variants of two axes occurs
in some template, so no single structure is tuned for.

The calls themselves (envelope, section, arguments) and their Python twin ``render_calls`` are
in ``production_calls.py``; ``test_production_templates.py`` checks each template renders
exactly what the twin says.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass

from production_calls import (
    ARG_SEP,
    args_macros,
    calls_jinja,
    emit,
    indent,
    lit,
    render_calls,
)

AXES: dict[str, tuple[str, ...]] = {
    "header": ("turn", "head", "frame", "ask"),
    "envelope": ("tag_json", "json_list", "xml_param", "invoke", "kv_delim"),
    "section": ("none", "calls"),
    "args": ("tojson", "items", "macro"),
    "ids": ("none", "given", "counter"),
    "content": ("string", "parts"),
    "reasoning": ("none", "think", "channel"),
    "result": ("turn", "grouped", "named"),
    "end": ("marker", "eos"),
    "system": ("turn", "first_user", "split"),
    "tools": ("json", "signature"),
    "strict": ("lenient", "raise"),
}
"""Each feature axis and its variants:

* ``header``: ``<|turn|>role\n``...``<|/turn|>``; ``<|head|>role<|body|>``...``<|fin|>``;
  ``<|frame|>msg role="role"<|go|>``...``<|endframe|>``; ``[ASK]``...``[/ASK]`` with no
  assistant header.
* ``envelope``: ``<fn_call>{"name", "arguments"}</fn_call>``; ``<|acts|>[{...}, ...]``;
  ``<do=NAME><arg=k>\nv\n</arg></do>``; ``<run name=".."><field name="k">v</field></run>``;
  ``<|act|>NAME\nk: v ;; k: v\n<|act_end|>`` (a custom string delimiter).
* ``section``: none, or ``<calls>``...``</calls>`` around a turn's calls.
* ``args``: ``tojson`` (the whole object; every value in element bodies); ``items`` (a loop over
  ``arguments.items()``, ``tojson`` only for non-strings); ``macro`` (``render_args`` /
  ``render_value`` macros, compact JSON).
* ``ids``: none; the call's ``id``; a ``namespace()`` counter (``call-N``).
* ``content``: a string, or a ``render_content`` macro reading lists of text parts.
* ``reasoning``: none; ``<reflect>`` opened by the generation prompt, kept after the last user
  turn (``namespace()`` last user index); a ``<|chan|>`` channel for thought, reply and calls.
* ``result``: a tool turn; results grouped into one user turn (``loop.previtem``); a tool header
  naming the function, found by the call id (``namespace()`` lookup).
* ``end``: the turn's end marker, or ``eos_token``.
* ``system``: its own turn (a default prompt when absent) with the tool list; merged into the
  first user turn; a system turn and a separate ``developer`` turn for the tool list.
* ``tools``: JSON lines with an example call (a decoy); a signature list from the parameters.
* ``strict``: lenient, or ``raise_exception`` on a missing user turn or a misplaced system turn.
"""

SEED = 20250611
MINIMUM = 24
DEFAULT_SYSTEM = "You are a careful assistant that uses tools when they help."

Choice = dict[str, str]


@dataclass(frozen=True)
class Production:
    """One generated template and the variant it takes on every axis."""

    name: str
    choice: Mapping[str, str]
    source: str


# ---------------------------------------------------------------------------------------------
# Message headers


def open_text(header: str, role: str) -> str:
    """The text that opens a turn of ``role`` (``"ask"`` writes no assistant header)."""
    if header == "turn":
        return f"<|turn|>{role}\n"
    if header == "head":
        return f"<|head|>{role}<|body|>"
    if header == "frame":
        return f'<|frame|>msg role="{role}"<|go|>'
    opens = {"user": "[ASK]", "assistant": "", "tool": "[OBS]"}
    return opens.get(role, "[CTX]")


def close_text(header: str, role: str) -> str:
    """The text that closes a turn of ``role`` (assistant turns: see ``close_assistant``)."""
    closes = {"turn": "<|/turn|>\n", "head": "<|fin|>", "frame": "<|endframe|>\n"}
    if header in closes:
        return closes[header]
    return {"user": "[/ASK]", "assistant": "[DONE]", "tool": "[/OBS]"}.get(role, "[/CTX]\n")


def close_assistant(choice: Mapping[str, str]) -> str:
    """The Jinja that ends an assistant turn: its marker, or the EOS token."""
    header = choice["header"]
    if choice["end"] == "marker":
        return emit(lit(close_text(header, "assistant")))
    tail = "\n" if header in ("turn", "frame") else ""
    return emit("eos_token" + (" ~ " + lit(tail) if tail else ""))


def named_tool_open(header: str, name: str) -> str:
    """The text opening a tool result whose header carries the function's name."""
    if header == "turn":
        return f"<|turn|>tool:{name}\n"
    if header == "head":
        return f"<|head|>fn.{name} to=assistant<|body|>"
    if header == "frame":
        return f'<|frame|>msg role="tool" name="{name}"<|go|>'
    return f"[OBS name={name}]"


# ---------------------------------------------------------------------------------------------
# Macros, tools, turns


def _macros(choice: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    if choice["content"] == "parts":
        lines += [
            "{%- macro render_content(content) %}",
            "    {%- if content is string %}",
            "        {{- content }}",
            "    {%- elif content is iterable and content is not mapping %}",
            "        {%- for part in content %}",
            "            {%- if part.type == 'text' %}",
            "                {{- part.text }}",
            "            {%- else %}",
            "                {{- raise_exception('Only text parts are supported.') }}",
            "            {%- endif %}",
            "        {%- endfor %}",
            "    {%- elif content is none or content is undefined %}",
            "        {{- '' }}",
            "    {%- else %}",
            "        {{- raise_exception('Unexpected content type.') }}",
            "    {%- endif %}",
            "{%- endmacro %}",
        ]
    return [*lines, *args_macros(choice)]


def _content_jinja(choice: Mapping[str, str]) -> str:
    if choice["content"] == "parts":
        return "{%- set content = render_content(message.content) | trim %}"
    return "{%- set content = message.content | trim if message.content is string else '' %}"


def example_call(choice: Mapping[str, str]) -> str:
    """The call the tool instructions show (a decoy for detection, as in real templates)."""
    return render_calls(choice, [("ID", "function_name", {"param": "value"})])


def _tools_jinja(choice: Mapping[str, str]) -> list[str]:
    if choice["tools"] == "json":
        body = [
            emit(lit("# Tools\n\nYou may call one or more of these functions.\n\n<toolbox>\n")),
            "{%- for tool in tools %}",
            "    " + emit("(tool.function if tool.function is defined else tool) | tojson"),
            "    " + emit(lit("\n")),
            "{%- endfor %}",
            emit(lit("</toolbox>\n\nTo call a function, reply exactly like this:\n")),
            emit(lit(example_call(choice))),
        ]
    else:
        body = [
            emit(lit("# Functions\n")),
            "{%- for tool in tools %}",
            "    {%- set f = tool.function if tool.function is defined else tool %}",
            "    " + emit("'\\n## ' ~ f.name ~ '\\n'"),
            "    {%- if f.description %}",
            "        " + emit("f.description ~ '\\n'"),
            "    {%- endif %}",
            "    {%- set required = f.parameters.required or [] %}",
            "    {%- for pname, prop in f.parameters.properties.items() %}",
            "        {%- set ptype = prop.type if prop.type is defined else 'any' %}",
            "        "
            + emit(
                "'- ' ~ pname ~ ' (' ~ ptype ~ (', required' if pname in required else '') ~ ')'"
            ),
            "        {%- if prop.description is defined %}",
            "            " + emit("': ' ~ prop.description"),
            "        {%- endif %}",
            "        " + emit(lit("\n")),
            "    {%- endfor %}",
            "{%- endfor %}",
            emit(lit("\nWrite calls in the call format; never invent a function.")),
        ]
    rules = [
        emit(lit("\n\nRules:\n")),
        emit(lit("- Call a function only when it helps answer the user.\n")),
        emit(lit("- Give every required argument; never invent an argument.\n")),
        emit(lit("- Wait for the results before you answer.")),
    ]
    return ["{%- set tools_block %}", *indent(body + rules), "{%- endset %}"]


def _preamble(choice: Mapping[str, str]) -> list[str]:
    """Namespace state, the system message split off, the tool list, validation."""
    lines = [
        "{%- set ns = namespace(last_user=-1, first_user=-1, calls=0, tool_name='') %}",
        f"{{%- set arg_sep = {lit(ARG_SEP)} %}}",
        "{%- if messages and messages[0].role == 'system' %}",
    ]
    if choice["content"] == "parts":
        lines.append("    {%- set system_message = render_content(messages[0].content) | trim %}")
    else:
        lines.append("    {%- set system_message = messages[0].content | trim %}")
    default = lit(DEFAULT_SYSTEM) if choice["system"] == "turn" else "''"
    lines += [
        "    {%- set loop_messages = messages[1:] %}",
        "{%- else %}",
        f"    {{%- set system_message = {default} %}}",
        "    {%- set loop_messages = messages %}",
        "{%- endif %}",
        "{%- for message in loop_messages %}",
        "    {%- if message.role == 'user' %}",
        "        {%- set ns.last_user = loop.index0 %}",
        "        {%- if ns.first_user < 0 %}",
        "            {%- set ns.first_user = loop.index0 %}",
        "        {%- endif %}",
        "    {%- endif %}",
        "{%- endfor %}",
    ]
    if choice["strict"] == "raise":
        lines += [
            "{%- if ns.last_user < 0 %}",
            "    {{- raise_exception('No user message found.') }}",
            "{%- endif %}",
            "{%- for message in loop_messages %}",
            "    {%- if message.role not in ['user', 'assistant', 'tool', 'system'] %}",
            "        {{- raise_exception('Unknown role: ' ~ message.role) }}",
            "    {%- elif message.role == 'system' %}",
            "        {{- raise_exception('The system message must come first.') }}",
            "    {%- endif %}",
            "{%- endfor %}",
        ]
    lines += [
        "{%- for message in loop_messages if message.role == 'assistant' and message.tool_calls %}",
        "    {%- if message.tool_calls is string or message.tool_calls is mapping %}",
        "        {{- raise_exception('tool_calls must be a list.') }}",
        "    {%- endif %}",
        "    {%- for call in message.tool_calls %}",
        "        {%- set fn = call.function if call.function is defined else call %}",
        "        {%- if fn.name is not defined or not fn.name %}",
        "            {{- raise_exception('Every tool call needs a function name.') }}",
        "        {%- endif %}",
        "    {%- endfor %}",
        "{%- endfor %}",
    ]
    lines += ["{%- if tools %}", *indent(_tools_jinja(choice)), "{%- endif %}"]
    if choice["header"] in ("head", "ask"):
        lines.append("{{- bos_token }}")
    return lines


def _system_jinja(choice: Mapping[str, str]) -> list[str]:
    header, where = choice["header"], choice["system"]
    if where == "first_user":
        return [
            "{%- set preamble = system_message %}",
            "{%- if tools %}",
            "    {%- set preamble = (preamble ~ '\\n\\n' if preamble else '') ~ tools_block %}",
            "{%- endif %}",
        ]
    opener = emit(lit(open_text(header, "system")))
    closer = emit(lit(close_text(header, "system")))
    if where == "turn":
        return [
            "{%- if system_message or tools %}",
            "    " + opener,
            "    " + emit("system_message"),
            "    {%- if tools %}",
            "        " + emit("('\\n\\n' if system_message else '') ~ tools_block"),
            "    {%- endif %}",
            "    " + closer,
            "{%- endif %}",
        ]
    return [
        "{%- if system_message %}",
        "    " + opener + emit("system_message") + closer,
        "{%- endif %}",
        "{%- if tools %}",
        "    " + emit(lit(open_text(header, "developer"))) + emit("tools_block"),
        "    " + emit(lit(close_text(header, "developer"))),
        "{%- endif %}",
    ]


def _user_jinja(choice: Mapping[str, str]) -> list[str]:
    header = choice["header"]
    lines = [_content_jinja(choice)]
    if choice["system"] == "first_user":
        lines += [
            "{%- if loop.index0 == ns.first_user and preamble %}",
            "    {%- set content = preamble ~ '\\n\\n' ~ content %}",
            "{%- endif %}",
        ]
    opener, closer = lit(open_text(header, "user")), lit(close_text(header, "user"))
    return [*lines, emit(f"{opener} ~ content ~ {closer}")]


def _assistant_jinja(choice: Mapping[str, str]) -> list[str]:
    reasoning = choice["reasoning"]
    lines = [
        _content_jinja(choice),
        "{%- set reasoning = message.reasoning_content %}",
        "{%- if reasoning is not string %}",
        "    {%- set reasoning = '' %}",
        "{%- endif %}",
        emit(lit(open_text(choice["header"], "assistant"))),
    ]
    if reasoning == "think":
        lines += [
            "{%- if not reasoning and '</reflect>' in content %}",
            "    {%- set reasoning = content.split('</reflect>')[0].split('<reflect>')[-1] %}",
            "    {%- set content = content.split('</reflect>')[-1] | trim %}",
            "{%- endif %}",
            "{%- if loop.index0 > ns.last_user %}",
            "    " + emit("'<reflect>\\n' ~ reasoning | trim ~ '\\n</reflect>\\n\\n'"),
            "{%- endif %}",
            emit("content"),
        ]
    elif reasoning == "channel":
        lines += [
            "{%- if reasoning %}",
            "    " + emit("'<|chan|>thought<|msg|>' ~ reasoning | trim ~ '<|chan_end|>'"),
            "{%- endif %}",
            "{%- if content %}",
            "    " + emit("'<|chan|>final<|msg|>' ~ content"),
            "{%- endif %}",
        ]
    else:
        lines.append(emit("content"))
    if reasoning == "channel":
        sep = ["{%- if content %}", "    " + emit(lit("<|chan_end|>")), "{%- endif %}"]
        sep.append(emit(lit("<|chan|>act<|msg|>")))
    else:
        sep = ["{%- if content %}", "    " + emit(lit("\n\n")), "{%- endif %}"]
    calls = [*sep, *calls_jinja(choice)]
    lines += ["{%- if message.tool_calls %}", *indent(calls), "{%- endif %}"]
    return [*lines, close_assistant(choice)]


def _tool_jinja(choice: Mapping[str, str]) -> list[str]:
    header, result = choice["header"], choice["result"]
    content = _content_jinja(choice)
    if result == "grouped":
        return [
            content,
            "{%- if loop.first or loop.previtem.role != 'tool' %}",
            "    " + emit(lit(open_text(header, "user"))),
            "{%- endif %}",
            emit("'<outcome>\\n' ~ content ~ '\\n</outcome>'"),
            "{%- if loop.last or loop.nextitem.role != 'tool' %}",
            "    " + emit(lit(close_text(header, "user"))),
            "{%- else %}",
            "    " + emit(lit("\n")),
            "{%- endif %}",
        ]
    if result == "turn":
        opener, closer = lit(open_text(header, "tool")), lit(close_text(header, "tool"))
        return [content, emit(f"{opener} ~ content ~ {closer}")]
    left, right = named_tool_open(header, "\0").split("\0")
    return [
        content,
        "{%- set ns.tool_name = message.name if message.name is defined else 'unknown' %}",
        "{%- for earlier in loop_messages[:loop.index0] %}",
        "    {%- if earlier.role == 'assistant' and earlier.tool_calls %}",
        "        {%- for call in earlier.tool_calls %}",
        "            {%- if call.id is defined and call.id == message.tool_call_id %}",
        "                {%- set ns.tool_name = call.function.name %}",
        "            {%- endif %}",
        "        {%- endfor %}",
        "    {%- endif %}",
        "{%- endfor %}",
        emit(f"{lit(left)} ~ ns.tool_name ~ {lit(right)} ~ content"),
        emit(lit(close_text(header, "tool"))),
    ]


def _generation_jinja(choice: Mapping[str, str]) -> list[str]:
    lines = [emit(lit(open_text(choice["header"], "assistant")))]
    if choice["reasoning"] == "think":
        lines += [
            "{%- if enable_thinking is defined and enable_thinking is false %}",
            "    " + emit(lit("<reflect>\n\n</reflect>\n\n")),
            "{%- else %}",
            "    " + emit(lit("<reflect>\n")),
            "{%- endif %}",
        ]
    return ["{%- if add_generation_prompt %}", *indent(lines), "{%- endif %}"]


def compose(choice: Mapping[str, str], *, name: str = "") -> str:
    """The Jinja source of the template taking ``choice``'s variant on every axis."""
    axes = ", ".join(f"{k}={v}" for k, v in choice.items())
    branches: list[tuple[str, list[str]]] = [
        ("user", _user_jinja(choice)),
        ("assistant", _assistant_jinja(choice)),
        ("tool", _tool_jinja(choice)),
    ]
    loop = ["{%- for message in loop_messages %}"]
    for i, (role, body) in enumerate(branches):
        keyword = "if" if i == 0 else "elif"
        loop += [f"    {{%- {keyword} message.role == '{role}' %}}", *indent(body, 2)]
    loop += [
        "    {%- else %}",
        "        {{- raise_exception('Unexpected role: ' ~ message.role) }}",
        "    {%- endif %}",
        "{%- endfor %}",
    ]
    lines = [
        f"{{#- Invented production-style template {name} ({axes}). -#}}",
        *_macros(choice),
        *_preamble(choice),
        *_system_jinja(choice),
        *loop,
        *_generation_jinja(choice),
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The sample


def _pairs(choice: Mapping[str, str]) -> set[tuple[str, str, str, str]]:
    return {(a, choice[a], b, choice[b]) for a, b in itertools.combinations(AXES, 2)}


def covering(*, seed: int = SEED, minimum: int = MINIMUM, candidates: int = 50) -> list[Choice]:
    """A seeded greedy pairwise covering of ``AXES``: each step keeps, of ``candidates`` random
    combinations, the one covering most pairs not yet covered (at least ``minimum`` picks)."""
    rng = random.Random(seed)
    uncovered = {
        (a, va, b, vb)
        for a, b in itertools.combinations(AXES, 2)
        for va in AXES[a]
        for vb in AXES[b]
    }
    picks: list[Choice] = []
    while uncovered or len(picks) < minimum:
        pool = [
            {axis: rng.choice(values) for axis, values in AXES.items()} for _ in range(candidates)
        ]
        best = max(pool, key=lambda c: len(_pairs(c) & uncovered))
        picks.append(best)
        uncovered -= _pairs(best)
    return picks


def productions() -> list[Production]:
    """The deterministic sample: one template per combination of the covering."""
    result = []
    for i, choice in enumerate(covering(), start=1):
        name = f"p{i:02d}-{choice['header']}-{choice['envelope']}"
        result.append(Production(name, choice, compose(choice, name=name)))
    return result


__all__ = ["AXES", "Production", "compose", "covering", "productions"]
