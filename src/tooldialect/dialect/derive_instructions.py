"""Reading a call format off a template's tool instructions, for templates that never render a
past call.

Some templates list the tools and tell the model how to call them (``...call tools as
<|act_start|>[name(arg=value)]<|act_end|>``) but render past calls only as content. Derivation
then has no call to diff. The instructions still show one: text the prompt writes only when tools
are given, between two markers, that reads as a call list (Python calls, or a JSON object with a
name and an arguments key). The spec built from it must round-trip a call with arguments of every
JSON type, like every derived spec.
"""

from __future__ import annotations

import ast
import itertools
import json
from collections.abc import Iterator

from . import ports
from .derive_probe import PROBE_NAME, PROBE_RICH_ARGS, RICH_TOOLS, TOOLS
from .derive_render import ProbeRenderer
from .derive_text import is_marker, lex
from .families.common import THINK
from .spec import CallFormat, DialectSpec, JsonBody, PythonBody

__all__ = ["derive_from_instructions"]

_NAME_KEYS = ("name", "tool", "function", "tool_name", "fn")
_ARGS_KEYS = ("arguments", "args", "parameters", "input", "params")
_MAX_EXAMPLE = 400


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


def _examples(text: str) -> Iterator[tuple[str, str, str]]:
    """``(open marker, inner text, close marker)`` for text between two markers."""
    lx = lex(text)
    at = [i for i, x in enumerate(lx) if is_marker(x)]
    for a, b in itertools.pairwise(at):
        inner = "".join(lx[a + 1 : b]).strip()
        if inner and len(inner) <= _MAX_EXAMPLE and "zz" not in inner:
            yield lx[a], inner, lx[b]


def _python_format(open_: str, inner: str, close: str) -> CallFormat | None:
    try:
        tree = ast.parse(inner, mode="eval").body
    except SyntaxError:
        return None
    calls = tree.elts if isinstance(tree, ast.List) else [tree]
    if not calls or not all(isinstance(c, ast.Call) and c.keywords for c in calls):
        return None
    listed = isinstance(tree, ast.List)
    return CallFormat(
        body=PythonBody(),
        section_open=open_ + ("[" if listed else ""),
        section_close=("]" if listed else "") + close,
        separator=", ",
    )


def _json_format(open_: str, inner: str, close: str) -> CallFormat | None:
    try:
        obj = json.loads(inner)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    args_key = next((k for k in _ARGS_KEYS if isinstance(obj.get(k), dict)), None)
    if name_key is None or args_key is None or len(obj) != 2:
        return None
    body = JsonBody(name_key=name_key, arguments_key=args_key)
    return CallFormat(body=body, call_open=open_, call_close=close, separator="\n")


def _round_trips(spec: DialectSpec) -> bool:
    reader = ports.installed_reader()
    if reader is None:
        return False
    text = spec.render_call(PROBE_NAME, PROBE_RICH_ARGS)
    got = reader(text, spec, tools=RICH_TOOLS)
    return got is not None and got.calls == [(PROBE_NAME, PROBE_RICH_ARGS)]


def derive_from_instructions(renderer: ProbeRenderer) -> DialectSpec | None:
    """A spec read off the first call example in the tool instructions, or ``None``."""
    text = _instructions(renderer)
    if not text:
        return None
    for open_, inner, close in _examples(text):
        fmt = _python_format(open_, inner, close) or _json_format(open_, inner, close)
        if fmt is None:
            continue
        spec = DialectSpec(
            id="derived",
            family="derived from the template's tool instructions",
            origin="derived",
            description=f"read off the call example the instructions show ({fmt.body.kind})",
            formats=[fmt],
            reasoning=THINK,
        )
        if _round_trips(spec):
            return spec
    return None
