"""``tooldialect chat MODEL.gguf [--tools module:function ...] [--mcp mcp.json]``: a terminal chat.

Streams the model's text as it comes, shows each tool call (name, arguments as they are written)
and its result, and runs the given Python functions, and the tools of the MCP servers of an
``mcpServers`` JSON file, through ``tooldialect.Agent``. Reads one user message per line from
stdin, so it can be piped; ``/reset`` forgets the conversation, ``/exit`` (or end of input) quits
(and stops the MCP servers, also on Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from ..errors import ToolDialectError, ToolSpecError
from .agent import (
    Agent,
    AgentEvent,
    ArgumentsDelta,
    CallFinished,
    CallStarted,
    FinalAnswer,
    ReasoningDelta,
    TextDelta,
)
from .announce import model_line, spellings
from .python_tool import Tool

__all__ = ["add_chat_command", "count", "load_tool", "main", "run_chat"]


def add_chat_command(sub: Any) -> None:
    """Register ``chat`` on an ``argparse`` sub-parser set (``tooldialect``'s CLI)."""
    cmd = sub.add_parser("chat", help="chat with a GGUF model in the terminal, with Python tools")
    configure_parser(cmd)


def configure_parser(cmd: argparse.ArgumentParser) -> None:
    """The ``chat`` options."""
    cmd.add_argument("model", help="path to a .gguf file")
    cmd.add_argument(
        "--tools",
        nargs="+",
        action="extend",
        default=[],
        metavar="MODULE:FUNCTION",
        help="functions to offer as tools: an importable module or a .py file, a colon, a name",
    )
    cmd.add_argument(
        "--mcp",
        nargs="+",
        action="extend",
        default=[],
        metavar="MCP.JSON",
        help="offer the tools of the MCP servers in an mcpServers JSON file (Claude Desktop's)",
    )
    cmd.add_argument(
        *spellings("mcp_log"),
        dest="mcp_log",
        default=None,
        metavar="FILE",
        help="write stdio MCP servers' stderr here",
    )
    cmd.add_argument("--system", default=None, help="system message")
    _add_int_option(cmd, "max_steps", default=6, help="model calls per user message (default: 6)")
    _add_int_option(cmd, "max_tokens", default=512, help="tokens per model reply (default: 512)")
    cmd.add_argument(
        *spellings("loop_limit"),
        dest="loop_limit",
        type=count,
        default=3,
        metavar="N",
        help="repeated calls refused before the reply ends as a loop (default: 3; 0: never)",
    )
    cmd.add_argument(
        *spellings("answer_at_limit"),
        dest="answer_at_limit",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ask for an answer in words at the step limit or a loop (--no-answer-at-limit: don't)",
    )
    cmd.add_argument(
        "--temperature", type=float, default=0.2, help="sampling temperature (default: 0.2)"
    )
    cmd.add_argument(
        *spellings("tool_choice"),
        dest="tool_choice",
        default="auto",
        choices=["auto", "required", "none"],
        help="tool_choice of each message's first step (default: auto)",
    )
    _add_int_option(cmd, "n_ctx", default=4096, help="context window in tokens (default: 4096)")
    _add_int_option(
        cmd, "n_threads", default=None, help="CPU threads (default: llama.cpp's choice)"
    )
    cmd.add_argument(
        "--verbose", action="store_true", help="show llama.cpp's loading output (hidden by default)"
    )
    cmd.set_defaults(run=run_chat)


def count(text: str) -> int:
    """An ``int`` of at least 0 (argparse reports a ``ValueError`` as an invalid ``count``)."""
    value = int(text)
    if value < 0:
        raise ToolSpecError(f"expected a count of 0 or more, got {text!r}")
    return value


def _add_int_option(
    cmd: argparse.ArgumentParser, name: str, *, default: int | None, help: str
) -> None:
    """``--name`` (either spelling, ``-`` or ``_``), an integer stored as ``name``."""
    cmd.add_argument(*spellings(name), dest=name, type=int, default=default, help=help)


def load_tool(spec: str) -> Tool:
    """``module:function`` or ``path/to/file.py:function`` as a :class:`Tool`."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ToolSpecError(f"--tools takes MODULE:FUNCTION, got {spec!r}")
    try:
        if where.endswith(".py"):
            module = _load_file(spec, Path(where))
        else:
            module = importlib.import_module(where)
    except ImportError as exc:
        raise ToolSpecError(
            f"--tools {spec!r}: cannot import {where!r} ({exc}); is it on PYTHONPATH?"
        ) from exc
    fn = getattr(module, name, None)
    if fn is None:
        raise ToolSpecError(f"--tools {spec!r}: {where!r} has no attribute {name!r}")
    return fn if isinstance(fn, Tool) else Tool.from_function(fn)


_FILES: dict[Path, ModuleType] = {}
"""Modules loaded from files, so tools of one file share its state."""


def _load_file(spec: str, path: Path) -> ModuleType:
    key = path.resolve()
    if key not in _FILES:
        loader = importlib.util.spec_from_file_location(path.stem, path)
        if loader is None or loader.loader is None or not path.exists():
            raise ToolSpecError(f"--tools {spec!r}: no Python file at {str(path)!r}")
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
        _FILES[key] = module
    return _FILES[key]


class Renderer:
    """Writes agent events to a terminal (colours only when it is one)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.colour = out.isatty()
        self._in_reasoning = False

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def show(self, event: AgentEvent) -> None:
        w = self.out.write
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                w(self._style("(thinking) ", "2"))
                self._in_reasoning = True
            w(self._style(event.text, "2"))
        elif isinstance(event, TextDelta):
            if self._in_reasoning:
                w("\n")
                self._in_reasoning = False
            w(event.text)
        elif isinstance(event, CallStarted):
            w("\n" + self._style(f"-> {event.name}(", "36"))
        elif isinstance(event, ArgumentsDelta):
            w(self._style(event.delta, "36"))
        elif isinstance(event, CallFinished):
            w(self._style(")", "36") + "\n")
            if event.error:
                w(self._style(f"   {event.error}: {event.result}", "31") + "\n")
            else:
                w(self._style(f"   = {event.result}", "32") + "\n")
        elif isinstance(event, FinalAnswer):
            result = event.result
            w("\n")
            if result.outcome == "max_steps":
                n = len(result.steps)
                w(self._style(f"[step limit reached after {n} model calls]", "33"))
                w("\n")
            elif result.outcome == "length":
                w(self._style("[reply cut at --max-tokens]", "33") + "\n")
            elif result.outcome == "loop":
                w(self._style(f"[stopped: {result.reason}]", "33") + "\n")
        self.out.flush()


def run_chat(args: argparse.Namespace, *, stdin: TextIO | None = None) -> int:
    """The chat loop for parsed ``args``; returns the exit status."""
    mcp = None
    log: TextIO | None = None
    try:  # the MCP servers stop on every way out: an error, the end of input, Ctrl-C
        try:
            tools = [load_tool(s) for s in args.tools]
            if getattr(args, "mcp", None):
                from .mcp import MCPTools, load_mcp_config

                configs = [c for path in args.mcp for c in load_mcp_config(path)]
                if args.mcp_log:
                    log = open(args.mcp_log, "a", encoding="utf-8")  # noqa: SIM115
                mcp = MCPTools(configs, errlog=log).start()
            from llama_cpp import Llama

            from ..handler import ToolChatHandler

            print(model_line(args.model), file=sys.stderr)
            options: dict[str, Any] = {"n_ctx": args.n_ctx, "verbose": args.verbose}
            if args.n_threads:
                options["n_threads"] = args.n_threads
            handler: Any = ToolChatHandler()  # llama_cpp's Protocol pins TypedDict messages
            llm = Llama(model_path=args.model, chat_handler=handler, **options)
            agent = Agent(
                llm,
                tools=tools,
                mcp=mcp,
                system=args.system,
                max_steps=args.max_steps,
                tool_choice=args.tool_choice,
                answer_at_limit=args.answer_at_limit,
                loop_limit=args.loop_limit or None,  # 0: the loop breaker never ends the reply
                temperature=args.temperature,
                max_tokens=args.max_tokens,
            )
        except (ToolDialectError, OSError, ValueError) as exc:
            print(f"tooldialect chat: {exc}", file=sys.stderr)
            return 1
        return _loop(agent, args, stdin or sys.stdin)
    finally:
        _close(mcp, log)


def _close(mcp: Any, log: TextIO | None) -> None:
    if mcp is not None:
        mcp.close()
    if log is not None:
        log.close()


def _loop(agent: Agent, args: argparse.Namespace, stdin: TextIO) -> int:
    """Read user lines and run the agent on each until /exit or the end of input."""
    out = sys.stdout
    interactive = stdin.isatty()
    names = ", ".join(agent.tools) or "none"
    print(f"tools: {names}   (/reset forgets the conversation, /exit)", file=sys.stderr)
    renderer = Renderer(out)
    history: list[dict[str, Any]] = []
    while True:
        if interactive:
            out.write("\nyou> ")
            out.flush()
        line = stdin.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/reset":
            history = []
            out.write("[conversation reset]\n")
            out.flush()
            continue
        if not interactive:
            out.write(f"you> {text}\n")
        out.write("model> ")
        out.flush()
        try:
            for event in agent.stream([*history, {"role": "user", "content": text}]):
                renderer.show(event)
                if isinstance(event, FinalAnswer):
                    history = event.result.messages
        except ToolDialectError as exc:
            print(f"\ntooldialect chat: {exc}", file=sys.stderr)
        except KeyboardInterrupt:
            out.write("\n[interrupted]\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tooldialect.apps.chat``."""
    parser = argparse.ArgumentParser(prog="tooldialect chat", description=__doc__.splitlines()[0])
    configure_parser(parser)
    return run_chat(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
