"""``tooldialect inspect model.gguf``: what the model carries and which dialect it speaks.

``tooldialect inspect template.jinja``: the same for a chat template file, without a model.
Both say whether the dialect reads back the call the template itself writes (``conformance``),
as a short summary, or everything as JSON with ``--json``.

``tooldialect models``: where ``make demo`` put the test models.
``tooldialect chat model.gguf --tools module:function --mcp mcp.json``: see
``tooldialect.apps.chat``.
``tooldialect serve ...``: the OpenAI-compatible server, see ``tooldialect.apps.serve``.

Reads only the GGUF header (no weights are loaded).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..conformance import check_template
from ..dialect.spec import DialectSpec
from ..dialect.vocabulary import Vocabulary
from ..errors import ToolDialectError
from ..gguf import read_gguf_metadata
from ..models import models_table
from ..prompt.fallbacks import fallback_template
from ..verify import explain_detection

__all__ = ["describe", "main"]

DESCRIPTION = (
    "Tool calling for local GGUF models in llama-cpp-python: inspect a model's (or a template's) "
    "tool-call dialect, chat with tools in the terminal, or serve an OpenAI-compatible API."
)


def inspect_model(path: str) -> dict[str, object]:
    """A JSON-ready summary: model facts, template origin, capabilities and the detected dialect."""
    info = read_gguf_metadata(path)
    source, origin = info.chat_template, "gguf"
    if not source:
        found = fallback_template(info.architecture)
        source, origin = (found[1], f"fallback:{found[0]}") if found else (None, "none")
    summary: dict[str, object] = {
        "path": info.path,
        "architecture": info.architecture,
        "name": info.name,
        "context_length": info.context_length,
        "bos_token": info.bos_token,
        "eos_token": info.eos_token,
        "chat_template": origin,
        "named_templates": sorted(info.chat_templates),
    }
    if source is not None:
        from ..prompt.template import ChatTemplate

        template = ChatTemplate(source, bos_token=info.bos_token, eos_token=info.eos_token)
        summary["capabilities"] = template.capabilities.model_dump()
        detection = explain_detection(
            source,
            bos_token=info.bos_token,
            eos_token=info.eos_token,
            vocabulary=Vocabulary.from_gguf(path),
        )
        summary["detection"] = detection.summary()
        summary["dialect"] = json.loads(detection.spec.model_dump_json())
        report = check_template(source, bos_token=info.bos_token, eos_token=info.eos_token)
        summary["conformance"] = report.summary()
    return summary


def inspect_template(path: str) -> dict[str, object]:
    """``inspect_model`` for a chat template file (Jinja source): capabilities, the detected
    dialect, and the conformance report with builtins and derived only."""
    from ..prompt.template import ChatTemplate

    with open(path, encoding="utf-8") as f:
        source = f.read()
    template = ChatTemplate(source)
    detection = explain_detection(source)
    return {
        "path": path,
        "capabilities": template.capabilities.model_dump(),
        "detection": detection.summary(),
        "dialect": json.loads(detection.spec.model_dump_json()),
        "conformance": check_template(source).summary(),
        "conformance_derived_only": check_template(source, builtins=False).summary(),
    }


def describe(summary: dict[str, Any]) -> str:
    """The short human summary of an ``inspect`` result: dialect, origin, why, triggers,
    reasoning, one rendered example call, the conformance verdict."""
    lines = [f"file:        {summary['path']}"]
    if "architecture" in summary:
        lines.append(f"model:       {summary.get('name') or '?'} ({summary['architecture']})")
        lines.append(f"template:    {summary['chat_template']}")
    if "dialect" not in summary:
        lines.append(
            "dialect:     none (no chat template; pass one with ToolChatHandler(chat_template=...))"
        )
        return "\n".join(lines)
    spec = DialectSpec.model_validate(summary["dialect"])
    detection: dict[str, Any] = summary["detection"]
    lines.append(f"dialect:     {spec.id} ({detection['chosen']}; origin {spec.origin})")
    lines.append(f"why:         {detection['reason']}")
    if detection.get("warning"):
        lines.append(f"warning:     {detection['warning']}")
    triggers = [
        repr(t.value) if t.kind == "word" else f"{t.kind} {t.value}"
        for f in spec.formats
        for t in f.effective_triggers()
    ]
    shown = "\n             ".join(triggers) or "none (constrained from the start)"
    lines.append(f"triggers:    {shown}")
    r = spec.reasoning
    lines.append(f"reasoning:   {f'{r.open!r} ... {r.close!r}' if r is not None else 'none'}")
    example = spec.render_call("get_weather", {"city": "Paris"})
    lines.append("example:     " + "\n             ".join(example.splitlines() or [""]))
    for key in ("conformance", "conformance_derived_only"):
        if key in summary:
            report: dict[str, Any] = summary[key]
            why = f" ({report['reason']})" if report.get("reason") else ""
            label = "no builtins:" if key.endswith("only") else "conformance:"
            lines.append(f"{label:13}{report['verdict']}{why}")
    lines.append("(--json for everything)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tooldialect`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:  # its flags are llama_cpp.server's, parsed by tooldialect.apps.serve
        from . import serve

        return serve.main(argv[1:])
    parser = argparse.ArgumentParser(prog="tooldialect", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser(
        "inspect", help="print a GGUF's (or a template's) dialect, why, and conformance"
    )
    cmd.add_argument("model", help="path to a .gguf file, or to a chat template (.jinja)")
    cmd.add_argument("--json", action="store_true", help="print everything as JSON")
    sub.add_parser("models", help="print where `make demo` put the test models")
    from .chat import add_chat_command  # `tooldialect chat`: its own module

    add_chat_command(sub)
    sub.add_parser("serve", help="llama-cpp-python's OpenAI server with this handler (see --help)")
    args = parser.parse_args(argv)
    if args.command == "chat":
        return int(args.run(args))
    if args.command == "models":
        print(models_table())
        return 0
    try:
        is_gguf = not args.model.endswith((".jinja", ".j2", ".txt"))
        summary = inspect_model(args.model) if is_gguf else inspect_template(args.model)
    except (ToolDialectError, OSError) as exc:
        print(f"tooldialect: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, ensure_ascii=False) if args.json else describe(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
