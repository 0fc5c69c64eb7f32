"""Derivation learns two layouts from renders: ``key: value`` arguments joined by a delimiter
string (``ElementBody.param_separator``), and a JSON call id the template builds from its own
counter (``"id": "call-0"``: ``DialectSpec.id_template``). Small invented templates, each
rendering its arguments raw, as JSON, or strings raw and the rest as JSON."""

from __future__ import annotations

import json

import pytest

from tooldialect.conformance import check_template
from tooldialect.dialect.spec import ElementBody, JsonBody
from tooldialect.parse import parse_output
from tooldialect.verify import derive_dialect

_TURNS = (
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}<|bot|>{{ m.content or '' }}CALLS<|eot|>"
    "{%- elif m.role == 'tool' %}<|res|>{{ m.content }}<|eot|>"
    "{%- else %}<|{{ m.role }}|>{{ m.content }}<|eot|>{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|bot|>{%- endif %}"
)

VALUES = {
    "raw": "value",
    "json": "value | tojson",
    "mixed": "value if value is string else value | tojson",
}
SEPARATORS = [" ;; ", "\n", ", ", "<|and|>", " | ", "\n- "]


def _kv_template(separator: str, value: str) -> str:
    calls = (
        "{%- for c in m.tool_calls or [] %}<|act|>{{ c.function.name ~ '\\n' }}"
        "{%- for key, value in c.function.arguments.items() %}"
        "{{ key }}: {{ VALUE }}{% if not loop.last %}{{ SEP }}{% endif %}"
        "{%- endfor %}{{ '\\n<|act_end|>' }}{%- endfor %}"
    )
    calls = calls.replace("VALUE", value).replace("SEP", json.dumps(separator))
    return _TURNS.replace("CALLS", calls)


@pytest.mark.parametrize("value", list(VALUES.values()), ids=list(VALUES))
@pytest.mark.parametrize("separator", SEPARATORS, ids=[repr(s) for s in SEPARATORS])
def test_key_value_pairs_joined_by_a_delimiter(separator: str, value: str) -> None:
    source = _kv_template(separator, value)
    spec = derive_dialect(source)
    assert spec is not None
    body = spec.primary.body
    assert isinstance(body, ElementBody)
    assert body.param == "{key}: {value}"
    assert body.param_separator == separator
    report = check_template(source, builtins=False)
    assert report.verdict == "reads", report.reason


def test_a_delimiter_inside_a_value_is_text() -> None:
    spec = derive_dialect(_kv_template(" ;; ", VALUES["raw"]))
    assert spec is not None
    tools = [
        {
            "type": "function",
            "function": {
                "name": "note",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
                },
            },
        }
    ]
    text = "<|act|>note\ntext: a ;; b: c ;; n: 2\n<|act_end|>"
    out = parse_output(text, spec, tools=tools)
    assert [(c.name, c.arguments) for c in out.tool_calls] == [
        ("note", {"text": "a ;; b: c", "n": 2})
    ]
    assert spec.render_call("note", {"text": "a ;; b: c", "n": 2}) == text


def _counter_template(id_text: str, *, listed: bool) -> str:
    one = (
        '{{- \'{"id": "\' ~ ' + id_text + ' ~ \'", "name": "\' ~ c.function.name ~ '
        "'\", \"arguments\": ' ~ c.function.arguments | tojson ~ '}' }}"
    )
    if listed:
        calls = (
            "{%- for c in m.tool_calls or [] %}{{ '<|calls|>[' if loop.first else ', ' }}"
            + one
            + "{%- set ns.n = ns.n + 1 %}{{ ']' if loop.last }}{%- endfor %}"
        )
    else:
        calls = (
            "{%- for c in m.tool_calls or [] %}<fn>" + one + "</fn>"
            "{%- set ns.n = ns.n + 1 %}{%- endfor %}"
        )
    return "{%- set ns = namespace(n=0) %}" + _TURNS.replace("CALLS", calls)


@pytest.mark.parametrize("listed", [False, True], ids=["tagged", "list"])
@pytest.mark.parametrize(
    ("id_text", "template"),
    [("'call-' ~ ns.n", "call-{index}"), ("'t' ~ ns.n ~ '_x'", "t{index}_x")],
    ids=["prefix", "around"],
)
def test_a_json_id_built_from_the_template_counter(
    id_text: str, template: str, listed: bool
) -> None:
    source = _counter_template(id_text, listed=listed)
    spec = derive_dialect(source)
    assert spec is not None
    body = spec.primary.body
    assert isinstance(body, JsonBody)
    assert body.id_key == "id" and body.id_first
    assert spec.id_template == template
    report = check_template(source, builtins=False)
    assert report.verdict == "reads", report.reason
    text = spec.render_calls([("f", {"q": 1}, None), ("g", {}, None)])
    calls = parse_output(text, spec).tool_calls
    assert [(c.id, c.name) for c in calls] == [
        (template.format(index=0), "f"),
        (template.format(index=1), "g"),
    ]


def test_a_constant_id_is_no_counter() -> None:
    # the same text on every call is a constant key, not an id around the index
    source = _counter_template("'v0'", listed=False)
    spec = derive_dialect(source)
    assert spec is not None
    body = spec.primary.body
    assert isinstance(body, JsonBody)
    assert spec.id_template is None
    assert body.extra == {"id": "v0"}
