"""An offline agent whose tools come from an MCP server (examples/mcp_weather_server.py).

    make demo          # .venv with the mcp extra (in your own env: pip install -e '.[mcp]')
    .venv/bin/python examples/mcp_agent.py                           # Qwen2.5-Coder-0.5B
    .venv/bin/python examples/mcp_agent.py "Is it raining in Oslo?"  # your own question
    .venv/bin/python examples/mcp_agent.py --config mcp.json "..."   # your own mcpServers file

The server is started over stdio from an ``mcpServers`` entry, as Claude Desktop or Cursor would
start it; its tools reach the model as ``weather_current_weather`` and ``weather_book_table``.
``tooldialect.ask_before`` asks before a booking runs, and denies it when stdin is not a
terminal (nobody can approve it). Everything stops when the ``with`` block ends, also on Ctrl-C.

Meant for Qwen2.5-Coder-0.5B (``tooldialect models`` shows where ``make demo`` put it): both
questions end there. docs/agent.md lists how often each test model finishes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import tooldialect
from tooldialect import (
    Agent,
    AgentEvent,
    CallFinished,
    FinalAnswer,
    MCPTools,
    PendingCall,
    TextDelta,
    ask_before,
)

HERE = Path(__file__).resolve().parent
SERVERS = {
    "mcpServers": {
        "weather": {"command": sys.executable, "args": [str(HERE / "mcp_weather_server.py")]}
    }
}
QUESTIONS = ["What is the weather in Paris right now?", "Book a table for 2 at Chez Ami at 19:30."]


def books(call: PendingCall) -> bool:
    """The calls with side effects, which a person must approve."""
    return "book" in call.name


def show(event: AgentEvent) -> None:
    if isinstance(event, TextDelta):
        print(event.text, end="", flush=True)
    elif isinstance(event, CallFinished):  # printed whole: the approval prompt may come first
        print(f"\n-> {event.name}({event.arguments})\n   {event.error or '='} {event.result}")
    elif isinstance(event, FinalAnswer):
        r = event.result
        print(f"\n[{r.outcome}; {len(r.steps)} model calls, {r.usage['completion_tokens']} tokens]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="*", help="questions (default: two samples)")
    parser.add_argument("--model", default="qwen", help="qwen, smollm2 or a .gguf path")
    parser.add_argument("--config", default=None, help="an mcpServers JSON file")
    args = parser.parse_args()
    try:  # a test model not fetched yet names its fetch command
        path = Path(
            args.model if args.model.endswith(".gguf") else tooldialect.model_path(args.model)
        )
    except tooldialect.ToolDialectError as exc:
        print(exc, file=sys.stderr)
        return 1
    if not path.exists():
        print(f"no model at {str(path)!r}; pass the path of a .gguf file", file=sys.stderr)
        return 1
    from llama_cpp import Llama

    handler: Any = tooldialect.ToolChatHandler(parallel_tool_calls=False)
    llm = Llama(str(path), n_ctx=4096, verbose=False, chat_handler=handler)
    with MCPTools(args.config or SERVERS) as servers:
        print("tools:", ", ".join(t.name for t in servers.tools()))
        agent = Agent(
            llm,
            mcp=servers,
            system="You are a helpful assistant. Use the tools, then answer in one sentence.",
            max_steps=3,
            tool_choice="required",  # a 0.5B model calls reliably when it must call first
            answer_at_limit=True,
            loop_limit=1,  # one repeated call means it has its result: answer next
            approve=ask_before(books),
            temperature=0.0,
            max_tokens=96,
        )
        for question in args.question or QUESTIONS:
            print(f"\nyou> {question}\nmodel> ", end="")
            agent.run(question, on_event=show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
