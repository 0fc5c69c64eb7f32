"""Ask a small local model for the weather in Paris and print the OpenAI-shaped reply.

    python examples/demo.py               # SmolLM2-135M (polyfilled tools), tool_choice="required"
    python examples/demo.py --model qwen  # Qwen2.5-Coder-0.5B (native calls), tool_choice="auto"

Models are looked up in $TOOLDIALECT_MODELS or ~/.cache/tooldialect/models
(fetch them with `python scripts/fetch_models.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from llama_cpp import Llama

from tooldialect import ToolChatHandler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
from scripts.fetch_models import model_file

# the tool_choice each model gets in the demo
MODELS = {"smollm2": "required", "qwen": "auto"}
GET_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    args = parser.parse_args()
    tool_choice = MODELS[args.model]
    path = model_file(args.model)
    if not path.exists():
        print(f"missing {path}; run: python scripts/fetch_models.py {args.model}", file=sys.stderr)
        return 1
    # the 135M model tends to repeat a call; one call per reply keeps its answer clean
    handler = ToolChatHandler(parallel_tool_calls=args.model != "smollm2")
    llm = Llama(str(path), n_threads=2, n_ctx=4096, verbose=False, chat_handler=handler)
    started = time.perf_counter()
    response = llm.create_chat_completion(
        messages=[{"role": "user", "content": "What's the weather like in Paris today?"}],
        tools=[GET_WEATHER],
        tool_choice=tool_choice,
        temperature=0,
        max_tokens=64,
    )
    elapsed = time.perf_counter() - started
    setup = handler.setup(llm)
    print(f"# {path.name}: dialect {setup.spec.id!r}, tool_choice={tool_choice!r}, {elapsed:.1f}s")
    print(json.dumps(response["choices"][0]["message"], indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
