"""Chat templates for GGUF files that carry none, chosen by ``general.architecture``.

Each file is the template the architecture's instruction-tuned release ships, copied verbatim:

* ``gemma3.jinja``: ``chat_template`` of Google's ``google/gemma-3-270m-it`` (identical across the
  Gemma 3 instruct releases), from its ``tokenizer_config.json`` on Hugging Face.

A user-supplied ``chat_template=`` always wins over these; using one emits a warning naming it.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["FALLBACK_TEMPLATES", "fallback_template"]

FALLBACK_TEMPLATES: dict[str, str] = {
    "gemma3": "gemma3.jinja",
    "gemma3_text": "gemma3.jinja",
}
"""``general.architecture`` -> template file in this package."""


def fallback_template(architecture: str) -> tuple[str, str] | None:
    """``(file name, template source)`` for an architecture, or ``None`` if none is shipped."""
    name = FALLBACK_TEMPLATES.get(architecture)
    if name is None:
        return None
    source = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return name, source
