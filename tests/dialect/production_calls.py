"""The calls of the invented production-style templates (tests/dialect/production_templates.py):
the Jinja each call envelope, section and argument rendering writes, and its Python twin
``render_calls``, which the tests compare with the template's own render.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

ARG_SEP = " ;; "  # the key:value envelope's custom delimiter between arguments
JSON_KINDS = ("tag_json", "json_list")


# ---------------------------------------------------------------------------------------------
# Jinja text helpers


def lit(text: str) -> str:
    """``text`` as a Jinja string literal."""
    return json.dumps(text)


def emit(expr: str) -> str:
    """A Jinja output statement."""
    return "{{- " + expr + " }}"


def indent(lines: Sequence[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


# ---------------------------------------------------------------------------------------------
# Calls: the Python twin


def _value_text(choice: Mapping[str, str], value: Any) -> str:
    if choice["args"] != "tojson" and isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _json_args(choice: Mapping[str, str], arguments: Mapping[str, Any]) -> str:
    if choice["args"] == "macro":
        pairs = (
            f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items()
        )
        return "{" + ",".join(pairs) + "}"
    return json.dumps(arguments, ensure_ascii=False)


def _one_call(choice: Mapping[str, str], call_id: str, name: str, args: Mapping[str, Any]) -> str:
    envelope, has_id = choice["envelope"], choice["ids"] != "none"
    if envelope in JSON_KINDS:
        head = f'"id": "{call_id}", ' if has_id else ""
        body = "{" + head + f'"name": "{name}", "arguments": {_json_args(choice, args)}' + "}"
        return body if envelope == "json_list" else f"<fn_call>\n{body}\n</fn_call>"
    if envelope == "xml_param":
        ref = f"<call_id>{call_id}</call_id>\n" if has_id else ""
        params = "".join(f"<arg={k}>\n{_value_text(choice, v)}\n</arg>\n" for k, v in args.items())
        return f"<do={name}>\n{ref}{params}</do>"
    if envelope == "invoke":
        ref = f' id="{call_id}"' if has_id else ""
        fields = "".join(
            f'<field name="{k}">{_value_text(choice, v)}</field>\n' for k, v in args.items()
        )
        return f'<run name="{name}"{ref}>\n{fields}</run>'
    ref = f"#{call_id}" if has_id else ""
    pairs = ARG_SEP.join(f"{k}: {_value_text(choice, v)}" for k, v in args.items())
    return f"<|act|>{name}{ref}\n{pairs}\n<|act_end|>"


def render_calls(
    choice: Mapping[str, str],
    calls: Sequence[tuple[str, str, Mapping[str, Any]]],
    *,
    counter: int = 0,
) -> str:
    """What the template writes for ``calls`` (id, name, arguments) of one assistant turn, from
    its section opener to its closer; ``counter`` is the number of calls written before."""
    ids = [
        f"call-{counter + i}" if choice["ids"] == "counter" else call_id
        for i, (call_id, _, _) in enumerate(calls)
    ]
    bodies = [
        _one_call(choice, i, name, args) for i, (_, name, args) in zip(ids, calls, strict=True)
    ]
    if choice["envelope"] == "json_list":
        text = "[" + ", ".join(bodies) + "]"
        if choice["section"] == "none":
            return "<|acts|>" + text
    else:
        text = "\n".join(bodies)
    return f"<calls>\n{text}\n</calls>" if choice["section"] == "calls" else text


# ---------------------------------------------------------------------------------------------
# Calls: the Jinja


def _value_jinja(choice: Mapping[str, str]) -> str:
    if choice["args"] == "tojson":
        return emit("value | tojson")
    if choice["args"] == "items":
        return emit("value if value is string else value | tojson")
    return emit("render_value(value)")


def _json_args_jinja(choice: Mapping[str, str]) -> list[str]:
    if choice["args"] == "macro":
        return [emit("render_args(fn.arguments)")]
    if choice["args"] == "items":
        return [
            emit(lit("{")),
            "{%- for key, value in fn.arguments.items() %}",
            "    " + emit("'\"' ~ key ~ '\": ' ~ value | tojson"),
            "    {%- if not loop.last %}",
            "        " + emit(lit(", ")),
            "    {%- endif %}",
            "{%- endfor %}",
            emit(lit("}")),
        ]
    return [
        "{%- if fn.arguments is string %}",
        "    " + emit("fn.arguments"),
        "{%- else %}",
        "    " + emit("fn.arguments | tojson"),
        "{%- endif %}",
    ]


def _params_jinja(choice: Mapping[str, str], before: str, after: str) -> list[str]:
    return [
        "{%- for key, value in fn.arguments.items() %}",
        "    " + emit(before),
        "    " + _value_jinja(choice),
        "    " + emit(after),
        "{%- endfor %}",
    ]


def _envelope_jinja(choice: Mapping[str, str]) -> list[str]:
    envelope, has_id = choice["envelope"], choice["ids"] != "none"
    if envelope in JSON_KINDS:
        head = "'\"id\": \"' ~ call_id ~ '\", ' ~ " if has_id else ""
        lines = []
        if envelope == "json_list":
            lines += ["{%- if loop.first %}", "    " + emit(lit("[")), "{%- else %}"]
            lines += ["    " + emit(lit(", ")), "{%- endif %}", emit(lit("{"))]
        else:
            lines.append(emit(lit("<fn_call>\n{")))
        lines.append(emit(head + '\'"name": "\' ~ fn.name ~ \'", "arguments": \''))
        lines += _json_args_jinja(choice)
        if envelope == "json_list":
            return [
                *lines,
                emit(lit("}")),
                "{%- if loop.last %}",
                "    " + emit(lit("]")),
                "{%- endif %}",
            ]
        return [*lines, emit(lit("}\n</fn_call>"))]
    if envelope == "xml_param":
        lines = [emit("'<do=' ~ fn.name ~ '>\\n'")]
        if has_id:
            lines.append(emit("'<call_id>' ~ call_id ~ '</call_id>\\n'"))
        lines += _params_jinja(choice, "'<arg=' ~ key ~ '>\\n'", lit("\n</arg>\n"))
        return [*lines, emit(lit("</do>"))]
    if envelope == "invoke":
        lines = [emit("'<run name=\"' ~ fn.name ~ '\"'")]
        if has_id:
            lines.append(emit("' id=\"' ~ call_id ~ '\"'"))
        lines.append(emit(lit(">\n")))
        lines += _params_jinja(choice, "'<field name=\"' ~ key ~ '\">'", lit("</field>\n"))
        return [*lines, emit(lit("</run>"))]
    lines = [emit("'<|act|>' ~ fn.name")]
    if has_id:
        lines.append(emit("'#' ~ call_id"))
    lines += [
        emit(lit("\n")),
        "{%- for key, value in fn.arguments.items() %}",
        "    " + emit("key ~ ': '"),
        "    " + _value_jinja(choice),
        "    {%- if not loop.last %}",
        "        " + emit("arg_sep"),
        "    {%- endif %}",
        "{%- endfor %}",
    ]
    return [*lines, emit(lit("\n<|act_end|>"))]


def calls_jinja(choice: Mapping[str, str]) -> list[str]:
    """The loop over ``message.tool_calls``, inside its section."""
    lines: list[str] = []
    if choice["section"] == "calls":
        lines.append(emit(lit("<calls>\n")))
    elif choice["envelope"] == "json_list":
        lines.append(emit(lit("<|acts|>")))
    body = ["{%- set fn = call.function if call.function is defined else call %}"]
    if choice["ids"] == "given":
        body.append("{%- set call_id = call.id if call.id is defined else 'none' %}")
    elif choice["ids"] == "counter":
        body += ["{%- set call_id = 'call-' ~ ns.calls %}", "{%- set ns.calls = ns.calls + 1 %}"]
    body += _envelope_jinja(choice)
    if choice["envelope"] != "json_list":
        body += ["{%- if not loop.last %}", "    " + emit(lit("\n")), "{%- endif %}"]
    lines += ["{%- for call in message.tool_calls %}", *indent(body), "{%- endfor %}"]
    if choice["section"] == "calls":
        lines.append(emit(lit("\n</calls>")))
    return lines


# ---------------------------------------------------------------------------------------------
# Macros


def args_macros(choice: Mapping[str, str]) -> list[str]:
    """The macros the ``macro`` argument rendering defines (before the template's first use)."""
    if choice["args"] == "macro" and choice["envelope"] in JSON_KINDS:
        return [
            "{%- macro render_args(arguments) %}",
            "    {%- if arguments is string %}",
            "        {{- arguments }}",
            "    {%- else %}",
            "        {{- '{' }}",
            "        {%- for key, value in arguments.items() %}",
            "            {{- key | tojson ~ ':' ~ value | tojson }}",
            "            {%- if not loop.last %}",
            "                {{- ',' }}",
            "            {%- endif %}",
            "        {%- endfor %}",
            "        {{- '}' }}",
            "    {%- endif %}",
            "{%- endmacro %}",
        ]
    if choice["args"] == "macro":
        return [
            "{%- macro render_value(value) %}",
            "    {%- if value is string %}",
            "        {{- value }}",
            "    {%- elif value is mapping or value is sequence %}",
            "        {{- value | tojson }}",
            "    {%- else %}",
            "        {{- value | tojson }}",
            "    {%- endif %}",
            "{%- endmacro %}",
        ]
    return []
