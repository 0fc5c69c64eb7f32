"""The render budget: every chat-template render is bounded in steps, characters, depth and time.

A chat template is a program from a stranger. The sandbox stops it reaching files or internals;
this module stops it running forever or building gigabytes (``range`` loops nested a few deep,
``'x' * 10**10``, a string doubled in a loop, a macro calling itself twice per level, a ``join`` of
a huge list). The bounds are counted, not sampled, so a hostile template stops after a fixed amount
of work whatever the machine's speed:

* **steps**: loop iterations, calls (functions, macros, methods) and filter applications;
* **chars**: characters (and container items) the render builds: output, ``~`` concatenations,
  operator results and what calls and filters return. Amplifying operations (``'x' * n``,
  ``center(n)``, ``replace``, ``join``, ``%``/``format`` widths, ``batch``/``slice`` fills) are
  checked *before* they run, from the sizes they would produce;
* **depth**: nested calls (recursive macros), checked before Python's own recursion limit;
* **seconds**: wall time, checked at every step and every piece of output, a backstop only;
* **source chars**: the template's size, checked before compiling.

How: :class:`BudgetedSandbox` compiles templates with a code generator that routes every output
and every ``~`` through the budget, wraps each ``for`` loop's iterable in a counting proxy (a parse
rewrite), intercepts ``*``, ``**``, ``+`` and ``%`` (which also stops the compiler from folding
``'x' * 10**10`` at compile time) and counts every call. Filters are wrapped to take the context,
so none is folded at compile time either. The running render's state lives in a ``ContextVar``:
templates cannot see or reset it, and threads do not share it.
"""

from __future__ import annotations

import contextvars
import functools
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.nodes as nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import _PassArg, generate_lorem_ipsum, pass_context

from ..errors import OptionError, RenderBudgetError

__all__ = [
    "DEFAULT_BUDGET",
    "BudgetedSandbox",
    "RenderBudget",
    "RenderUsage",
    "check_source",
    "current_budget",
    "last_usage",
    "render_budgeted",
    "using_budget",
]


@dataclass(frozen=True)
class RenderBudget:
    """Bounds on one chat-template render. Pass ``ToolChatHandler(render_budget=...)`` to change.

    The defaults are about 20 times what the largest vendored real template needs for 100 tools
    and 200 messages (``tests/test_template_budget.py`` measures it), and low enough that a
    hostile template stops in a fraction of a second.
    """

    max_steps: int = 250_000
    """Work in one render: a loop iteration, an operator or a filter is one step, a call four,
    and filters and ``str`` methods add one per 256 characters of input."""
    max_chars: int = 50_000_000
    """Characters (and container items) one render may build, output included."""
    max_depth: int = 100
    """Nested calls (macros calling macros, recursive loops)."""
    max_seconds: float = 5.0
    """Wall time of one render (a backstop: the counted bounds normally trip first)."""
    max_source_chars: int = 1_000_000
    """Size of the template source, checked before compiling."""
    max_int_digits: int = 4300
    """Decimal digits of an integer a template computes (Python's own str-conversion limit)."""

    def __post_init__(self) -> None:
        for name in (
            "max_steps",
            "max_chars",
            "max_depth",
            "max_seconds",
            "max_source_chars",
            "max_int_digits",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise OptionError(f"RenderBudget.{name} must be a positive number, got {value!r}")


DEFAULT_BUDGET = RenderBudget()

_AMBIENT: contextvars.ContextVar[RenderBudget] = contextvars.ContextVar(
    "tooldialect_render_budget", default=DEFAULT_BUDGET
)
"""The budget for renders that were given none (detection and derivation probes, ``ChatTemplate``
objects built without ``budget=``); the handler scopes its own here while it sets a model up."""


def current_budget() -> RenderBudget:
    """The budget a render started now without an explicit one gets."""
    return _AMBIENT.get()


@contextmanager
def using_budget(budget: RenderBudget | None) -> Iterator[None]:
    """Make ``budget`` the ambient one inside the ``with`` block (``None`` keeps the current)."""
    if budget is None:
        yield
        return
    token = _AMBIENT.set(budget)
    try:
        yield
    finally:
        _AMBIENT.reset(token)


def _fail(bound: str, budget: RenderBudget, what: str) -> RenderBudgetError:
    limit = getattr(budget, bound)
    return RenderBudgetError(
        f"chat template exceeded its render budget: {what} (RenderBudget.{bound}={limit:,}). "
        f"A hostile or broken template does this; if you trust it, raise the bound: "
        f"ToolChatHandler(render_budget=RenderBudget({bound}=...))",
        bound=bound,
        limit=limit,
    )


def check_source(source: str, budget: RenderBudget | None = None) -> None:
    """Refuse a template source larger than the budget allows, before compiling it."""
    budget = budget or current_budget()
    if len(source) > budget.max_source_chars:
        raise _fail(
            "max_source_chars", budget, f"the template source has {len(source):,} characters"
        )


_SIZED_RESULTS = (str, list, tuple, dict, set, frozenset, bytes)
_CLOCK_STEPS = 32
_CLOCK_CHARS = 1 << 15
"""The clock is read once per this many steps or characters (at most; and on every call that
charges more): a read per output piece and filter was a third of a 250-tool render. The work
between two reads stays a few hundred small operations, microseconds."""


class _State:
    """The running render's counters."""

    __slots__ = ("budget", "chars", "clock_chars", "clock_steps", "deadline", "depth", "steps")

    def __init__(self, budget: RenderBudget) -> None:
        self.budget = budget
        self.steps = 0
        self.chars = 0
        self.depth = 0
        self.deadline = time.monotonic() + budget.max_seconds
        self.clock_steps = 0
        self.clock_chars = 0

    def step(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.budget.max_steps:
            raise _fail("max_steps", self.budget, "too many loop iterations, calls and filters")
        if self.steps >= self.clock_steps:
            self.clock_steps = self.steps + _CLOCK_STEPS
            self.tick()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _fail("max_seconds", self.budget, "the render ran too long")

    def charge(self, n: int) -> None:
        self.chars += n
        if self.chars > self.budget.max_chars:
            raise _fail("max_chars", self.budget, "the render built too much text")
        if self.chars >= self.clock_chars:
            self.clock_chars = self.chars + _CLOCK_CHARS
            self.tick()

    def allow(self, n: int, what: str) -> None:
        """Refuse, before it happens, an operation that would build ``n`` characters or items."""
        if self.chars + n > self.budget.max_chars:
            raise _fail("max_chars", self.budget, f"{what} would build {n:,} characters or items")

    def charge_value(self, value: object) -> None:
        # a str first (most filters' result): the union check is slower
        if type(value) is str or isinstance(value, _SIZED_RESULTS):
            self.charge(len(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            self.check_int(value)

    def check_int(self, value: int) -> None:
        if _digits(value) > self.budget.max_int_digits:
            raise _fail("max_int_digits", self.budget, "the render computed a huge integer")


_STATE: contextvars.ContextVar[_State | None] = contextvars.ContextVar(
    "tooldialect_render_state", default=None
)


def _state() -> _State:
    state = _STATE.get()
    if state is None:  # a hook outside a render (never expected): bound it all the same
        state = _State(current_budget())
        _STATE.set(state)
    return state


@dataclass(frozen=True)
class RenderUsage:
    """What one render used of its budget (see :func:`last_usage`)."""

    steps: int
    """Loop iterations + calls + filter applications."""
    chars: int
    """Characters and container items built, output included."""
    seconds: float
    """Wall time."""


_LAST_USAGE: contextvars.ContextVar[RenderUsage | None] = contextvars.ContextVar(
    "tooldialect_render_usage", default=None
)


def last_usage() -> RenderUsage | None:
    """What the latest render in this thread/context used (for sizing a budget)."""
    return _LAST_USAGE.get()


def render_budgeted(
    template: jinja2.Template, context: Mapping[str, Any], budget: RenderBudget | None
) -> str:
    """``template.render(context)`` under ``budget`` (the ambient one when ``None``)."""
    state = _State(budget or current_budget())
    token = _STATE.set(state)
    started = time.monotonic()
    environment = template.environment
    try:
        # Template.render, minus the traceback rewrite on budget errors: rewriting a deep stack
        # (a recursive macro stopped at max_depth) costs more than the render did.
        return environment.concat(template.root_render_func(template.new_context(dict(context))))
    except RenderBudgetError:
        raise
    except Exception:
        environment.handle_exception()
        raise  # handle_exception always raises; this keeps type checkers informed
    finally:
        _STATE.reset(token)
        _LAST_USAGE.set(RenderUsage(state.steps, state.chars, time.monotonic() - started))


def _digits(value: int) -> int:
    return int(abs(value).bit_length() * 0.30103) + 1


def _size(value: object) -> int:
    if type(value) in (str, dict, list, tuple):  # before the ABC check, which is slow
        return len(value)  # type: ignore[arg-type]
    return len(value) if isinstance(value, Sized) else 0


# ---------------------------------------------------------------------------------------------
# Pre-checks: sizes an operation would build, computed from its operands


_PRINTF_WIDTH = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _check_printf(state: _State, fmt: str, args: object) -> None:
    """``fmt % args``: refuse widths/precisions (literal or ``*``) past the char budget."""
    values = args if isinstance(args, tuple) else (args,)
    for match in _PRINTF_WIDTH.finditer(fmt):
        for group in match.groups():
            if group == "*":
                for value in values:
                    if isinstance(value, int) and not isinstance(value, bool):
                        state.allow(abs(value), "a '%*' format")
            elif group:
                state.allow(int(group), "a '%' format width")


def _check_format_spec(state: _State, fmt: str, args: Iterable[object]) -> None:
    """``fmt.format(...)``: literal widths in the specs, and any int that a nested spec may use."""
    nested = False
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # str.format will raise the same error itself
    for _, _, spec, _ in parsed:
        if not spec:
            continue
        nested = nested or "{" in spec
        for digits in re.findall(r"\d+", spec):
            state.allow(int(digits), "a format width")
    if nested:
        for value in args:
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if isinstance(value, int) and not isinstance(value, bool):
                state.allow(abs(value), "a nested format width")


def _int_arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> int:
    value = args[index] if len(args) > index else kwargs.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _join_size(items: list[Any], sep: str) -> int:
    return sum(_size(item) or 8 for item in items) + len(sep) * max(len(items) - 1, 0)


def _replace_size(text: str, old: object, new: object, count: object) -> int:
    if not isinstance(old, str) or not isinstance(new, str):
        return len(text)
    hits = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def _check_str_method(
    state: _State, text: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Pre-check the ``str`` methods that can amplify; returns the (possibly materialised) args."""
    if name in ("center", "ljust", "rjust", "zfill"):
        state.allow(_int_arg(args, kwargs, 0, "width"), f"str.{name}")
    elif name == "expandtabs":
        state.allow(text.count("\t") * _int_arg(args, kwargs, 0, "tabsize"), "str.expandtabs")
    elif name == "replace":
        old, new = [*args, None, None][:2]
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        state.allow(_replace_size(text, old, new, count), "str.replace")
    elif name == "join" and args:
        items = _bounded_list(state, args[0])
        state.allow(_join_size(items, text), "str.join")
        args = (items, *args[1:])
    return args


def _format_values(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    values = list(args) + list(kwargs.values())
    if len(args) == 1 and isinstance(args[0], Mapping):  # format_map
        values += list(args[0].values())
    return values


def _bounded_list(state: _State, iterable: object) -> list[Any]:
    """``list(iterable)``, counting each item as a step (a generator may be endless)."""
    if isinstance(iterable, list | tuple | str | dict | set | frozenset):
        return list(iterable)
    out: list[Any] = []
    for item in iterable:  # type: ignore[attr-defined]
        state.step()
        out.append(item)
    return out


# ---------------------------------------------------------------------------------------------
# Loops


class _CountedIterable:
    """A loop's iterable that counts each iteration as a step; keeps ``len`` for ``loop.length``."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[Any]:
        state = _state()
        step = state.step
        for item in self._inner:
            step()
            yield item

    def __len__(self) -> int:
        return len(self._inner)


@pass_context
def _loop_filter(_context: Any, iterable: Any) -> Any:
    if isinstance(iterable, jinja2.Undefined):
        return iterable  # keeps Jinja's own "undefined is not iterable" behaviour
    return _CountedIterable(iterable)


_LOOP_FILTER = "td_budget_loop"

_CALL_STEPS = 4
"""A call through the sandbox (vetting, context passing, a macro's frame) costs about as much
Python work as four loop iterations; it is charged so, which keeps a call-heavy hostile template
(a macro calling itself twice per level) as quick to stop as a loop-heavy one."""

_CHARS_PER_STEP = 256
"""A filter or ``str`` method over text costs one step per this many characters of input: most
are linear Python work (``striptags``, ``urlize``, ``wordwrap``) that a big input makes slow."""


# ---------------------------------------------------------------------------------------------
# Filters and globals


_AMPLIFYING = frozenset(
    {"center", "indent", "join", "replace", "format", "batch", "slice", "wordwrap", "sum"}
)
"""Filters :func:`_check_filter` pre-checks (``tojson`` too, when given arguments); the others,
and a bare ``tojson`` (every tool of a tool list), skip the call."""


def _check_filter(
    state: _State, name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, tuple[Any, ...]]:
    """Pre-check the filters that can amplify; returns the (possibly materialised) value."""
    if name == "center":
        state.allow(_int_arg(args, kwargs, 0, "width"), "the center filter")
    elif name == "indent":
        width = args[0] if args else kwargs.get("width", 4)
        unit = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        lines = str(value).count("\n") + 1
        state.allow(len(str(value)) + lines * unit, "the indent filter")
    elif name == "join":
        value = _bounded_list(state, value)
        sep = args[0] if args else kwargs.get("d", "")
        state.allow(_join_size(value, sep if isinstance(sep, str) else ""), "the join filter")
    elif name == "replace" and isinstance(value, str):
        count = args[2] if len(args) > 2 else kwargs.get("count")
        old, new = [*args, None, None][:2]
        state.allow(_replace_size(value, old, new, count), "the replace filter")
    elif name == "format" and isinstance(value, str):
        _check_printf(state, value, tuple(args) or dict(kwargs))
    elif name in ("batch", "slice"):
        state.allow(_int_arg(args, kwargs, 0, "linecount" if name == "batch" else "slices"), name)
    elif name == "wordwrap" and isinstance(value, str):
        wrap = args[2] if len(args) > 2 else kwargs.get("wrapstring")
        width = max(_int_arg(args, kwargs, 0, "width"), 1) if args or "width" in kwargs else 79
        extra = len(wrap) if isinstance(wrap, str) else 1
        state.allow(len(value) + (len(value) // width + 1) * extra, "the wordwrap filter")
        state.step(len(value) // width)  # textwrap does Python work per line
    elif name == "tojson":
        indent = args[1] if len(args) > 1 else kwargs.get("indent")
        width = len(indent) if isinstance(indent, str) else indent if isinstance(indent, int) else 0
        if width > 1024:
            state.allow(state.budget.max_chars + 1, f"tojson(indent={width})")
    elif name == "sum" and isinstance(value, list | tuple):
        sizes = [_size(item) for item in value]
        state.allow(sum(sizes) * len(sizes) // 2, "the sum filter over sequences")
    return value, args


def _wrap_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    pass_arg = _PassArg.from_obj(func)
    checked = name in _AMPLIFYING
    with_args = name == "tojson"  # pre-checked only when given arguments

    @pass_context
    @functools.wraps(func)
    def budgeted(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        state = _STATE.get() or _state()
        state.step(1 + _size(value) // _CHARS_PER_STEP)
        if checked or (with_args and (args or kwargs)):
            value, args = _check_filter(state, name, value, args, kwargs)
        if pass_arg is _PassArg.context:
            result = func(context, value, *args, **kwargs)
        elif pass_arg is _PassArg.eval_context:
            result = func(context.eval_ctx, value, *args, **kwargs)
        elif pass_arg is _PassArg.environment:
            result = func(context.environment, value, *args, **kwargs)
        else:
            result = func(value, *args, **kwargs)
        state.charge_value(result)
        return result

    # functools.wraps copied the wrapped filter's own pass marker; the wrapper always takes context
    budgeted.jinja_pass_arg = _PassArg.context  # type: ignore[attr-defined]
    return budgeted


def _range(*args: int) -> range:
    made = range(*args)
    state = _state()
    if len(made) > state.budget.max_steps:
        raise _fail("max_steps", state.budget, f"range() of {len(made):,} items")
    return made


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    _state().allow(n * max * 12, "lipsum()")
    return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


# ---------------------------------------------------------------------------------------------
# The environment and its code generator


class _BudgetCodeGenerator(CodeGenerator):
    """Routes every piece of output and every ``~`` concatenation through the budget."""

    def _output_const_repr(self, group: Iterable[Any]) -> str:
        return f"environment.td_emit({super()._output_const_repr(group)})"

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        self.write("environment.td_emit(")
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        super()._output_child_post(node, frame, finalize)
        self.write(")")

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.td_emit(")
        super().visit_Concat(node, frame)
        self.write(")")

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        self.td_reads: set[str] = set()
        super().visit_Template(node, frame)
        # the variables the template reads, found in the walk that writes its code: what
        # ``jinja2.meta.find_undeclared_variables`` would parse and walk the source again for
        if isinstance(self.environment, BudgetedSandbox):
            self.environment.td_variables = frozenset(self.td_reads)

    def enter_frame(self, frame: Frame) -> None:
        super().enter_frame(frame)
        # as jinja2.meta's TrackingCodeGenerator: names resolved from the context, not globals
        for action, param in frame.symbols.loads.values():
            if action == "resolve" and param not in self.environment.globals:
                self.td_reads.add(param)


_INTERCEPTED = frozenset({"*", "**", "+", "%"})


class BudgetedSandbox(SandboxedEnvironment):
    """A sandbox whose every render is bounded by the running :class:`RenderBudget`.

    Call :meth:`install_budget` after the filters and globals are set: it wraps them.
    """

    code_generator_class = _BudgetCodeGenerator
    intercepted_binops = _INTERCEPTED
    td_variables: frozenset[str] | None = None
    """The undeclared variables of the last template compiled in this environment."""

    def install_budget(self) -> None:
        """Wrap every filter and bound ``range``/``lipsum``; call once the environment is set up."""
        for name, func in list(self.filters.items()):
            self.filters[name] = _wrap_filter(name, func)
        self.filters[_LOOP_FILTER] = _loop_filter
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for loop in list(tree.find_all(nodes.For)):
            loop.iter = nodes.Filter(
                loop.iter, _LOOP_FILTER, [], [], None, None, lineno=loop.iter.lineno
            )
        return tree

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja's sandboxed ``str.format``, with widths checked against the budget first."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text: str = value.__self__
        inner = wrapped

        def budgeted(*args: Any, **kwargs: Any) -> str:
            _check_format_spec(_state(), text, _format_values(args, kwargs))
            return inner(*args, **kwargs)

        return budgeted

    @staticmethod
    def td_emit(value: Any) -> Any:
        """Count one piece of output (or one ``~`` result) against the budget."""
        state = _STATE.get() or _state()
        state.charge(len(value) if isinstance(value, str) else 1)
        return value

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        state = _state()
        state.step()
        _check_binop(state, operator_, left, right)
        result = super().call_binop(context, operator_, left, right)
        state.charge_value(result)
        return result

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        state = _state()
        owner = getattr(obj, "__self__", None)
        state.step(_CALL_STEPS + (len(owner) // _CHARS_PER_STEP if isinstance(owner, str) else 0))
        method = getattr(obj, "__name__", "")
        if isinstance(owner, str):
            args = _check_str_method(state, owner, method, args, kwargs)
        elif isinstance(owner, list | dict | set) and method in ("extend", "update"):
            state.charge(sum(_size(a) for a in args) + len(kwargs))
        state.depth += 1
        try:
            if state.depth > state.budget.max_depth:
                raise _fail("max_depth", state.budget, "calls nested too deep (recursion?)")
            result = super().call(context, obj, *args, **kwargs)
        finally:
            state.depth -= 1
        state.charge_value(result)
        if isinstance(owner, list | dict | set) and len(owner) > state.budget.max_chars:
            raise _fail("max_chars", state.budget, f"a {type(owner).__name__} grew too large")
        return result


def _check_binop(state: _State, op: str, left: Any, right: Any) -> None:
    seq = (str, list, tuple)
    if op == "*":
        if isinstance(left, seq) and isinstance(right, int):
            state.allow(len(left) * max(right, 0), "'*' on a sequence")
        elif isinstance(right, seq) and isinstance(left, int):
            state.allow(len(right) * max(left, 0), "'*' on a sequence")
        elif (
            _is_int(left)
            and _is_int(right)
            and _digits(left) + _digits(right) > state.budget.max_int_digits + 1
        ):
            raise _fail("max_int_digits", state.budget, "'*' would build a huge integer")
    elif op == "**" and _is_int(left) and _is_int(right) and abs(left) > 1 and right > 0:
        if abs(left).bit_length() * right * 0.30103 > state.budget.max_int_digits:
            raise _fail("max_int_digits", state.budget, "'**' would build a huge integer")
    elif op == "+" and isinstance(left, seq) and isinstance(right, seq):
        state.allow(len(left) + len(right), "'+'")
    elif op == "%" and isinstance(left, str):
        _check_printf(state, left, right)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
