"""``tooldialect inspect model.gguf``: what the model carries and which dialect it speaks.

``tooldialect inspect template.jinja``: the same for a chat template file, without a model.
Both end with ``conformance``: whether the dialect reads back the call the template itself
writes, and why not (``tooldialect.conformance``).

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

from ..conformance import check_template
from ..dialect.detect import explain_detection
from ..dialect.vocabulary import Vocabulary
from ..errors import ToolDialectError
from ..gguf import read_gguf_metadata
from ..prompt.fallbacks import fallback_template

__all__ = ["main"]


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tooldialect`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:  # its flags are llama_cpp.server's, parsed by tooldialect.apps.serve
        from . import serve

        return serve.main(argv[1:])
    parser = argparse.ArgumentParser(prog="tooldialect", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser(
        "inspect", help="print a GGUF's (or a template's) facts, detected dialect, conformance"
    )
    cmd.add_argument("model", help="path to a .gguf file, or to a chat template (.jinja)")
    from .chat import add_chat_command  # `tooldialect chat`: its own module

    add_chat_command(sub)
    sub.add_parser("serve", help="llama-cpp-python's OpenAI server with this handler (see --help)")
    args = parser.parse_args(argv)
    if args.command == "chat":
        return int(args.run(args))
    try:
        is_gguf = not args.model.endswith((".jinja", ".j2", ".txt"))
        summary = inspect_model(args.model) if is_gguf else inspect_template(args.model)
    except (ToolDialectError, OSError) as exc:
        print(f"tooldialect: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
