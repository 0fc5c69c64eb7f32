"""Agent loops: the multi-turn workload run by ``tooldialect.Agent``, and issue 20 §5.

``agent_multi_turn``: the same scripted user turns, tools and results as ``speed.multi_turn``,
but the tools are Python functions and the agent makes the requests; one row per model call, in
``multi_turn``'s shape, so the report's table shows it beside the hand-written loop.

``agent_loop_all`` (issue 20 §5): six model calls of one agent run over 50 MCP tools, through
tooldialect and through llama-cpp-python's ``chatml-function-calling``, and with a reasoning
template (Qwen3's, over the Qwen2.5 weights) with and without the tool-prefix checkpoint:

    PYTHONPATH=src python bench/agent_turns.py --tools 50 --out bench/results/agent-loop.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import time
from typing import Any, Literal

from bench import workload
from bench.common import N_THREADS, machine, make_llama, model_path, quiet_stderr, write_json


def _tools() -> list[Any]:
    from tooldialect import tool

    @tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Current weather for a city."""
        return workload.tool_result("get_weather")

    @tool
    def get_time(city: str) -> str:
        """Current local time in a city."""
        return workload.tool_result("get_time")

    @tool
    def convert_currency(amount: float, source: str, target: str) -> str:
        """Convert an amount between currencies."""
        return workload.tool_result("convert_currency")

    return [get_weather, get_time, convert_currency]


def agent_multi_turn(
    *, model: str = "qwen", max_tokens: int = 128, steps: int = 6
) -> list[dict[str, Any]]:
    """``steps`` model calls over the scripted user turns (at most 2 calls a turn)."""
    from tooldialect import Agent, FinalAnswer, StepFinished

    with quiet_stderr():
        llm = make_llama(model, "tooldialect", n_ctx=4096)
    agent = Agent(
        llm,
        tools=_tools(),
        system=workload.AGENT_SYSTEM["content"],
        max_steps=2,
        temperature=0.0,
        max_tokens=max_tokens,
    )
    user_turns = [*workload.AGENT_USER_TURNS, "Thanks. Anything else?", "Go on."]
    messages: list[dict[str, Any]] = []
    cached = 0  # tokens the KV cache held after the previous request
    rows: list[dict[str, Any]] = []
    while len(rows) < steps and user_turns:
        messages = [*messages, {"role": "user", "content": user_turns.pop(0)}]
        for event in agent.stream(messages):
            if isinstance(event, FinalAnswer):
                messages = event.result.messages  # the next user turn continues the transcript
            if not isinstance(event, StepFinished) or len(rows) >= steps:
                continue
            step = event.step
            usage = step.usage
            decoded = llm.chat_handler.last_result.last_prompt_eval_tokens
            suffix = usage["prompt_tokens"] - cached if rows else usage["prompt_tokens"]
            rows.append(
                {
                    "turn": len(rows) + 1,
                    "prompt_tokens": usage["prompt_tokens"],
                    "new_suffix": suffix,
                    "decoded": decoded,
                    "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"],
                    "excess": decoded - suffix,
                    "completion_tokens": usage["completion_tokens"],
                    "calls": [c.name for c in step.calls],
                    "model_seconds": round(step.model_seconds, 3),
                }
            )
            cached = int(llm.n_tokens)
    return rows


# ---- issue 20 §5: an agent loop over many tools, step by step ---------------------------------

QWEN3_TEMPLATE = Path(__file__).resolve().parent.parent / (
    "tests/fixtures/templates/Qwen-Qwen3-0.6B.jinja"
)
"""A reasoning template (earlier turns' ``reasoning_content`` dropped from history)."""

THREADS: list[int] = []
"""llama.cpp threads when set (``--threads``; spin-waiting threads distort a loaded machine)."""

LOOP_SYSTEM = {"role": "system", "content": "You are a careful agent. Use the tools, then answer."}


def loop_tools(n: int) -> list[dict[str, Any]]:
    """``n`` realistic MCP tools (nested objects, ``$ref``, ``anyOf``, enums)."""
    from bench.mcp_tools import mcp_tools

    return mcp_tools(n)


def scripted_loop(tools: list[dict[str, Any]]) -> list[tuple[list[dict[str, Any]], str]]:
    """Six model calls of one agent run over two user turns, as ``(messages, tool_choice)``:
    two tool steps, a final answer without tools (an agent's ``tool_choice="none"`` step), a
    new user turn with a tool step and an answer, a third user turn. Every assistant turn
    carries ``reasoning_content``, as a reasoning model's replies do; the history is scripted
    so that every system sees the same conversation whatever its model writes."""
    names = [t["function"]["name"] for t in tools]

    def call(i: int, step: int) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": "",
            "reasoning_content": f"Step {step}: I need {names[i]} to get the facts first.",
            "tool_calls": [
                {
                    "id": f"call_{step}",
                    "type": "function",
                    "function": {"name": names[i], "arguments": json.dumps({"id": str(step)})},
                }
            ],
        }

    def result(step: int) -> dict[str, Any]:
        body = {"ok": True, "items": [f"item-{step}-{k}" for k in range(4)]}
        return {"role": "tool", "tool_call_id": f"call_{step}", "content": json.dumps(body)}

    def answer(step: int, text: str) -> dict[str, Any]:
        reasoning = f"Step {step}: the results are enough to answer."
        return {"role": "assistant", "content": text, "reasoning_content": reasoning}

    u1 = {"role": "user", "content": "Find the open issues of the tooldialect repo."}
    u2 = {"role": "user", "content": "Now archive the oldest one."}
    u3 = {"role": "user", "content": "Thanks. What else should I look at?"}
    h1 = [LOOP_SYSTEM, u1]
    h2 = [*h1, call(0, 1), result(1)]
    h3 = [*h2, call(1 % len(names), 2), result(2)]
    h4 = [*h3, answer(3, "There are 4 open issues."), u2]
    h5 = [*h4, call(2 % len(names), 4), result(4)]
    h6 = [*h5, answer(5, "Archived item-4-0."), u3]
    return [(h1, "auto"), (h2, "auto"), (h3, "none"), (h4, "auto"), (h5, "auto"), (h6, "auto")]


class EvalCounter:
    """Counts the tokens ``llm.eval`` decodes and notes when the first batch of a request
    ends (a lower bound of its time to first token: the prompt is decoded, nothing sampled)."""

    def __init__(self, llm: Any) -> None:
        self.tokens = 0
        self.first_end: float | None = None
        original = llm.eval

        def counted(batch: Any) -> Any:
            out = original(batch)
            self.tokens += len(batch)
            if self.first_end is None:
                self.first_end = time.perf_counter()
            return out

        llm.eval = counted

    def reset(self) -> None:
        self.tokens, self.first_end = 0, None


def _ours_step(
    llm: Any, messages: list[dict[str, Any]], choice: str, tools: Any, max_tokens: int
) -> tuple[float | None, dict[str, Any]]:
    """One streamed request through ToolChatHandler: (time to first delta, usage figures)."""
    started = time.perf_counter()
    ttft = None
    for chunk in llm.create_chat_completion(
        messages=messages,
        tools=tools,
        tool_choice=choice,
        temperature=0.0,
        max_tokens=max_tokens,
        stream=True,
    ):
        delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
        if ttft is None and any(
            delta.get(k) for k in ("content", "tool_calls", "reasoning_content")
        ):
            ttft = time.perf_counter() - started
    result = llm.chat_handler.last_result
    return ttft, {
        "prompt_tokens": result.prompt_tokens,
        "prompt_decoded": result.last_prompt_eval_tokens,
        "checkpoint": result.stats.checkpoint,
    }


def _plain_step(
    llm: Any, messages: list[dict[str, Any]], choice: str, tools: Any, max_tokens: int
) -> tuple[float | None, dict[str, Any]]:
    """One request through llama-cpp-python's ``chatml-function-calling`` (it cannot stream
    under ``tool_choice="auto"``, so no first-delta time: the first decoded batch stands in)."""
    out = llm.create_chat_completion(
        messages=messages,
        tools=tools,
        tool_choice=choice,
        temperature=0.0,
        max_tokens=max_tokens,
    )
    return None, {"prompt_tokens": out["usage"]["prompt_tokens"]}


def agent_loop(
    *,
    system: str,
    n_tools: int = 50,
    model: str = "qwen",
    template: Path | None = None,
    checkpoints: bool = True,
    max_tokens: int = 16,
    n_ctx: int = 16384,
) -> dict[str, Any]:
    """The scripted six-step run (:func:`scripted_loop`) on one fresh Llama: per step the wall
    time, the time to first token, the tokens ``llm.eval`` decoded (prompt and reply) and, for
    tooldialect, the prompt tokens decoded, the tool prefix and what its checkpoint did.
    ``excess`` is what was decoded of the prompt beyond the tokens appended since the previous
    request's prompt and reply (0 when less was decoded: a loaded checkpoint after a shorter
    prompt); ``rerendered`` is what the template itself changed of that
    history (the live KV cache's tokens after the first one the new prompt differs at)."""
    from llama_cpp import Llama

    from tooldialect.engine.in_process.prompt_cache import common_prefix
    from tooldialect.handler import ToolChatHandler

    kwargs: dict[str, Any] = {
        "model_path": str(model_path(model)),
        "n_ctx": n_ctx,
        "n_threads": THREADS[0] if THREADS else N_THREADS,
        "n_threads_batch": THREADS[0] if THREADS else N_THREADS,
        "verbose": False,
        "seed": 0,
    }
    if system == "tooldialect":
        source = template.read_text(encoding="utf-8") if template else None
        kwargs["chat_handler"] = ToolChatHandler(
            chat_template=source, prefix_checkpoints=checkpoints
        )
        step = _ours_step
    else:
        kwargs["chat_format"] = "chatml-function-calling"
        step = _plain_step
    with quiet_stderr():
        llm: Any = Llama(**kwargs)  # Any: its chat_handler is ours or llama-cpp-python's
    tools = loop_tools(n_tools)
    counter = EvalCounter(llm)
    rows: list[dict[str, Any]] = []
    for number, (messages, choice) in enumerate(scripted_loop(tools), start=1):
        live = llm._input_ids.tolist()
        if system == "tooldialect":
            prepared = llm.chat_handler.prepare(
                llama=llm, messages=messages, tools=tools, tool_choice=choice
            )
            engine = llm.chat_handler.setup(llm).engine
            tokens = engine.tokenize_prompt(prepared.prompt)
            prefix_tokens = engine.decoder.prefix_length(prepared.prefix, tokens)
        counter.reset()
        started = time.perf_counter()
        ttft, figures = step(llm, messages, choice, tools, max_tokens)
        wall = time.perf_counter() - started
        row: dict[str, Any] = {
            "step": number,
            "tool_choice": choice,
            "seconds": round(wall, 3),
            "ttft_s": round(
                ttft if ttft is not None else (counter.first_end or started) - started, 3
            ),
            "tokens_evaluated": counter.tokens,
            **figures,
        }
        if system == "tooldialect":
            shared = common_prefix(live, tokens)
            row["appended"] = max(len(tokens) - len(live), 0)
            row["rerendered"] = len(live) - shared
            row["excess"] = max(row["prompt_decoded"] - row["appended"], 0)
            row["tool_prefix_tokens"] = prefix_tokens
            row["tool_prefix_decoded"] = row["prompt_decoded"] > len(tokens) - prefix_tokens
        rows.append(row)
    out: dict[str, Any] = {
        "system": system,
        "model": model,
        "n_tools": n_tools,
        "template": template.name if template else "gguf",
        "checkpoints": checkpoints if system == "tooldialect" else None,
        "total_s": round(sum(r["seconds"] for r in rows), 3),
        "rows": rows,
    }
    if system == "tooldialect":
        store = llm.chat_handler.checkpoints(llm)
        out["checkpoint_bytes"] = store.size if store is not None else 0
        out["tool_prefix_decodes"] = sum(bool(r["tool_prefix_decoded"]) for r in rows)
    return out


def agent_loop_all(
    *, n_tools: int = 50, model: str = "qwen", max_tokens: int = 16
) -> dict[str, Any]:
    """Issue 20 §5: the scripted run through tooldialect (the GGUF's template) against
    ``chatml-function-calling``, and with the reasoning template with and without the
    tool-prefix checkpoint."""
    ours = agent_loop(system="tooldialect", n_tools=n_tools, model=model, max_tokens=max_tokens)
    plain = agent_loop(system="chatml-fc", n_tools=n_tools, model=model, max_tokens=max_tokens)
    before = agent_loop(
        system="tooldialect",
        n_tools=n_tools,
        model=model,
        max_tokens=max_tokens,
        template=QWEN3_TEMPLATE,
        checkpoints=False,
    )
    after = agent_loop(
        system="tooldialect",
        n_tools=n_tools,
        model=model,
        max_tokens=max_tokens,
        template=QWEN3_TEMPLATE,
    )
    return {
        "tooldialect": ours,
        "chatml-function-calling": plain,
        "total_ratio_vs_chatml_fc": round(ours["total_s"] / plain["total_s"], 3),
        "reasoning_template_without_checkpoint": before,
        "reasoning_template_with_checkpoint": after,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="issue 20 §5: an agent loop over many tools")
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--max-tokens", type=int, default=16, help="reply tokens per step")
    parser.add_argument(
        "--only",
        choices=["tooldialect", "chatml-fc", "reasoning-before", "reasoning-after"],
        default=None,
        help="one run instead of all four",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (1 on a loaded machine)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        THREADS[:] = [args.threads]
    runs = {
        "tooldialect": lambda: agent_loop(
            system="tooldialect", n_tools=args.tools, model=args.model, max_tokens=args.max_tokens
        ),
        "chatml-fc": lambda: agent_loop(
            system="chatml-fc", n_tools=args.tools, model=args.model, max_tokens=args.max_tokens
        ),
        "reasoning-before": lambda: agent_loop(
            system="tooldialect",
            n_tools=args.tools,
            model=args.model,
            max_tokens=args.max_tokens,
            template=QWEN3_TEMPLATE,
            checkpoints=False,
        ),
        "reasoning-after": lambda: agent_loop(
            system="tooldialect",
            n_tools=args.tools,
            model=args.model,
            max_tokens=args.max_tokens,
            template=QWEN3_TEMPLATE,
        ),
    }
    data = (
        runs[args.only]()
        if args.only
        else agent_loop_all(n_tools=args.tools, model=args.model, max_tokens=args.max_tokens)
    )
    data = {
        "machine": machine(),
        "threads": THREADS[0] if THREADS else N_THREADS,
        "load_average": os.getloadavg(),
        "result": data,
    }
    text = json.dumps(data, indent=1)
    print(text)
    if args.out:
        write_json(args.out, data)


if __name__ == "__main__":
    main()


# ---- report ------------------------------------------------------------------------------------


def loop_targets(data: Any) -> list[tuple[str, str, str, bool | None]]:
    """Issue 20 §5's rows of the target table, from :func:`agent_loop_all`'s result."""
    if not isinstance(data, dict) or "error" in data or "tooldialect" not in data:
        why = data.get("error") if isinstance(data, dict) else "not run"
        return [("7. agent loop, 6 steps", f"not run: {why}", "tool prefix decoded once", None)]
    before = data["reasoning_template_without_checkpoint"]
    after = data["reasoning_template_with_checkpoint"]
    ours, plain = data["tooldialect"], data["chatml-function-calling"]
    worst = max(r["excess"] - r["rerendered"] for r in after["rows"][1:])
    n = after["n_tools"]
    return [
        (
            f"7. agent loop, reasoning template, {n} tools: tool prefix decodes in 6 steps",
            f"{after['tool_prefix_decodes']} (without the checkpoint: "
            f"{before['tool_prefix_decodes']})",
            "1",
            after["tool_prefix_decodes"] == 1,
        ),
        (
            "7. agent loop: worst excess beyond what the template re-rendered, steps 2-6",
            f"{worst} tokens",
            "<= 0",
            worst <= 0,
        ),
        (
            f"7. agent loop, {n} tools: total time vs chatml-function-calling",
            f"{ours['total_s']:.1f} s vs {plain['total_s']:.1f} s "
            f"({data['total_ratio_vs_chatml_fc']:.2f}x)",
            "report",
            None,
        ),
    ]


def loop_table(data: Any) -> list[str]:
    """The per-step table of :func:`agent_loop_all`'s result (markdown lines)."""
    if not isinstance(data, dict) or "tooldialect" not in data:
        return []
    md = [
        "",
        "Agent loop (issue 20 §5, `bench/agent_turns.py`): six scripted model calls of one agent "
        "run over MCP tools on Qwen2.5-Coder-0.5B (two tool steps, an answer without tools, a "
        "new user turn...). *evaluated*: tokens `llm.eval` decoded (prompt and reply); "
        "*prompt decoded*, *excess* (beyond the tokens appended since the last request) and "
        "*re-rendered* (history the template itself changed) are tooldialect's. The reasoning "
        "rows use Qwen3's template, which drops earlier turns' reasoning.",
        "",
        "| set-up | step | tool_choice | s | TTFT s | evaluated | prompt decoded | excess | "
        "re-rendered | checkpoint |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    runs = (
        ("tooldialect", data["tooldialect"]),
        ("chatml-function-calling", data["chatml-function-calling"]),
        ("reasoning, no checkpoint", data["reasoning_template_without_checkpoint"]),
        ("reasoning, checkpoint", data["reasoning_template_with_checkpoint"]),
    )
    for label, run in runs:
        for r in run["rows"]:
            md.append(
                f"| {label} | {r['step']} | {r['tool_choice']} | {r['seconds']} | {r['ttft_s']} | "
                f"{r['tokens_evaluated']} | {r.get('prompt_decoded', '')} | "
                f"{r.get('excess', '')} | {r.get('rerendered', '')} | {r.get('checkpoint', '')} |"
            )
    return md
