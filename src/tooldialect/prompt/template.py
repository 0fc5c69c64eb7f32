"""Sandboxed, transformers-compatible rendering of a model's own chat template.

Chat templates come from GGUF files, i.e. from strangers (CVE-2024-34359 ran one unsandboxed). The
environment copies Hugging Face transformers' ``_compile_jinja_template`` (trim/lstrip blocks, the
``{% generation %}`` tag, loop controls, ``tojson`` without ASCII/HTML escaping,
``raise_exception``, ``strftime_now``, the guarded ``dict``/``namespace``) so a prompt renders
byte for byte as ``tokenizer.apply_chat_template`` would. Beyond transformers, because real
templates need it:

* container methods that mutate (``list.append``, ``dict.update`` ...) are allowed. Everything the
  template sees is a fresh copy made for this render, so nothing leaks back to the caller;
* ``from_json`` / ``fromjson`` filters (a vLLM/llama.cpp extension);
* reaching for an unsafe attribute (``__class__``, ``__globals__``, ``mro`` ...) raises
  :class:`~tooldialect.TemplateSecurityError` at once instead of rendering an empty string.

Messages go through :func:`~tooldialect.prompt.normalize.normalize_messages` first (see there for
the rules), in the forms this template's probes found it renders.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.utils
from jinja2 import meta
from jinja2.exceptions import SecurityError
from jinja2.sandbox import modifies_known_mutable
from pydantic import BaseModel, ConfigDict

from ..errors import RenderBudgetError, TemplateError, TemplateSecurityError
from ..shapes import Message
from ..tool_defs import ToolDef
from .budget import BudgetedSandbox, RenderBudget, check_source, render_budgeted
from .code_cache import compile_cached
from .conventions import conventional_variables, is_helper
from .normalize import ArgumentForm, CallContentForm, ContentForm, normalize_messages
from .shared import SharedMutation, is_shared, shared_json
from .shared import plain_data as _plain

__all__ = ["ArgumentForm", "ChatTemplate", "TemplateCapabilities", "normalize_messages"]


# ---------------------------------------------------------------------------------------------
# The sandbox (after transformers.utils.chat_template_utils._cached_compile_jinja_template)


class _GenerationTag(jinja2.ext.Extension):
    """Accepts ``{% generation %}...{% endgeneration %}`` and renders its body unchanged."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API declares this as a class set

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Callable[[], str]) -> str:
        return caller()


class _TemplateDict:
    """``dict`` as transformers exposes it: callable, but with no reachable type internals."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """``namespace`` refusing underscore-prefixed names, as in transformers."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"templates cannot store underscore-prefixed attribute {name!r}")


class _Sandbox(BudgetedSandbox):
    """transformers' sandbox, minus immutability of the (copied) containers, plus loud refusals."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # Jinja returns a silent Undefined here; an escape attempt should stop the render instead.
        raise SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(obj, "__self__", None)
        if (
            owner is not None
            and is_shared(owner)
            and modifies_known_mutable(owner, getattr(obj, "__name__", ""))
        ):
            raise SharedMutation  # shared tool data: the render starts again on copies
        return super().call(context, obj, *args, **kwargs)


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # transformers' override: jinja's own filter escapes HTML characters, which templates don't want
    def dump() -> str:
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
            default=_json_default,
        )

    return shared_json(value, (ensure_ascii, indent, separators, sort_keys), dump)


def _json_default(value: object) -> object:
    # `tools | map(attribute="function") | tojson` (llama.cpp's deepseek-r1 template) hands json a
    # lazy iterator; minja serialises it as a list, transformers fails. Only called for such values.
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _from_json(text: str) -> Any:
    return json.loads(text)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    """Compile once per template text: the handler renders the same template on every request."""
    env = _Sandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.filters["from_json"] = _from_json
    env.filters["fromjson"] = _from_json
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    env.install_budget()
    try:
        return compile_cached(env, source)  # the code object from disk when seen before
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(
            f"chat template does not compile: {exc.message} (line {exc.lineno}); "
            "fix the template or pass another one"
        ) from exc
    except Exception as exc:  # e.g. RecursionError on absurdly nested expressions
        raise TemplateError(
            f"chat template does not compile: {type(exc).__name__}: {exc}; "
            "fix the template or pass another one"
        ) from exc


@functools.lru_cache(maxsize=64)
def _read_variables(source: str) -> frozenset[str]:
    """The undeclared variables ``source`` reads: parsed and walked once per template text."""
    # the compiled template keeps its environment, so custom tags ({% generation %}) parse
    env = _compile(source).environment
    if isinstance(env, BudgetedSandbox) and env.td_variables is not None:
        return env.td_variables  # found while compiling (one environment per template text)
    try:
        return frozenset(meta.find_undeclared_variables(env.parse(source)))
    except Exception:  # a template that parses for rendering parses here too; be safe anyway
        return frozenset()


# ---------------------------------------------------------------------------------------------
# Capabilities


class TemplateCapabilities(BaseModel):
    """What a chat template renders, found by rendering probe conversations (never by grepping)."""

    model_config = ConfigDict(frozen=True)

    system_role: bool
    """A system message renders (its text appears) without the template raising."""
    tools: bool
    """Tool definitions passed as ``tools=`` appear in the prompt (the tool's name is rendered)."""
    tool_calls: bool
    """An assistant message's ``tool_calls`` render (the called function's name appears)."""
    tool_role: bool
    """A ``role: "tool"`` message's content appears."""
    parallel_calls: bool
    """Two tool calls in one assistant message both render."""
    object_arguments: bool
    """Arguments given as a mapping render their values."""
    string_arguments: bool
    """Arguments given as a JSON string appear verbatim (neither dropped nor re-encoded)."""
    reasoning: bool
    """The template reads reasoning: a ``reasoning_content`` appears, or ``enable_thinking`` /
    ``thinking`` change the prompt."""
    calls_need_none_content: bool = False
    """Calls render only when the assistant message's ``content`` is ``None``, not ``""``."""
    mangles_object_arguments: bool = False
    """Arguments given as a mapping render as a Python repr (``{'key': 'value'}``) or as
    HTML-escaped JSON (``&#34;``), not as the JSON a model writes: the template concatenates them
    as text (``'"arguments": ' ~ arguments``)."""
    content_parts: bool = False
    """Message text renders only as a list of text parts (``[{"type": "text", ...}]``): the
    template iterates or indexes ``content`` (Idefics 3, Command A Reasoning)."""


_PROBE_USER = {"role": "user", "content": "probe-user-text"}
_PROBE_ARGS = {"probe_key": "probe-value-7"}
_PROBE_ARGS_JSON = json.dumps(_PROBE_ARGS)
_MANGLED_ARGS = (repr(_PROBE_ARGS), "&#34;probe_key&#34;", "&quot;probe_key&quot;")
"""How a mapping shows when a template prints it as text: a Python repr, HTML-escaped JSON."""
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"probe_tool_{suffix}",
            "description": f"Probe tool {suffix}.",
            "parameters": {
                "type": "object",
                "properties": {"probe_key": {"type": "string"}},
                "required": ["probe_key"],
            },
        },
    }
    for suffix in ("one", "two")
]


def _probe_call(name: str, call_id: str, arguments: object) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _probe_turn(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """user, assistant with ``calls``, one tool result per call, then the generation prompt."""
    results = [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": call["function"]["name"],
            "content": f"probe-result-{i}",
        }
        for i, call in enumerate(calls)
    ]
    return [_PROBE_USER, {"role": "assistant", "content": None, "tool_calls": calls}, *results]


# Ids are 9 alphanumerics so Mistral templates, which validate them, accept the probes. Called
# names differ from the declared tools' names, so a declaration is never mistaken for a call.
_ONE_CALL = [_probe_call("probe_call_one", "probe0001", _PROBE_ARGS)]
_TWO_CALLS = [*_ONE_CALL, _probe_call("probe_call_two", "probe0002", _PROBE_ARGS)]
_STRING_CALL = [_probe_call("probe_call_one", "probe0001", _PROBE_ARGS_JSON)]


# ---------------------------------------------------------------------------------------------
# The public class


class ChatTemplate:
    """A chat template, compiled once, rendered in the sandbox.

    ``now`` is the clock ``strftime_now`` reads (templates that print today's date); pin it to keep
    prompts, and the KV cache they prefix, stable. ``budget`` bounds every render (see
    :class:`~tooldialect.RenderBudget`); ``None`` takes the ambient one (the default, or what the
    handler set up).
    """

    def __init__(
        self,
        source: str,
        *,
        bos_token: str = "",
        eos_token: str = "",
        now: Callable[[], datetime] = datetime.now,
        budget: RenderBudget | None = None,
    ) -> None:
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.now = now
        self.budget = budget
        check_source(source, budget)
        self._template = _compile(source)
        self._copies_shared = False
        self._probe_content: ContentForm = "text"  # the text form probes use (see capabilities)

    def __repr__(self) -> str:
        head = self.source[:40] + ("..." if len(self.source) > 40 else "")
        return f"ChatTemplate({head!r}, bos_token={self.bos_token!r}, eos_token={self.eos_token!r})"

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any] | ToolDef] | None = None,
        add_generation_prompt: bool = True,
        **template_kwargs: Any,
    ) -> str:
        """Render ``messages`` (normalised first) as ``tokenizer.apply_chat_template`` would.

        ``template_kwargs`` (``enable_thinking=False``, ``date_string=...``) become template
        variables and override ``bos_token``/``eos_token``. Raises
        :class:`~tooldialect.TemplateError` when the template raises, quoting its message, and
        :class:`~tooldialect.TemplateSecurityError` when it reaches outside the sandbox.
        """
        return self._render(
            normalize_messages(
                messages,
                arguments=self.argument_form,
                call_content=self.call_content_form,
                content="parts" if self.capabilities.content_parts else "text",
            ),
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs=template_kwargs,
        )

    def _render(
        self,
        messages: list[Message],
        *,
        tools: Sequence[Mapping[str, Any] | ToolDef] | None,
        add_generation_prompt: bool,
        template_kwargs: Mapping[str, Any],
    ) -> str:
        context: dict[str, Any] = {
            "strftime_now": self._strftime_now,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **{k: v if is_helper(v) else _plain(v) for k, v in template_kwargs.items()},
            "messages": messages,
            "tools": _plain(list(tools)) if tools is not None and self._copies_shared else None,
            "documents": None,
            "add_generation_prompt": add_generation_prompt,
        }
        if tools is not None and not self._copies_shared:
            context["tools"] = [t if _shared_top(t) else _plain(t) for t in tools]
        try:
            with _template_errors():
                return render_budgeted(self._template, context, self.budget)
        except SharedMutation:
            self._copies_shared = True  # this template changes its tools: copy them from now on
            context["tools"] = _plain(list(tools or ()))
            with _template_errors():
                return render_budgeted(self._template, context, self.budget)

    def _strftime_now(self, format: str) -> str:
        return self.now().strftime(format)

    @functools.cached_property
    def variables(self) -> frozenset[str]:
        """The variables the template reads and does not set itself (``messages``, ``tools``,
        ``functions`` ...), found from its syntax tree once per template text."""
        return _read_variables(self.source)

    @functools.cached_property
    def argument_form(self) -> ArgumentForm:
        """How :meth:`render` passes tool-call arguments: ``"object"`` unless the template can only
        render JSON-string arguments (Functionary v3.2), or prints a mapping as something other than
        JSON (a Python repr, escaped JSON) where a JSON string shows verbatim; then ``"string"``."""
        caps = self.capabilities
        if caps.string_arguments and (not caps.object_arguments or caps.mangles_object_arguments):
            return "string"
        return "object"

    @functools.cached_property
    def call_content_form(self) -> CallContentForm:
        """``"none"`` when the template renders tool calls only for ``content: None``, else
        ``"empty"`` (``None`` prints "None" or breaks string operations in many templates)."""
        return "none" if self.capabilities.calls_need_none_content else "empty"

    @functools.cached_property
    def capabilities(self) -> TemplateCapabilities:
        """What this template renders (see :class:`TemplateCapabilities`), probed once per
        template text and special tokens, however many ``ChatTemplate`` objects share them."""
        return _capabilities(self.source, self.bos_token, self.eos_token, self.budget)

    def _probe_capabilities(self) -> TemplateCapabilities:
        """Call probes run with arguments as objects and again as JSON strings, so a template that
        only takes one form (Functionary v3.2 concatenates strings) still shows its tool calls;
        all probes run with text as strings, or as parts where only that renders it."""
        self._probe_content = self._content_form()
        system = self._probe([{"role": "system", "content": "probe-system-text"}, _PROBE_USER])
        tools = self._probe([_PROBE_USER], tools=_PROBE_TOOLS)
        one = self._probe(_probe_turn(_ONE_CALL), tools=_PROBE_TOOLS)
        one_string = self._probe(
            _probe_turn(_STRING_CALL), tools=_PROBE_TOOLS, arguments="as_given"
        )
        two = self._probe(_probe_turn(_TWO_CALLS), tools=_PROBE_TOOLS)
        two_string = self._probe(_probe_turn(_TWO_CALLS), tools=_PROBE_TOOLS, arguments="string")
        calls = one + one_string
        none_content = False
        if "probe_call_one" not in calls:
            # Some templates render calls only for `content is none` (DeepSeek R1 Distill Llama).
            one_none = self._probe(_probe_turn(_ONE_CALL), tools=_PROBE_TOOLS, call_content="none")
            string_none = self._probe(
                _probe_turn(_STRING_CALL),
                tools=_PROBE_TOOLS,
                arguments="as_given",
                call_content="none",
            )
            none_content = "probe_call_one" in one_none + string_none
            if none_content:
                one, one_string = one_none, string_none
                calls = one + one_string
        return TemplateCapabilities(
            system_role="probe-system-text" in system,
            tools="probe_tool_one" in tools,
            tool_calls="probe_call_one" in calls,
            tool_role="probe-result-0" in calls,
            parallel_calls=any(
                "probe_call_two" in r and "probe_call_one" in r for r in (two, two_string)
            ),
            object_arguments="probe-value-7" in one,
            string_arguments=_PROBE_ARGS_JSON in one_string,
            reasoning=self._reads_reasoning(),
            calls_need_none_content=none_content,
            mangles_object_arguments=any(form in one for form in _MANGLED_ARGS),
            content_parts=self._probe_content == "parts",
        )

    def _content_form(self) -> ContentForm:
        """``"parts"`` when text as parts renders more of the probes (a user turn's text, a call
        turn at all) than text as strings; ``"text"`` otherwise."""

        forms: tuple[tuple[list[dict[str, Any]], ArgumentForm], ...] = (
            (_ONE_CALL, "object"),
            (_STRING_CALL, "as_given"),
        )

        def score(form: ContentForm) -> int:
            user = "probe-user-text" in self._probe([_PROBE_USER], content=form)
            call = any(
                self._probe(_probe_turn(c), tools=_PROBE_TOOLS, arguments=a, content=form)
                for c, a in forms
            )
            return user + call

        text = score("text")
        return "parts" if text < 2 and score("parts") > text else "text"

    def _probe(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        arguments: ArgumentForm = "object",
        call_content: CallContentForm = "empty",
        content: ContentForm | None = None,
        add_generation_prompt: bool = True,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> str:
        """The render, or ``""`` when the template refuses the probe.

        Without tools, ``tools=[]`` is tried after ``None``: tool_use variants (Hermes 2 Pro,
        Command R+) iterate ``tools`` unconditionally. Variables a serving stack passes by
        convention (``conventions``: FireFunction's ``functions``) are filled, as prompts get them.
        """
        normalized = normalize_messages(
            messages,
            arguments=arguments,
            call_content=call_content,
            content=content or self._probe_content,
        )
        given = template_kwargs or {}
        for tools_value in (tools,) if tools is not None else (None, []):
            filled = conventional_variables(
                self.variables, tools_value, given, today=lambda: "2025-01-01"
            )
            try:
                return self._render(
                    normalized,
                    tools=tools_value,
                    add_generation_prompt=add_generation_prompt,
                    template_kwargs={**filled, **given},
                )
            except RenderBudgetError:
                raise  # a probe past the budget is not a "no": the template is hostile or huge
            except TemplateError:
                continue
        return ""

    def _reads_reasoning(self) -> bool:
        answered = [
            _PROBE_USER,
            {"role": "assistant", "content": "probe-answer", "reasoning_content": "probe-thought"},
        ]
        if "probe-thought" in self._probe(answered, add_generation_prompt=False):
            return True
        for flag in ("enable_thinking", "thinking"):
            on = self._probe([_PROBE_USER], template_kwargs={flag: True})
            off = self._probe([_PROBE_USER], template_kwargs={flag: False})
            if on != off:
                return True
        return False


@functools.lru_cache(maxsize=64)
def _capabilities(
    source: str, bos_token: str, eos_token: str, budget: RenderBudget | None
) -> TemplateCapabilities:
    # Probes never print the date, so the clock does not matter here.
    probe = ChatTemplate(source, bos_token=bos_token, eos_token=eos_token, budget=budget)
    return probe._probe_capabilities()


def _shared_top(tool: object) -> bool:
    """A tool that is shared template data (``shared.tool_form``), or a shallow copy of one."""
    if is_shared(tool):
        return True
    if type(tool) is not dict or not any(is_shared(v) for v in tool.values()):
        return False
    return all(type(k) is str for k in tool) and all(
        is_shared(v) or type(v) in (str, int, float, bool) or v is None for v in tool.values()
    )


@contextmanager
def _template_errors() -> Iterator[None]:
    """Map whatever a render raises to the library's error tree, keeping the template's message."""
    try:
        yield
    except SharedMutation:
        raise
    except SecurityError as exc:
        raise TemplateSecurityError(
            f"chat template tried to escape the sandbox and was stopped: {exc}; "
            "the template is unsafe, use another one"
        ) from exc
    except jinja2.TemplateError as exc:
        raise TemplateError(f"chat template raised: {exc.message or exc!s}") from exc
    except TemplateError:
        raise
    except Exception as exc:
        # A template's own bug (e.g. `None + "x"`, a bad index) surfaces as a plain Python error.
        raise TemplateError(f"chat template failed: {type(exc).__name__}: {exc}") from exc
