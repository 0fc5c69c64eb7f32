"""The whole chat template around the calls: turns, the system turn with the tool declarations,
reasoning and answer channels, tool results, content parts, validation, the generation prompt.

Axis values are documented in the package docstring.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .calls import calls_jinja
from .codecs import value_macro
from .draw import Draw
from .space import WireAxes, sample_axes
from .text import emit, indent, lit

__all__ = ["BOS", "EOS", "GeneratedTemplate", "compose", "generate"]

BOS = "<s>"
EOS = "</s>"
"""The special tokens a bench renders with (``words`` turns end an assistant turn with EOS)."""

THINK_WORDS = ("think", "reflect", "reasoning", "scratch", "thought", "inner")
DEFAULT_SYSTEM = "You are a helpful assistant with access to tools."


@dataclass(frozen=True)
class GeneratedTemplate:
    """One generated template: its axes, its source, and the text around a reply it writes."""

    seed: int
    axes: WireAxes
    source: str
    reply_open: str
    """What the generation prompt writes before the model's reply (the assistant header, without
    an opened reasoning block)."""
    reply_close: str
    """What ends an assistant turn (a marker, or ``EOS``)."""
    spelling: dict[str, str] = field(default_factory=dict)
    """The spelling choices drawn after the axes (marker words, separators, key names)."""

    @property
    def name(self) -> str:
        return f"wire-{self.seed:05d}"


@dataclass(frozen=True)
class _Turns:
    opens: dict[str, str]
    closes: dict[str, str]
    reply_close: str
    bos: bool


def _turns(axes: WireAxes, draw: Draw) -> _Turns:
    roles = ("system", "user", "assistant", "tool")
    if axes.turns == "special":
        t = draw.word("turn_word", ("im", "turn", "msg", "chat", "seg"))
        opens = {r: f"<|{t}_start|>{r}\n" for r in roles}
        closes = dict.fromkeys(roles, f"<|{t}_end|>\n")
        return _Turns(opens, closes, f"<|{t}_end|>", False)
    if axes.turns == "header":
        b, m, e = draw.one(
            "turn_header",
            [("begin", "body", "end"), ("hdr", "msg", "fin"), ("start", "text", "stop")],
        )
        opens = {r: f"<|{b}|>{r}<|{m}|>" for r in roles}
        return _Turns(opens, dict.fromkeys(roles, f"<|{e}|>"), f"<|{e}|>", True)
    if axes.turns == "brackets":
        opens = {r: f"[{r.upper()}]\n" for r in roles}
        closes = {r: f"\n[/{r.upper()}]\n" for r in roles}
        return _Turns(opens, closes, "[/ASSISTANT]", True)
    user = draw.word("user_word", ("User", "Human"))
    bot = draw.word("assistant_word", ("Assistant", "Bot"))
    names = {"system": "System", "user": user, "assistant": bot, "tool": "Tool Output"}
    opens = {r: f"### {names[r]}:\n" for r in roles}
    closes = dict.fromkeys(roles, "\n\n")
    return _Turns(opens, closes, EOS, True)


def _content_macro(strict: bool) -> list[str]:
    other = "{{- raise_exception('Only text content parts are supported.') }}" if strict else ""
    return [
        "{%- macro render_content(content) %}",
        "    {%- if content is string %}",
        "        {{- content }}",
        "    {%- elif content is iterable and content is not mapping %}",
        "        {%- for part in content %}",
        "            {%- if part.type == 'text' %}",
        "                {{- part.text }}",
        *(["            {%- else %}", "                " + other] if other else []),
        "            {%- endif %}",
        "        {%- endfor %}",
        "    {%- endif %}",
        "{%- endmacro %}",
    ]


def _content(axes: WireAxes, expr: str = "message.content") -> str:
    if axes.content == "parts":
        return f"{{%- set content = render_content({expr}) | trim %}}"
    return f"{{%- set content = {expr} | trim if {expr} is string else '' %}}"


_PARAMS = (
    "{%- set props = f.parameters.properties if f.parameters is defined and "
    "f.parameters.properties is defined else {} %}"
)
_PY_TYPES = (
    "{'string': 'str', 'integer': 'int', 'number': 'float', 'boolean': 'bool', "
    "'array': 'list', 'object': 'dict'}"
)


def _each_param(line: str, sep: str = "") -> list[str]:
    """A loop writing ``line`` (an expression of ``pname`` and ``prop``) per parameter."""
    joiner = ["    {%- if not loop.last %}", "        " + emit(lit(sep)), "    {%- endif %}"]
    return [
        _PARAMS,
        "{%- for pname, prop in props.items() %}",
        "    " + emit(line),
        *(joiner if sep else []),
        "{%- endfor %}",
    ]


def _tool_lines(style: str, draw: Draw) -> tuple[list[str], list[str], list[str]]:
    """(before the tools, one tool ``f``, after the tools) in declaration ``style``."""
    if style == "json":
        tag = draw.word("tools_tag", ("tools", "functions", "toolbox", "available_tools"))
        return [emit(lit(f"<{tag}>\n"))], [emit("f | tojson ~ '\\n'")], [emit(lit(f"</{tag}>"))]
    if style == "signatures":
        doc = "'\"\"\"' ~ (f.description or '') ~ '\"\"\"\\n\\n'"
        one = [
            emit("'def ' ~ f.name ~ '('"),
            *_each_param(f"pname ~ ': ' ~ {_PY_TYPES}.get(prop.type, 'Any')", ", "),
            emit(f"') -> dict:\\n    ' ~ {doc}"),
        ]
        return [], one, []
    if style == "xml":
        attrs = "'\" description=\"' ~ (f.description or '') | e ~ '\">\\n'"
        param = "'  <parameter name=\"' ~ pname ~ '\" type=\"' ~ (prop.type or 'any') ~ '\"/>\\n'"
        one = [
            emit(f"'<function name=\"' ~ f.name ~ {attrs}"),
            *_each_param(param),
            emit("'</function>\\n'"),
        ]
        return [emit(lit("<functions>\n"))], one, [emit(lit("</functions>"))]
    one = [
        emit("'// ' ~ (f.description or '') ~ '\\ntype ' ~ f.name ~ ' = (_: {\\n'"),
        *_each_param("pname ~ '?: ' ~ (prop.type or 'any') ~ ',\\n'"),
        emit("'}) => any;\\n\\n'"),
    ]
    return [emit(lit("namespace functions {\n\n"))], one, [emit(lit("} // namespace functions"))]


def _tools_block(axes: WireAxes, draw: Draw) -> list[str]:
    intro = draw.one(
        "tools_intro",
        [
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n",
            "You have access to the following functions:\n",
            "## Available tools\n\n",
        ],
    )
    head, one, tail = _tool_lines(axes.tools, draw)
    each = ["{%- set f = tool.function if tool.function is defined else tool %}", *one]
    rules = "\nCall a function only when it helps; wait for its result before you answer."
    body = [emit(lit(intro)), *head, "{%- for tool in tools %}", *indent(each), "{%- endfor %}"]
    return ["{%- set tools_block %}", *indent([*body, *tail, emit(lit(rules))]), "{%- endset %}"]


def _preamble(axes: WireAxes, draw: Draw, turns: _Turns) -> list[str]:
    strict = axes.strict == "raise"
    lines = [
        "{%- set ns = namespace(last_user=-1, calls=0) %}",
        "{%- if messages and messages[0].role == 'system' %}",
        "    " + _content(axes, "messages[0].content").replace("content =", "system_message ="),
        "    {%- set loop_messages = messages[1:] %}",
        "{%- else %}",
        f"    {{%- set system_message = {lit(DEFAULT_SYSTEM)} if tools else '' %}}",
        "    {%- set loop_messages = messages %}",
        "{%- endif %}",
        "{%- for message in loop_messages %}",
        "    {%- if message.role == 'user' %}",
        "        {%- set ns.last_user = loop.index0 %}",
        "    {%- endif %}",
        *(
            [
                "    {%- if message.role == 'system' %}",
                "        {{- raise_exception('The system message must come first.') }}",
                "    {%- endif %}",
            ]
            if strict
            else []
        ),
        "{%- endfor %}",
    ]
    if strict:
        lines += [
            "{%- if ns.last_user < 0 %}",
            "    {{- raise_exception('No user message found.') }}",
            "{%- endif %}",
        ]
    lines += ["{%- if tools %}", *indent(_tools_block(axes, draw)), "{%- endif %}"]
    if turns.bos:
        lines.append(emit("bos_token"))
    lines += [
        "{%- if system_message or tools %}",
        "    " + emit(lit(turns.opens["system"]) + " ~ system_message"),
        "    {%- if tools %}",
        "        " + emit("('\\n\\n' if system_message else '') ~ tools_block"),
        "    {%- endif %}",
        "    " + emit(lit(turns.closes["system"])),
        "{%- endif %}",
    ]
    return lines


@dataclass(frozen=True)
class _Reasoning:
    before: list[str]
    """Jinja writing the reasoning before the content."""
    content: list[str]
    """Jinja writing the content."""
    prompt_open: str = ""
    """The reasoning opener the generation prompt writes (``""``: none)."""
    prompt_close: str = ""


def _reasoning(axes: WireAxes, draw: Draw) -> _Reasoning:
    plain = [emit("content")]
    if axes.reasoning == "none":
        return _Reasoning([], plain)
    if axes.reasoning == "channels":
        c, m, e = draw.one(
            "channel_markers",
            [
                ("<|channel|>", "<|message|>", "<|ch_end|>"),
                ("<|ch|>", "<|m|>", "<|/ch|>"),
                ("<|lane|>", "<|txt|>", "<|lane_end|>"),
            ],
        )
        thought = draw.word("thought_channel", ("analysis", "thought", "think"))
        answer = draw.word("answer_channel", ("final", "answer", "reply"))
        before = [
            "{%- if reasoning and loop.index0 > ns.last_user %}",
            "    " + emit(f"{lit(c + thought + m)} ~ reasoning ~ {lit(e)}"),
            "{%- endif %}",
        ]
        content = [
            "{%- if content %}",
            "    " + emit(f"{lit(c + answer + m)} ~ content ~ {lit(e)}"),
            "{%- endif %}",
        ]
        return _Reasoning(before, content)
    w = draw.word("think_word", THINK_WORDS)
    opener, closer = draw.one(
        "think_markers", [("<{w}>", "</{w}>"), ("<|{w}|>", "<|/{w}|>"), ("[{W}]", "[/{W}]")]
    )
    opener, closer = opener.format(w=w, W=w.upper()), closer.format(w=w, W=w.upper())
    block = emit(
        f"{lit(opener + chr(10))} ~ reasoning ~ {lit(chr(10) + closer + chr(10) + chr(10))}"
    )
    keep = "loop.index0 > ns.last_user"
    if axes.reasoning == "last_turn":
        keep = "reasoning and " + keep
    before = [f"{{%- if {keep} %}}", "    " + block, "{%- endif %}"]
    if axes.reasoning == "prompt_open":
        return _Reasoning(before, plain, opener, closer)
    return _Reasoning(before, plain)


def _assistant(
    axes: WireAxes, draw: Draw, turns: _Turns, calls: list[str], think: _Reasoning
) -> list[str]:
    gap = lit(draw.one("content_gap", ["\n", "\n\n", " "]))
    end = lit(turns.closes["assistant"])
    if axes.turns == "words":
        end = f"eos_token ~ {lit(chr(10) * 2)}"
    return [
        _content(axes),
        "{%- set reasoning = message.reasoning_content %}",
        "{%- if reasoning is not string %}",
        "    {%- set reasoning = '' %}",
        "{%- endif %}",
        emit(lit(turns.opens["assistant"])),
        *think.before,
        *think.content,
        "{%- if message.tool_calls %}",
        "    {%- if content %}",
        "        " + emit(gap),
        "    {%- endif %}",
        *indent(calls),
        "{%- endif %}",
        emit(end),
    ]


def _tool(axes: WireAxes, draw: Draw, turns: _Turns) -> list[str]:
    if axes.results == "turn":
        return [
            _content(axes),
            emit(f"{lit(turns.opens['tool'])} ~ content ~ {lit(turns.closes['tool'])}"),
        ]
    r = draw.word("result_tag", ("tool_response", "result", "observation", "output"))
    return [
        _content(axes),
        "{%- if loop.first or loop.previtem.role != 'tool' %}",
        "    " + emit(lit(turns.opens["user"])),
        "{%- endif %}",
        emit(f"'<{r}>\\n' ~ content ~ '\\n</{r}>'"),
        "{%- if loop.last or loop.nextitem.role != 'tool' %}",
        "    " + emit(lit(turns.closes["user"])),
        "{%- else %}",
        "    " + emit(lit("\n")),
        "{%- endif %}",
    ]


def compose(seed: int, axes: WireAxes, rng: random.Random) -> GeneratedTemplate:
    """The template taking ``axes``, its spellings drawn from ``rng``."""
    draw = Draw(rng)
    strict = axes.strict == "raise"
    value = draw.word("value_macro", ("render_value", "format_value", "to_literal", "encode_value"))
    turns = _turns(axes, draw)
    calls = calls_jinja(axes, draw, value, strict=strict)
    think = _reasoning(axes, draw)
    branches = [
        (
            "user",
            [
                _content(axes),
                emit(f"{lit(turns.opens['user'])} ~ content ~ {lit(turns.closes['user'])}"),
            ],
        ),
        ("assistant", _assistant(axes, draw, turns, calls.loop, think)),
        ("tool", _tool(axes, draw, turns)),
    ]
    loop = ["{%- for message in loop_messages %}"]
    for i, (role, body) in enumerate(branches):
        loop += [
            f"    {{%- {'if' if i == 0 else 'elif'} message.role == '{role}' %}}",
            *indent(body, 2),
        ]
    if strict:
        loop += [
            "    {%- else %}",
            "        {{- raise_exception('Unexpected message role: ' ~ message.role) }}",
        ]
    loop += ["    {%- endif %}", "{%- endfor %}"]
    generation = [emit(lit(turns.opens["assistant"]))]
    if think.prompt_open:
        generation += [
            "{%- if enable_thinking is defined and enable_thinking is false %}",
            "    " + emit(lit(think.prompt_open + "\n\n" + think.prompt_close + "\n\n")),
            "{%- else %}",
            "    " + emit(lit(think.prompt_open + "\n")),
            "{%- endif %}",
        ]
    summary = ", ".join(f"{k}={v}" for k, v in axes.as_dict().items())
    lines = [
        f"{{#- Generated wire format {seed} ({summary}). -#}}",
        *value_macro(value, axes.codec),
        *(_content_macro(strict) if axes.content == "parts" else []),
        *calls.macros,
        *_preamble(axes, draw, turns),
        *loop,
        "{%- if add_generation_prompt %}",
        *indent(generation),
        "{%- endif %}",
    ]
    return GeneratedTemplate(
        seed=seed,
        axes=axes,
        source="\n".join(lines) + "\n",
        reply_open=turns.opens["assistant"],
        reply_close=turns.reply_close,
        spelling=dict(draw.record),
    )


def generate(seed: int, **fixed: str) -> GeneratedTemplate:
    """The template of ``seed`` (``fixed``: axis values imposed, the rest drawn)."""
    rng = random.Random(seed)
    return compose(seed, sample_axes(rng, fixed), rng)
