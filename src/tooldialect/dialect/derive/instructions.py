"""Reading a call format off a template's tool instructions, for templates that never render a
past call.

Some templates list the tools and tell the model how to call them (``...call tools as
<|act_start|>[name(arg=value)]<|act_end|>``) but render past calls only as content. Derivation
then has no call to diff. The instructions still show one: text the prompt writes only when tools
are given, between two markers, that reads as a call. Real instructions write it in several ways,
all read here:

* Python calls, bracketed or not (``[function_name(arg1="value1", arg2=2)]``);
* a JSON object with a name and an arguments key, or a JSON list of them
  (``[{"name": "function_name", "arguments": {"arg_1": "value_1"}}]``), whose values may be
  placeholders that are not JSON (``{"name": <function-name>, "arguments": <args-json-object>}``,
  ``{"name": ..., "arguments": {...}}``, ``"arguments": "tool_args1"``);
* XML elements with placeholder names (``<function=example_function_name>`` then one
  ``<parameter=example_parameter_1>value_1</parameter>`` per argument).

Every pair of markers is tried, innermost first from the start; the first example that yields a
spec which round-trips a call with arguments of every JSON type wins.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .. import ports
from ..families.common import THINK
from ..spec import CallFormat, DialectSpec, ElementBody, JsonBody, PythonBody
from .lexemes import is_marker, lex
from .probe_renderer import ProbeRenderer
from .probes import PROBE_NAME, PROBE_RICH_ARGS, RICH_TOOLS, TOOLS

__all__ = [
    "INSTRUCTIONS_FAMILY",
    "derive_from_instructions",
    "instruction_spelling",
    "reads_instruction_example",
]

INSTRUCTIONS_FAMILY = "derived from the template's tool instructions"

_NAME_KEYS = ("name", "tool", "function", "tool_name", "fn", "function_name")
_ARGS_KEYS = ("arguments", "args", "parameters", "input", "params", "tool_input")
_MAX_EXAMPLE = 400

# Placeholders instructions write where a value goes: ``<function-name>``, ``...``, ``{...}``.
_ANGLE_PLACEHOLDER = re.compile(r"<[A-Za-z][\w\- ]*>")
_ELLIPSIS = re.compile(r"\.\.\.|…")
# The words instructions use for a function's name and an argument's key in an XML example.
_NAME_WORD = re.compile(
    r"\b(?i:(?:example_|your_|the_)?(?:function|func|tool)[_-]?name\d*)\b|\bNAME\b"
)
_KEY_WORD = re.compile(
    r"\b(?:example_)?(?:parameter|param|argument|arg|key)(?:[_-]?name)?[_-]?\d+\b", re.IGNORECASE
)
_CLOSER = re.compile(r"</[^<>\s]{1,80}>|<\|/[^<>\s]{0,78}\|>")


def _instructions(renderer: ProbeRenderer) -> str | None:
    """What the prompt writes only because tools are given (``None`` when it ignores them)."""
    user = [{"role": "user", "content": "zzuser"}]
    with_tools = renderer.render(user, tools=TOOLS, add_generation_prompt=True)
    bare = renderer.render(user, add_generation_prompt=True)
    if with_tools is None or bare is None or PROBE_NAME not in with_tools:
        return None
    lw, lb = lex(with_tools), lex(bare)
    p = 0
    while p < min(len(lw), len(lb)) and lw[p] == lb[p]:
        p += 1
    s = 0
    while s < min(len(lw), len(lb)) - p and lw[-1 - s] == lb[-1 - s]:
        s += 1
    return "".join(lw[p : len(lw) - s])


def _opens(marker: str) -> bool:
    return not marker.startswith(("</", "<|/", "[/"))


def _pair_key(marker: str) -> str:
    return re.sub(r"/|(?<=[_|<])(?:start|begin|end)(?=[_|>])", "", marker.lower())


def _examples(text: str) -> Iterator[tuple[str, str, str]]:
    """``(open marker + leading space, inner text, trailing space + close marker)`` for text
    between two markers (any two: an example may hold markers of its own). From each opener,
    the closer that pairs with it (``</x>`` for ``<x>``, ``<|x_end|>`` for ``<|x_start|>``)
    comes first, so an example keeps its outermost markers."""
    lx = lex(text)
    at = [i for i, x in enumerate(lx) if is_marker(x)]
    for n, a in enumerate(at):
        if not _opens(lx[a]):
            continue
        near = [b for b in at[n + 1 :] if len("".join(lx[a + 1 : b])) <= _MAX_EXAMPLE]
        paired = [b for b in near if b > a and _pair_key(lx[b]) == _pair_key(lx[a])]
        for b in paired[:1] + [b for b in near if b not in paired[:1]]:
            raw = "".join(lx[a + 1 : b])
            inner = raw.strip()
            if not inner or "zz" in inner:
                continue
            lead = raw[: len(raw) - len(raw.lstrip())]
            trail = raw[len(raw.rstrip()) :]
            yield lx[a] + lead, inner, trail + lx[b]


def _python_format(open_: str, inner: str, close: str) -> CallFormat | None:
    source = re.sub(r",\s*\)", ")", _ELLIPSIS.sub("", inner))
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    calls = tree.elts if isinstance(tree, ast.List) else [tree]
    if not calls or not all(isinstance(c, ast.Call) for c in calls):
        return None
    first = calls[0]
    if (
        not isinstance(first, ast.Call)
        or not first.keywords
        or not isinstance(first.func, ast.Name)
    ):
        return None
    listed = isinstance(tree, ast.List)
    return CallFormat(
        body=PythonBody(),
        section_open=open_ + ("[" if listed else ""),
        section_close=("]" if listed else "") + close,
        separator=", " if listed else "\n",
    )


def _loads_example(inner: str) -> Any:
    """``inner`` as JSON once its placeholders are values (``None`` when it is not JSON)."""
    text = re.sub(r"\{\s*(?:\.\.\.|…)\s*\}", "{}", inner)
    text = _ELLIPSIS.sub('"_"', text)
    text = _ANGLE_PLACEHOLDER.sub('"_"', text)
    try:
        return json.loads(text)
    except ValueError:
        return None


def _json_body(obj: Any) -> JsonBody | None:
    if not isinstance(obj, dict) or len(obj) != 2:
        return None
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    # a placeholder string stands for the arguments object (``"arguments": "tool_args1"``)
    args_key = next((k for k in _ARGS_KEYS if isinstance(obj.get(k), (dict, str))), None)
    if name_key is None or args_key is None:
        return None
    return JsonBody(name_key=name_key, arguments_key=args_key)


def _json_format(open_: str, inner: str, close: str) -> CallFormat | None:
    obj = _loads_example(inner)
    if isinstance(obj, list):
        bodies = [_json_body(x) for x in obj if x != "_"]  # ``, ...]``: more of the same
        if not bodies or any(b is None or b != bodies[0] for b in bodies) or bodies[0] is None:
            return None
        return CallFormat(
            body=bodies[0], section_open=open_ + "[", section_close="]" + close, separator=", "
        )
    body = _json_body(obj)
    if body is None:
        return None
    return CallFormat(body=body, call_open=open_, call_close=close, separator="\n")


def _element_close(inner: str, start: int) -> tuple[int, int] | None:
    """Where the closing marker after ``start`` begins, and where it (and its newline) ends."""
    m = _CLOSER.search(inner, start)
    if m is None:
        return None
    end = m.end()
    while end < len(inner) and inner[end] in " \t":
        end += 1
    if inner.startswith("\n", end):  # the element's own line break, not a blank line after it
        end += 1
    return m.start(), end


def _element_format(open_: str, inner: str, close: str) -> CallFormat | None:
    """An XML example: a head naming the function, one element per argument, a tail."""
    name = _NAME_WORD.search(inner)
    key = _KEY_WORD.search(inner, name.end()) if name else None
    if name is None or key is None:
        return None
    start = inner.rfind("<", name.end(), key.start() + 1)
    tag_end = inner.find(">", key.end())
    shut = _element_close(inner, tag_end) if start >= 0 and tag_end >= 0 else None
    if shut is None:
        return None
    value = inner[tag_end + 1 : shut[0]]
    if not value.strip() or "<" in value:
        return None
    lead = value[: len(value) - len(value.lstrip())]
    trail = value[len(value.rstrip()) :]
    opener = inner[start : key.start()]
    param = opener + "{key}" + inner[key.end() : tag_end + 1] + lead + "{value}" + trail
    param += inner[shut[0] : shut[1]]
    pos = shut[1]
    while inner.startswith(opener, pos):  # further parameters of the same shape
        nxt = _element_close(inner, pos + len(opener))
        if nxt is None:
            return None
        pos = nxt[1]
    head = inner[: name.start()] + "{name}" + inner[name.end() : start]
    body = ElementBody(head=head, param=param, tail=inner[pos:], trim_value="\n" in lead + trail)
    return CallFormat(body=body, call_open=open_, call_close=close, separator="\n")


def reads_instruction_example(
    spec: DialectSpec, example: DialectSpec, *, reader: ports.CallReader
) -> bool:
    """Whether ``spec`` reads a call written as ``example`` (a spec read off the instructions)
    writes it: the call, and nothing left as content.

    A builtin picked by signature for a template that renders no past call has only this to be
    checked against: what the instructions tell the model to write."""
    text = example.render_call(PROBE_NAME, PROBE_RICH_ARGS)
    got = reader(text, spec, tools=RICH_TOOLS)
    return got is not None and got.calls == [(PROBE_NAME, PROBE_RICH_ARGS)] and not got.content


def derive_from_instructions(
    renderer: ProbeRenderer, *, reader: ports.CallReader
) -> DialectSpec | None:
    """A spec read off the first call example in the tool instructions that ``spec`` reads back
    (``reader``), or ``None``."""
    text = _instructions(renderer)
    if not text:
        return None
    for open_, inner, close in _examples(text):
        for read in (_python_format, _json_format, _element_format):
            fmt = read(open_, inner, close)
            if fmt is None:
                continue
            spec = DialectSpec(
                id="derived",
                family=INSTRUCTIONS_FAMILY,
                origin="derived",
                description=f"read off the call example the instructions show ({fmt.body.kind})",
                formats=[fmt],
                reasoning=THINK,
            )
            if reads_instruction_example(spec, spec, reader=reader):
                return spec
    return None


# ---------------------------------------------------------------------------------------------
# The spelling the instructions show


def _near(a: str, b: str) -> bool:
    """Whether two markers differ by one inserted, dropped or changed character."""
    if a == b or abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < 4:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def instruction_spelling(spec: DialectSpec, instructions: str) -> DialectSpec:
    """``instructions``: the markers the render writes only when tools are given.

    Where the template's history writes a marker the tool instructions spell otherwise (a
    typo, ``<fcal>`` for ``<fcall>``), the model writes what the instructions show: that
    spelling becomes canonical, the history's stays readable (a parse-only variant)."""
    fmt = spec.primary
    dumped = fmt.model_dump()
    used = {x for v in _strings(dumped) for x in lex(v) if is_marker(x)}
    written = {x for x in lex(instructions) if is_marker(x)}
    shown = written - used
    fixes = {}
    for marker in sorted(used - written):
        near = [m for m in shown if _near(m, marker)]
        if len(near) == 1:
            fixes[marker] = near[0]
    if not fixes:
        return spec
    fixed = CallFormat.model_validate(_replaced(dumped, fixes))
    history = fmt.model_copy(update={"parse_only": True})
    return spec.model_copy(update={"formats": [fixed, history, *spec.formats[1:]]})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _replaced(value: Any, fixes: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in fixes.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, fixes) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, fixes) for v in value]
    return value
