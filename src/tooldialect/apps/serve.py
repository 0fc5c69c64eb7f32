"""``tooldialect serve``: llama-cpp-python's own OpenAI-compatible server, with this handler.

Plain ``python -m llama_cpp.server`` never imports tooldialect, so ``chat_format="tooldialect"``
is unknown there. This launcher registers the handler, then starts that same server
(``llama_cpp.server.app.create_app`` under uvicorn) with its own settings and CLI parsing: every
``llama_cpp.server`` flag and ``--config_file`` passes through, and ``chat_format`` defaults to
``tooldialect``.

One thin layer sits in front of the server (``RequestRewrite``, an ASGI middleware). The server's
pydantic request model rejects some OpenAI shapes and silently drops keys it does not declare;
the layer rewrites the first into forms it takes and carries the second to the handler:

* ``response_format={"type": "json_schema", "json_schema": {"schema": S}}`` becomes
  llama-cpp-python's own ``{"type": "json_object", "schema": S}``;
* ``role: "developer"`` messages become ``role: "system"``; an assistant tool-call turn's
  ``content: null`` is dropped; text-part lists in system, assistant and tool messages are joined;
* ``max_completion_tokens`` becomes ``max_tokens`` (when that is absent);
* ``tool_choice``, ``chat_template_kwargs``, ``parallel_tool_calls`` and ``reasoning_effort`` are
  lifted out of the body and reach the handler through a context variable
  (``RequestExtrasHandler``): the server's model drops the last three and rejects some
  ``tool_choice`` forms the handler takes (``allowed_tools``, ``"any"``, a bare tool name), so
  every form goes to the handler's one reader of it (``tool_defs.normalize_tool_choice``);
* a non-streamed reply goes out as the handler made it (the server's response model would drop
  ``reasoning_content`` and ``usage.prompt_tokens_details``);
* a request the library refuses (malformed history, a message no template renders, a tool
  choice the dialect cannot force: ``CLIENT_ERRORS``) is answered 400 with the error's text, as
  an OpenAI ``invalid_request_error`` naming the field in ``param``, where the server would
  answer 500. What can be checked without the model is checked before the server sees it
  (``refusal``: a body that is not UTF-8 JSON, an unknown field, named with the nearest valid
  one, malformed messages, tools or ``tool_choice``, a lone surrogate, ``max_tokens`` < 1,
  ``temperature`` < 0, ``top_p`` outside [0, 1]), so a streamed request gets its 400 too. A
  refusal is one log line (``tooldialect.serve``), never a traceback, and no error body names a
  path of the server.

``/v1/responses`` (OpenAI's Responses API) is a route of its own on the same app
(``apps.responses``): it converts to a chat request for the same handler and back. So is
Anthropic's Messages API, ``/v1/messages`` and ``/v1/messages/count_tokens`` (``apps.messages``).

It is an HTTP front for one in-process model, one request at a time; see docs/serve.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import (
    ContextOverflowError,
    ToolDialectError,
    ToolSpecError,
    UnsupportedSchemaError,
    UnsupportedToolChoiceError,
)
from ..frontend.options import (
    LLAMA_CPP_KEYWORDS,
    REQUEST_KEYS,
    check_known_keys,
    check_request_values,
)
from ..frontend.pipeline import check_encodable
from ..gguf import read_gguf_metadata
from ..handler import ToolChatHandler
from ..models import cache_dir
from ..prompt.request_messages import validate_messages
from ..tool_defs import normalize_tool_choice, normalize_tools
from .announce import model_line, with_known_spelling
from .asgi import AsgiMessage, Receive, Scope, Send, error_field, send_json

if TYPE_CHECKING:
    from llama_cpp.llama_types import (
        CreateChatCompletionResponse,
        CreateChatCompletionStreamResponse,
    )

__all__ = [
    "SERVER_ROLES",
    "HeldStart",
    "RequestExtrasHandler",
    "RequestRewrite",
    "build_app",
    "main",
    "rewrite_chat_request",
]

INSTALL_HINT = (
    # not on PyPI: the extra is installed from the clone (make demo's scripts/install.sh does it)
    "tooldialect serve needs the server extra: run `make demo`, or "
    "`pip install -e '.[server]'` in the clone"
)

REQUEST_EXTRA_KEYS = (
    "tool_choice",
    "chat_template_kwargs",
    "parallel_tool_calls",
    "reasoning_effort",
)
"""Request keys carried beside the body to the handler: the server's model would drop the last
three, and refuse forms of ``tool_choice`` the handler reads."""

CHAT_BODY_KEYS = REQUEST_KEYS | {
    "messages",
    "max_completion_tokens",  # rewritten to max_tokens
    # the server's request model takes these and does nothing with them
    "n",
    "user",
    "min_tokens",
    "logit_bias_type",
    # OpenAI fields a client may send that change nothing a local model answers
    "stream_options",
    "store",
    "metadata",
    "service_tier",
}
"""The fields a chat-completion body may hold; any other is refused, naming the nearest."""

logger = logging.getLogger("tooldialect.serve")

_CHAT_PATH_SUFFIX = "/chat/completions"

_request_extras: ContextVar[Mapping[str, Any] | None] = ContextVar(
    "tooldialect_request_extras", default=None
)
_handler_replies: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "tooldialect_handler_replies", default=None
)
"""The handler's own non-streamed reply, which the server's response model would trim."""
_client_errors: ContextVar[list[Exception] | None] = ContextVar(
    "tooldialect_client_errors", default=None
)
"""Errors the handler raised that are the request's fault (answered 400, not 500)."""

CLIENT_ERRORS = (
    ToolSpecError,
    UnsupportedToolChoiceError,
    UnsupportedSchemaError,
    ContextOverflowError,
)
"""The library's errors that say the request is wrong, not the server."""

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def rewrite_chat_request(body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A chat request in the shape llama-cpp-python's server accepts, plus what it would drop.

    Returns ``(body, extras)``: ``body`` is a rewritten copy (the input is not changed) and
    ``extras`` holds the ``REQUEST_EXTRA_KEYS`` that were present, for the handler.
    """
    out = dict(body)
    extras = {key: out.pop(key) for key in REQUEST_EXTRA_KEYS if key in out}
    fmt = out.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        out["response_format"] = (
            {"type": "json_object", "schema": schema}
            if isinstance(schema, Mapping)
            else {"type": "json_object"}
        )
    messages = out.get("messages")
    if isinstance(messages, list):
        out["messages"] = [_rewrite_message(m) if isinstance(m, Mapping) else m for m in messages]
    if "max_completion_tokens" in out:
        limit = out.pop("max_completion_tokens")
        if out.get("max_tokens") is None:
            out["max_tokens"] = limit
    return out, extras


def _rewrite_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message in a shape the server's TypedDicts accept (user messages keep their parts)."""
    out = dict(message)
    if out.get("role") == "developer":
        out["role"] = "system"
    content = out.get("content")
    if out.get("role") == "assistant" and content is None:
        out.pop("content", None)  # OpenAI's tool-call turn; the server wants a string or nothing
    elif (
        out.get("role") != "user"
        and isinstance(content, list)
        and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content)
    ):
        out["content"] = "".join(str(p.get("text", "")) for p in content)
    return out


class RequestRewrite:
    """ASGI middleware: applies ``rewrite_chat_request`` to chat-completion POST bodies.

    The rewritten body is replayed to the app once; later ``receive`` calls go to the client so
    the server still sees a disconnect. A body that is not a UTF-8 JSON object, or that
    ``refusal`` refuses, is answered 400 here.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or not str(scope.get("path", "")).rstrip("/").endswith(_CHAT_PATH_SUFFIX)
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # the client went away before sending the whole body
                await self.app(scope, _replay(message, receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        parsed = read_json_object(raw)
        refused = parsed if isinstance(parsed, Exception) else refusal(parsed)
        if refused is not None:
            await _send_error(send, refused)
            return
        if isinstance(parsed, dict):
            body, extras = rewrite_chat_request(parsed)
            invalid = server_model_refusal(body)
            if invalid is not None:
                await _send_error(send, invalid)
                return
            raw = json.dumps(body).encode("utf-8")
            scope = dict(scope)
            scope["headers"] = [
                (k, str(len(raw)).encode("ascii") if k.lower() == b"content-length" else v)
                for k, v in scope.get("headers", [])
            ]
        replies: list[dict[str, Any]] = []
        errors: list[Exception] = []
        held = HeldStart(send)
        token = _request_extras.set(extras)
        token_replies = _handler_replies.set(replies)
        token_errors = _client_errors.set(errors)
        try:
            await self.app(
                scope,
                _replay({"type": "http.request", "body": raw}, receive),
                _as_client_error(errors, _untrimmed(replies, held.send)),
            )
        except Exception:
            # a streamed request: the server answered 200 before it called the handler, which
            # then refused the request; nothing has gone out yet, so it is still a 400
            if not errors or held.forwarded:
                raise
            await _send_error(send, errors[-1])
            return
        else:
            await held.flush()
        finally:
            _client_errors.reset(token_errors)
            _handler_replies.reset(token_replies)
            _request_extras.reset(token)


class HeldStart:
    """A ``send`` that holds the response start (and empty bodies) until the first body with
    bytes, or until the app returns: llama-cpp-python's server starts a streamed response
    before it calls the handler, so a refusal the handler raises (a message the template does
    not render) can still be answered 400 instead of a stream that breaks off."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._held: list[AsgiMessage] = []
        self.forwarded = False
        """Whether anything went out to the client."""

    async def send(self, message: AsgiMessage) -> None:
        empty = message["type"] == "http.response.body" and not message.get("body")
        if not self.forwarded and (message["type"] == "http.response.start" or empty):
            self._held.append(message)
            return
        await self.flush()
        self.forwarded = True
        await self._send(message)

    async def flush(self) -> None:
        """Send what is held."""
        held, self._held = self._held, []
        self.forwarded = self.forwarded or bool(held)
        for message in held:
            await self._send(message)


SERVER_ROLES = ("system", "user", "assistant", "tool", "function", "developer")
"""Roles llama-cpp-python's request model takes (``developer`` is rewritten to ``system``);
it answers any other with a 500, so the layer refuses them first, as a 400."""


def read_json_object(raw: bytes) -> dict[str, Any] | ToolSpecError:
    """The request body as a JSON object, or the error that says why it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ToolSpecError(f"the request body is not valid UTF-8 (byte {exc.start})")
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        return ToolSpecError(f"the request body is not JSON: {exc}")
    if not isinstance(parsed, dict):
        return ToolSpecError(f"the request body must be a JSON object, got {type(parsed).__name__}")
    return parsed


def refusal(body: Mapping[str, Any]) -> ToolSpecError | None:
    """Why the server must not run this chat request (``None``: it may): every check that
    needs no model, made before the server (and a stream) starts."""
    try:
        check_known_keys(body, where="/v1/chat/completions", known=CHAT_BODY_KEYS)
        if "messages" in body:
            _check_messages(body["messages"])
        _check_tools(body)
        check_encodable(body.get("messages") or [], body.get("tools") or None)
        limit = body.get("max_completion_tokens")
        check_request_values({**body, "max_tokens": limit} if limit is not None else body)
    except ToolSpecError as exc:
        return exc
    return None


def _check_tools(body: Mapping[str, Any]) -> None:
    """``tools`` and ``tool_choice`` as the handler will read them (a ``ToolSpecError`` naming
    the field)."""
    param = "tools"
    try:
        tools = normalize_tools(body.get("tools"))
        if body.get("tool_choice") is not None:
            param = "tool_choice"
            normalize_tool_choice(body["tool_choice"], tools)
    except ToolSpecError as exc:
        raise ToolSpecError(str(exc), param=exc.param or param) from None


def server_model_refusal(body: Mapping[str, Any]) -> ToolSpecError | None:
    """What llama-cpp-python's request model refuses in the (rewritten) body, as a 400 naming
    the field: its route would answer it 500, with the text of a traceback."""
    try:
        from llama_cpp.server.types import CreateChatCompletionRequest
        from pydantic import ValidationError
    except ImportError:  # no server extra: nothing to check against
        return None
    try:
        CreateChatCompletionRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        field = str(first["loc"][0]) if first.get("loc") else None
        return ToolSpecError(f"{where or 'the body'}: {first.get('msg', 'invalid')}", param=field)
    return None


def _check_messages(messages: Any) -> None:
    validate_messages(messages)
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in SERVER_ROLES:
            raise ToolSpecError(
                f"messages[{index}] has role {role!r}, which tooldialect serve does not take "
                f"(roles: {', '.join(SERVER_ROLES)}); send it as one of those",
                param="messages",
            )


async def _send_error(send: Send, error: Exception) -> None:
    logger.warning("refused a request (400): %s", error)  # one line: the client's mistake
    payload = {
        "message": str(error),
        "type": "invalid_request_error",
        "param": error_field(error),
        "code": None,
    }
    await send_json(send, 400, {"error": payload})


def _as_client_error(errors: list[Exception], send: Send) -> Send:
    """A ``send`` that turns the server's error answer for an error in ``CLIENT_ERRORS`` (the
    handler raised it) into our 400."""
    replaced = False

    async def wrapped(message: AsgiMessage) -> None:
        nonlocal replaced
        status = int(message.get("status") or 0)
        if message["type"] == "http.response.start" and status >= 400 and errors:
            replaced = True
            await _send_error(send, errors[-1])
            return
        if replaced and message["type"] == "http.response.body":
            return  # the server's own 500 body; ours went out with the start
        await send(message)

    return wrapped


def _replay(first: AsgiMessage, receive: Receive) -> Receive:
    """A ``receive`` that yields ``first`` once, then defers to the real one."""
    pending = [first]

    async def replay() -> AsgiMessage:
        return pending.pop() if pending else await receive()

    return replay


def _untrimmed(replies: list[dict[str, Any]], send: Send) -> Send:
    """A ``send`` that answers a successful non-streamed request with the handler's own reply.

    The server filters a reply through its ``ChatCompletion`` TypedDict, which drops
    ``message.reasoning_content`` and ``usage.prompt_tokens_details``; streamed chunks are not
    filtered and pass as they are.
    """
    body: bytes | None = None

    async def wrapped(message: AsgiMessage) -> None:
        nonlocal body
        if message["type"] == "http.response.start" and message.get("status") == 200 and replies:
            body = json.dumps(replies[-1]).encode("utf-8")
            headers = [
                (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
            ]
            headers.append((b"content-length", str(len(body)).encode("ascii")))
            await send({**message, "headers": headers})
            return
        if body is not None and message["type"] == "http.response.body":
            if not message.get("more_body", False):
                await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped


class RequestExtrasHandler:
    """The chat handler the server calls: the ``ToolChatHandler`` plus this request's extras.

    The server spreads the model's ``--chat_template_kwargs`` as top-level keywords; any keyword
    the handler does not name is folded back into ``chat_template_kwargs`` (so every template
    variable works, not just the three the handler knows by name), and the request's own
    ``chat_template_kwargs`` win over the model's.
    """

    def __init__(self, handler: ToolChatHandler) -> None:
        self.handler = handler
        self._named = {"llama", "messages", *LLAMA_CPP_KEYWORDS}

    def __call__(
        self, **kwargs: Any
    ) -> CreateChatCompletionResponse | Iterator[CreateChatCompletionStreamResponse]:
        extras = dict(_request_extras.get() or {})
        template = {
            key: kwargs.pop(key)
            for key in list(kwargs)
            if key not in self._named and key not in REQUEST_EXTRA_KEYS
        }
        template.update(kwargs.pop("chat_template_kwargs", None) or {})
        template.update(extras.pop("chat_template_kwargs", None) or {})
        if template:
            kwargs["chat_template_kwargs"] = template
        try:
            reply = self.handler(**{**kwargs, **extras})
        except CLIENT_ERRORS as exc:
            errors = _client_errors.get()
            if errors is None:
                raise
            errors.append(exc)
            # an HTTPException is the one error llama-cpp-python's route does not print a
            # traceback for; the layer answers with ``exc`` itself (``_as_client_error``)
            from fastapi import HTTPException

            raise HTTPException(status_code=400, detail="refused") from exc
        replies = _handler_replies.get()
        if replies is not None and isinstance(reply, dict):
            replies.append(cast("dict[str, Any]", reply))
        return reply


def register_served_handler(
    name: str = "tooldialect", **handler_options: Any
) -> RequestExtrasHandler:
    """Register ``name`` with llama-cpp-python: a ``ToolChatHandler`` that takes request extras."""
    from llama_cpp import llama_chat_format

    from ..handler import register

    served = RequestExtrasHandler(register(name, **handler_options))
    registry_cls: Any = llama_chat_format.LlamaChatCompletionHandlerRegistry
    registry = registry_cls()
    registry.register_chat_completion_handler(name, served, overwrite=True)
    return served


def build_parser() -> argparse.ArgumentParser:
    """llama-cpp-python's server CLI: one flag per ``Settings`` field, plus ``--config_file``."""
    from llama_cpp.server.cli import add_args_from_model
    from llama_cpp.server.settings import Settings

    parser = argparse.ArgumentParser(
        prog="tooldialect serve",
        # argparse's own usage lists all ~60 flags, before the one line that says what was wrong
        usage="tooldialect serve --model FILE.gguf [options]  (--help lists them)",
        description="llama-cpp-python's OpenAI-compatible server with chat_format=tooldialect "
        "(the default). Every llama_cpp.server flag is accepted, with - or _ (--n-ctx, --n_ctx). "
        "llama.cpp's loading output is hidden unless --verbose.",
    )
    add_args_from_model(parser, Settings)
    parser.add_argument("--config_file", type=str, help="Path to a config file to load.")
    for action in parser._actions:
        if action.dest == "verbose":  # a bare --verbose turns it on; absent, the server is quiet
            action.nargs, action.const, action.default = "?", True, None
            # llama_cpp's help says "(default: True)", which is not this launcher's default
            action.help = "print llama.cpp's loading output (hidden unless --verbose is given)"
        elif action.dest == "model":
            action.help = "path to the .gguf model file (required unless --config_file)"
        elif not action.help:  # llama_cpp's fields without a description
            action.help = f"llama.cpp's {action.dest} (see llama_cpp.server.settings)"
    return parser


def read_settings(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """``(ServerSettings, [ModelSettings])`` from a config file or the command line, as
    ``python -m llama_cpp.server`` reads them; a model without ``chat_format`` gets tooldialect,
    one without ``model_alias`` its file name (where no other model has it)."""
    from llama_cpp.server.cli import parse_model_from_args as parse_any

    parse_model_from_args: Any = parse_any  # typed upstream as returning the class itself
    from llama_cpp.server.settings import ConfigFileSettings, ModelSettings, ServerSettings

    config_file = os.environ.get("CONFIG_FILE", args.config_file)
    if config_file:
        with open(config_file, "rb") as f:
            if config_file.endswith((".yaml", ".yml")):
                import yaml  # type: ignore[import-untyped]

                config = ConfigFileSettings.model_validate(yaml.safe_load(f))
            else:
                config = ConfigFileSettings.model_validate_json(f.read())
        server, models = ServerSettings.model_validate(config), list(config.models)
    else:
        server = parse_model_from_args(ServerSettings, args)
        models = [parse_model_from_args(ModelSettings, args)]
    names = [Path(str(model.model)).name for model in models]
    for model, name in zip(models, names, strict=True):
        if model.chat_format is None:
            model.chat_format = "tooldialect"
        if not model.model_alias and name and names.count(name) == 1:
            # llama-cpp-python's alias defaults to the path, which /v1/models would show
            model.model_alias = name
        if not config_file and args.verbose is None:
            model.verbose = False  # quiet unless asked: one line names model and dialect instead
    return server, models


def build_app(server_settings: Any, model_settings: list[Any]) -> RequestRewrite:
    """llama-cpp-python's app (models loaded) behind ``RequestRewrite``, handler registered,
    with OpenAI's Responses API mounted at ``/v1/responses`` (``apps.responses``) and
    Anthropic's Messages API at ``/v1/messages`` (``apps.messages``)."""
    from llama_cpp.server.app import create_app

    from .messages import mount_messages
    from .responses import mount_responses

    register_served_handler()
    app = create_app(server_settings=server_settings, model_settings=model_settings)
    mount_responses(app)
    mount_messages(app)
    return RequestRewrite(app)


def one_line(exc: Exception) -> str:
    """``exc`` in one line: a pydantic ``ValidationError`` as ``--field: message`` per error (its
    own text is a multi-line block with a URL)."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":
        return "; ".join(
            f"--{'.'.join(str(part) for part in e['loc'])}: {e['msg']} (got {e['input']!r})"
            for e in errors()
        )
    return " ".join(str(exc).split())


def model_file_problem(model: Any) -> str | None:
    """Why ``model`` (a ``ModelSettings``) cannot be served, in one line, or ``None``: checked
    before llama-cpp-python loads it, which would end in a traceback."""
    if getattr(model, "hf_model_repo_id", None):
        return None  # a file name pattern in a Hugging Face repository, not a local path
    path = Path(str(model.model))
    if not path.is_file():
        hint = "pass the path of a .gguf file; `tooldialect models` lists the test models"
        fetched = cache_dir() / path.name
        if path.parent == Path() and fetched.is_file():  # a test model's bare file name
            hint = f"the test model of that name is {str(fetched)!r}"
        return f"no model file at {str(path)!r}: {hint}"
    try:
        read_gguf_metadata(str(path))
    except (ToolDialectError, OSError) as exc:
        return str(exc)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tooldialect serve`` and ``python -m tooldialect.apps.serve``."""
    try:
        import uvicorn
        from llama_cpp.server import app as _app  # noqa: F401  (fastapi, sse-starlette...)
    except ImportError as exc:
        print(f"{INSTALL_HINT} ({exc})", file=sys.stderr)
        return 2
    parser = build_parser()
    known = {o for action in parser._actions for o in action.option_strings}
    args = parser.parse_args(with_known_spelling(sys.argv[1:] if argv is None else argv, known))
    if args.model is None and not os.environ.get("CONFIG_FILE", args.config_file):
        print(
            "tooldialect serve: --model is required: the path of a .gguf file (or --config_file "
            "FILE); `tooldialect models` lists the test models",
            file=sys.stderr,
        )
        return 2
    try:
        server, models = read_settings(args)
    except Exception as exc:  # pydantic's ValidationError, a missing file, bad YAML...
        print(f"tooldialect serve: {one_line(exc)} (see tooldialect serve --help)", file=sys.stderr)
        return 1
    for model in models:
        problem = model_file_problem(model)
        if problem is not None:
            print(f"tooldialect serve: {problem}", file=sys.stderr)
            return 1
        print(f"tooldialect serve: {model_line(model.model)}", file=sys.stderr)
    try:
        app = build_app(server, models)
    except ValueError as exc:  # llama.cpp could not load a file that has a GGUF header
        print(f"tooldialect serve: {exc}", file=sys.stderr)
        return 1
    uvicorn.run(
        app,
        host=os.getenv("HOST", server.host),
        port=int(os.getenv("PORT", server.port)),
        ssl_keyfile=server.ssl_keyfile,
        ssl_certfile=server.ssl_certfile,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
