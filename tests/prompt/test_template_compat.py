"""Whole conversations with tool calls and results render through real templates' quirks.

Each case renders a multi-turn conversation (system, user, assistant calls, tool results, the
assistant's answer, a new user turn) through a vendored template with ``render_prompt``, as the
handler does, and checks what the template shows the model. The first test of each group shows
the plain render really fails, so the adaptation is what makes it work.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from conftest import TEMPLATES
from tooldialect.errors import TemplateError
from tooldialect.frontend.render import render_prompt
from tooldialect.frontend.response import client_ids, message_for
from tooldialect.parse import parse_output
from tooldialect.prompt.compat import (
    ALNUM9,
    alnum9_id,
    client_call_ids,
    complete_schemas,
    map_call_ids,
    merge_same_role_turns,
    name_tool_results,
    render_adapted,
)
from tooldialect.prompt.template import ChatTemplate
from tooldialect.verify import detect_dialect

# no descriptions on parameters, an object parameter without additionalProperties, an array
# parameter without items: all valid JSON Schema, all read unchecked by some template
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "options": {"type": "object"},
                    "days": {"type": "array"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
        },
    },
]

CLIENT_IDS = ("call_abc123", "call_def456")


def conversation() -> list[dict[str, Any]]:
    """Two parallel calls, their results, an answer and a follow-up question."""
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": CLIENT_IDS[0],
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": CLIENT_IDS[1],
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"zone": "CET"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": CLIENT_IDS[0], "content": "sunny, 21C"},
        {"role": "tool", "tool_call_id": CLIENT_IDS[1], "content": "14:05"},
        {"role": "assistant", "content": "Sunny, 21C; it is 14:05."},
        {"role": "user", "content": "And in Rome?"},
    ]


def render(name: str, messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    spec = detect_dialect(source)
    tmpl = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    return render_prompt(tmpl, spec, messages or conversation(), tools=TOOLS, **kwargs)


def assert_whole_conversation(prompt: str) -> None:
    for text in ("Be brief.", "Weather and time in Paris?", "sunny, 21C", "14:05", "And in Rome?"):
        assert text in prompt
    assert "Sunny, 21C; it is 14:05." in prompt
    assert '"Paris"' in prompt and '"CET"' in prompt


# --- functions instead of tools (FireFunction v2) ------------------------------------------------

FIREFUNCTION = "fireworks-ai-llama-3-firefunction-v2.jinja"


def test_firefunction_refuses_a_render_without_functions() -> None:
    source = (TEMPLATES / FIREFUNCTION).read_text(encoding="utf-8")
    with pytest.raises(TemplateError, match="functions"):
        ChatTemplate(source).render(conversation(), tools=TOOLS)


def test_firefunction_gets_functions_as_a_json_string() -> None:
    prompt = render(FIREFUNCTION)
    assert_whole_conversation(prompt)
    listed = prompt[prompt.index("[", prompt.index("Available functions")) :]
    functions, _ = json.JSONDecoder().raw_decode(listed)
    assert [f["name"] for f in functions] == ["get_weather", "get_time"]
    assert functions[0]["parameters"] == TOOLS[0]["function"]["parameters"]
    assert re.search(r"Today is \d{4}-\d\d-\d\d\.", prompt)
    assert ' functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, ' in prompt


def test_firefunction_keeps_the_callers_own_variables() -> None:
    prompt = render(FIREFUNCTION, functions='[{"name": "mine"}]', datetime="2024-07-01")
    assert '[{"name": "mine"}]' in prompt
    assert "Today is 2024-07-01." in prompt


# --- schema fields that may be absent (Command R+) -----------------------------------------------

COMMAND_R_PLUS = "CohereForAI-c4ai-command-r-plus-tool_use.jinja"


def test_command_r_plus_refuses_schemas_without_optional_fields() -> None:
    source = (TEMPLATES / COMMAND_R_PLUS).read_text(encoding="utf-8")
    with pytest.raises(TemplateError):
        ChatTemplate(source).render(conversation(), tools=TOOLS)


def test_command_r_plus_renders_with_completed_schemas() -> None:
    prompt = render(COMMAND_R_PLUS)
    assert_whole_conversation(prompt)
    assert "def get_weather(city: str, options: Optional[Dict[str, " in prompt
    assert "def get_time(" in prompt
    assert '"tool_name": "get_time"' in prompt


def test_complete_schemas_fills_only_absent_fields_and_copies() -> None:
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["function"]["parameters"]["properties"]["city"]["description"] = "where"
    done = complete_schemas(tools)
    assert tools == json.loads(json.dumps(tools))  # input untouched
    assert "description" not in tools[1]["function"]
    params = done[0]["function"]["parameters"]
    assert params["properties"]["city"]["description"] == "where"
    assert params["properties"]["options"]["additionalProperties"] == {}
    assert params["properties"]["days"]["items"] == {}
    assert params["required"] == ["city"]
    assert done[1]["function"]["description"] == ""
    assert done[1]["function"]["parameters"]["required"] == []


def test_tojson_templates_see_the_schema_as_given() -> None:
    """The fallback is only taken on an error: Hermes prints the tools untouched."""
    prompt = render("Qwen-Qwen2.5-7B-Instruct.jinja")
    assert json.dumps(TOOLS[1]) in prompt


# --- templates that refuse a system turn (Gemma 2) -----------------------------------------------

GEMMA2 = "google-gemma-2-2b-it.jinja"


def test_gemma2_refuses_a_system_turn() -> None:
    source = (TEMPLATES / GEMMA2).read_text(encoding="utf-8")
    with pytest.raises(TemplateError, match="System role not supported"):
        ChatTemplate(source).render(conversation()[:2])


@pytest.mark.parametrize(
    "tail",
    [[], [{"role": "assistant", "content": "Sunny."}], [{"role": "user", "content": "And?"}]],
    ids=["ends-with-results", "answered", "user-after-results"],
)
def test_gemma2_folds_the_guide_into_the_first_user_turn(tail: list[dict[str, Any]]) -> None:
    messages = [*conversation()[:5], *tail]
    prompt = render(GEMMA2, messages, add_generation_prompt=False)
    assert "system" not in re.findall(r"<start_of_turn>(\w+)", prompt)
    first_user = prompt.split("<start_of_turn>user\n", 1)[1].split("<end_of_turn>", 1)[0]
    assert first_user.startswith("Be brief.")
    assert "get_weather" in first_user and first_user.endswith("Weather and time in Paris?")
    assert "sunny, 21C" in prompt and "14:05" in prompt
    roles = re.findall(r"<start_of_turn>(\w+)", prompt)
    assert all(a != b for a, b in itertools.pairwise(roles)), roles


def test_merge_same_role_turns_keeps_other_turns() -> None:
    merged = merge_same_role_turns(
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
            {"role": "user", "content": "d", "name": "x"},
            {"role": "user", "content": "e"},
        ]
    )
    assert [m["content"] for m in merged] == ["a\n\nb", "c", "d", "e"]


# --- Mistral call ids ----------------------------------------------------------------------------

MISTRALS = [
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
]


@pytest.mark.parametrize("name", MISTRALS, ids=MISTRALS)
def test_mistral_refuses_client_ids(name: str) -> None:
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    with pytest.raises(TemplateError, match="alphanumeric"):
        ChatTemplate(source).render(conversation(), tools=TOOLS)


@pytest.mark.parametrize("name", MISTRALS, ids=MISTRALS)
def test_mistral_renders_client_ids_mapped_consistently(name: str) -> None:
    prompt = render(name)
    assert_whole_conversation(prompt)
    for client in CLIENT_IDS:
        mapped = alnum9_id(client)
        assert ALNUM9.match(mapped)
        assert client not in prompt
        # the call and its result carry the same id
        assert prompt.count(mapped) >= 2, (mapped, prompt)
    assert alnum9_id(CLIENT_IDS[0]) != alnum9_id(CLIENT_IDS[1])


@pytest.mark.parametrize("name", MISTRALS, ids=MISTRALS)
def test_mistral_ids_are_stable_across_requests(name: str) -> None:
    """The same id maps to the same id in every request: prompts (and the KV cache) stay stable."""
    first = render(name)
    assert render(name) == first
    longer = [*conversation(), {"role": "assistant", "content": "Cloudy."}]
    longer.append({"role": "user", "content": "Thanks"})
    again = render(name, longer)
    head = first[: first.index(alnum9_id(CLIENT_IDS[1])) + 9]
    assert again.startswith(head)


def test_valid_ids_are_kept() -> None:
    assert alnum9_id("abcDEF123") == "abcDEF123"
    messages = [{"role": "tool", "tool_call_id": "abcDEF123", "content": "x"}]
    assert map_call_ids(messages) == messages
    assert client_call_ids(messages) == {}


def test_ids_map_back_in_responses() -> None:
    """A reply naming a mapped id (Mistral writes ids) gives the client its own id back."""
    spec = detect_dialect((TEMPLATES / MISTRALS[0]).read_text(encoding="utf-8"))
    ids = client_call_ids(conversation())
    assert set(ids.values()) == set(CLIENT_IDS)
    mapped = alnum9_id(CLIENT_IDS[0])
    text = spec.render_call("get_weather", {"city": "Rome"}, call_id=mapped)
    message = client_ids(message_for(parse_output(text, spec, tools=TOOLS)), ids)
    assert message["tool_calls"][0]["id"] == CLIENT_IDS[0]
    fresh = spec.render_call("get_weather", {"city": "Rome"}, call_id="newid0001")
    message = client_ids(message_for(parse_output(fresh, spec, tools=TOOLS)), ids)
    assert message["tool_calls"][0]["id"] == "newid0001"


@pytest.mark.parametrize(
    "client_id",
    ["call_abc123", "", "x" * 500, "ünïcode-id", "call 1", "123456789"],
    ids=["openai", "empty", "long", "unicode", "space", "numeric9"],
)
def test_no_id_ever_reaches_the_user_as_a_template_error(client_id: str) -> None:
    messages = conversation()
    messages[2]["tool_calls"][0]["id"] = client_id
    messages[3]["tool_call_id"] = client_id
    for name in MISTRALS:
        assert "And in Rome?" in render(name, messages)


def test_id_fallback_applies_to_any_template_refusing_an_id() -> None:
    """A dialect not known to need nine alphanumerics still renders: ids are mapped on error."""
    source = (
        "{% for m in messages %}{% for c in m.tool_calls or [] %}"
        "{% if c.id | length != 9 %}{{ raise_exception('bad id ' + c.id) }}{% endif %}"
        "[{{ c.id }}]{% endfor %}{{ m.content }}{% endfor %}"
    )
    tmpl = ChatTemplate(source)
    out = render_adapted(lambda m, t: tmpl.render(m, tools=t), conversation(), None, alnum9=False)
    assert f"[{alnum9_id(CLIENT_IDS[0])}]" in out


def test_the_first_error_is_raised_when_nothing_helps() -> None:
    tmpl = ChatTemplate("{{ raise_exception('never') }}")
    with pytest.raises(TemplateError, match="never"):
        render_adapted(lambda m, t: tmpl.render(m, tools=t), conversation(), TOOLS, alnum9=False)


def test_a_refusal_the_user_turn_retry_cannot_help_stays_a_refusal() -> None:
    """A template refusing on purpose (``raise_exception``: roles must alternate) whose retry
    with tool results as user turns fails too raises the first error with jinja's refusal as its
    cause: the fuzz found the retry's ``from None`` wiping it, so the refusal read as a crash."""
    import jinja2

    source = (TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text()
    spec = detect_dialect(source)
    messages = [{"role": "assistant", "content": "hello"}, *conversation()]
    with pytest.raises(TemplateError, match="alternate") as err:
        render_prompt(ChatTemplate(source), spec, messages, tools=TOOLS)
    assert type(err.value.__cause__) is jinja2.TemplateError


# --- tool results name the function they answer ---------------------------------------------------


def test_tool_results_get_the_name_of_the_call_they_answer() -> None:
    named = name_tool_results(conversation())
    assert [m.get("name") for m in named if m["role"] == "tool"] == ["get_weather", "get_time"]
    given = conversation()
    given[3]["name"] = "mine"
    assert name_tool_results(given)[3]["name"] == "mine"
    assert "name" not in conversation()[3]  # input untouched


def test_a_template_printing_result_names_shows_them() -> None:
    source = (
        "{% for m in messages %}{% if m.role == 'tool' %}[{{ m.name }}: {{ m.content }}]"
        "{% else %}{{ m.content }}{% endif %}{% endfor %}"
    )
    spec = detect_dialect((TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text())
    prompt = render_prompt(ChatTemplate(source), spec, conversation(), tools=TOOLS)
    assert "[get_weather: sunny, 21C][get_time: 14:05]" in prompt
