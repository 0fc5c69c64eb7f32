"""Tools from Python functions: ``@tool`` and ``Tool.from_function(fn)``.

The arguments' JSON Schema comes from the type hints through pydantic (``Annotated``, ``Literal``,
enums, nested models, ``Optional``, defaults), the description and per-parameter docs from the
docstring (Google, NumPy or Sphinx style), and pydantic validates the model's arguments before the
function runs. Everything that cannot become a tool (``*args``, an annotation pydantic cannot put
in a schema, a bad name, two tools of one name) raises ``ToolSpecError`` when the tool is defined,
not when the model first calls it.

A ``Tool`` is also an OpenAI tool dict away (``tool.to_openai()``), so it works with a plain
``create_chat_completion(tools=[...])`` as well as with ``tooldialect.Agent``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_json

from ..errors import ToolSpecError
from ..tool_defs import ToolDef, normalize_tools
from .docstrings import parse_docstring

__all__ = [
    "Tool",
    "ToolArgumentsError",
    "ToolResult",
    "check_unique",
    "decode_arguments",
    "result_text",
    "run_to_completion",
    "tool",
]


class ToolArgumentsError(ToolSpecError):
    """The arguments a model sent do not fit the tool's schema (the message says how)."""


@dataclass(frozen=True)
class ToolResult:
    """A tool's value when it is more than the text the model reads: a failure the tool reports
    itself (``is_error``), parts a text-only model cannot see (images, audio), the source object.

    Return one from a tool to control the text and the ``CallFinished.error`` code; MCP tools
    (``tooldialect.apps.mcp``) always return one.
    """

    text: str
    """What the model is sent as the ``role: "tool"`` message."""
    is_error: bool = False
    """The call failed; ``error`` says how (``CallFinished.error``)."""
    error: str | None = None
    """A short code for the failure (``tool_error``, ``timeout``, ``server_down``...)."""
    structured: Any = None
    """A structured (JSON) value, where the tool returned one."""
    media: tuple[Any, ...] = ()
    """Parts kept for the caller only (an MCP ``ImageContent``, ``AudioContent``...)."""
    raw: Any = None
    """The object the result was made from (an MCP ``CallToolResult``)."""


def decode_arguments(name: str, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A model's ``arguments`` for tool ``name`` as a JSON object (empty or ``None``: ``{}``).

    Raises ``ToolArgumentsError`` saying what is wrong, in words a model can act on.
    """
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise ToolArgumentsError(
                f"arguments for {name!r} are not valid JSON ({exc}): {arguments!r}"
            ) from exc
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(f"arguments for {name!r} must be a JSON object, got {arguments!r}")
    return dict(arguments)


class Tool:
    """A Python function with the JSON Schema of its arguments, callable from a model's call.

    ``Tool(...)`` wraps an already-built definition; use :meth:`from_function` or ``@tool``.
    Calling the tool object calls the function itself, so decorated functions stay usable.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        definition: ToolDef,
        arguments_model: type[BaseModel],
        positional: tuple[str, ...] = (),
    ) -> None:
        self.fn = fn
        """The wrapped function (sync or async)."""
        self.definition = definition
        """Name, description and parameters schema, validated like any OpenAI tool."""
        self.arguments_model = arguments_model
        """The pydantic model that validates the arguments (fields aliased to parameter names)."""
        self._positional = positional
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        """The function name the model calls."""
        return self.definition.name

    @property
    def description(self) -> str:
        """What the model is told the tool does."""
        return self.definition.description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments object."""
        return self.definition.parameters

    @property
    def is_async(self) -> bool:
        """True when the function is a coroutine function."""
        return inspect.iscoroutinefunction(self.fn)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``{"type": "function", "function": {...}}`` form."""
        return self.definition.to_openai()

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """Build a tool from ``fn``'s signature, type hints and docstring.

        ``name`` defaults to ``fn.__name__``; ``description`` to the docstring's text before
        its first section. Raises ``ToolSpecError`` for what cannot become a tool.
        """
        if isinstance(fn, Tool):
            fn = fn.fn
        if not callable(fn):
            raise ToolSpecError(f"a tool must be a function, got {fn!r}")
        tool_name: str = name or str(getattr(fn, "__name__", ""))
        where = f"tool {tool_name!r}"
        if tool_name == "<lambda>":
            raise ToolSpecError(f"{where}: a lambda has no usable name; pass name='...'")
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise ToolSpecError(f"{where}: cannot read the signature of {fn!r}: {exc}") from exc
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception as exc:  # a forward reference that does not resolve, a bad annotation
            raise ToolSpecError(
                f"{where}: cannot resolve the type hints of {fn!r}: {exc}; define the types "
                "the annotations name before the function, at module level"
            ) from exc
        doc = parse_docstring(inspect.getdoc(fn))
        fields: dict[str, Any] = {}
        positional: list[str] = []
        for index, param in enumerate(signature.parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                star = "*" if param.kind == param.VAR_POSITIONAL else "**"
                raise ToolSpecError(
                    f"{where}: parameter {star}{param.name} cannot be described to a model; "
                    "give every argument its own named, annotated parameter"
                )
            if param.name not in hints:
                raise ToolSpecError(
                    f"{where}: parameter {param.name!r} has no type annotation; annotate it "
                    "(use typing.Any to accept any JSON value)"
                )
            if param.kind == param.POSITIONAL_ONLY:
                positional.append(param.name)
            default = ... if param.default is param.empty else param.default
            info = Field(default, alias=param.name, description=doc.params.get(param.name))
            # internal field names keep parameters such as `json`, `schema` or `model_x` from
            # clashing with BaseModel's own attributes; the schema uses the aliases
            fields[f"p{index}"] = (hints[param.name], info)
        model_name = "".join(part.capitalize() for part in _words(tool_name)) or "Tool"
        try:
            model = create_model(
                f"{model_name}Arguments",
                __config__=ConfigDict(extra="forbid", populate_by_name=False),
                **fields,
            )
            schema = model.model_json_schema(by_alias=True)
        except Exception as exc:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema...
            raise ToolSpecError(
                f"{where}: an annotation cannot be turned into a JSON Schema: {exc}. Use JSON "
                "types: str, int, float, bool, list, dict, Literal, enums, pydantic models"
            ) from exc
        schema = _clean(schema)
        text = description if description is not None else doc.description
        definition = normalize_tools(
            [
                {
                    "type": "function",
                    "function": {"name": tool_name, "description": text, "parameters": schema},
                }
            ]
        )[0]
        return cls(fn, definition, cast("type[BaseModel]", model), tuple(positional))

    # ---- running ---------------------------------------------------------------------------

    def validate(
        self, arguments: str | Mapping[str, Any] | None
    ) -> tuple[list[Any], dict[str, Any]]:
        """Decode and validate a model's ``arguments`` into ``(args, kwargs)`` for the function.

        Raises ``ToolArgumentsError`` saying what is wrong, in words a model can act on.
        """
        try:
            validated = self.arguments_model.model_validate(decode_arguments(self.name, arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            raise ToolArgumentsError(f"invalid arguments for {self.name!r}: {problems}") from exc
        values = {
            info.alias or key: getattr(validated, key)
            for key, info in type(validated).model_fields.items()
        }
        args = [values.pop(n) for n in self._positional]
        return args, values

    def run(self, arguments: str | Mapping[str, Any] | None) -> Any:
        """Validate ``arguments`` and call the function (an async one is run to completion)."""
        args, kwargs = self.validate(arguments)
        result = self.fn(*args, **kwargs)
        if inspect.isawaitable(result):
            return run_to_completion(result)
        return result

    async def arun(self, arguments: str | Mapping[str, Any] | None) -> Any:
        """Validate ``arguments`` and await the function (a sync one is called directly)."""
        args, kwargs = self.validate(arguments)
        result = self.fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def run_to_completion(awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` from sync code, also where a loop already runs (a notebook)."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # inside a running loop (a notebook): finish it on a private loop in a worker thread
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


def _words(name: str) -> list[str]:
    return [w for w in name.replace("-", "_").replace(".", "_").replace(":", "_").split("_") if w]


def _clean(schema: Any, *, in_properties: bool = False) -> Any:
    """Drop pydantic's generated ``title`` annotations (noise in a small model's prompt); a
    property that happens to be named ``title`` is kept."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and not in_properties and isinstance(value, str):
                continue
            nested = key in ("properties", "$defs", "definitions")
            out[key] = (
                {k: _clean(v) for k, v in value.items()}
                if nested and isinstance(value, dict)
                else _clean(value)
            )
        return out
    if isinstance(schema, list):
        return [_clean(v) for v in schema]
    return schema


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: ``@tool`` or ``@tool(name=..., description=...)`` turns a function into a
    :class:`Tool` (see :meth:`Tool.from_function`)."""
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(f, name=name, description=description)

    return wrap


def check_unique(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Tools by name; two tools of one name raise ``ToolSpecError``."""
    by_name: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise ToolSpecError(
                f"expected a Tool (use @tooldialect.tool or Tool.from_function), got {t!r}"
            )
        if t.name in by_name:
            raise ToolSpecError(
                f"two tools are named {t.name!r} ({by_name[t.name].fn!r} and {t.fn!r}); "
                "rename one with @tool(name='...')"
            )
        by_name[t.name] = t
    return by_name


def result_text(value: Any) -> str:
    """A tool's return value as the text of a ``role: "tool"`` message: strings as they are,
    everything else as JSON (pydantic models, dataclasses, lists...); a :class:`ToolResult` as its
    ``text``."""
    if isinstance(value, str):
        return value
    if isinstance(value, ToolResult):
        return value.text
    try:
        return to_json(value, fallback=str).decode()
    except Exception:  # an object pydantic cannot serialise even with the fallback
        return str(value)
