"""Deriving a ``DialectSpec`` from a chat template alone, by rendering sentinel conversations.

``docs/derivation.md`` walks through it. The modules, lowest first (each imports only those
above it in this list, and none imports this package's ``__init__``):

* ``lexemes``: a marker-aware lexer, affix diffs, repeat splitting;
* ``probe_renderer``: ``ProbeRenderer``, rendering probe conversations without ever raising;
* ``probes``: the probe conversations, their sentinels and the region of a render holding a call;
* ``body_shapes``: finding one sentinel call's body in a render and reading its shape;
* ``acceptance``: the checks a derived spec must pass before it is returned;
* ``value_layout``: how an element body writes nested, repeated, ``None`` and escaped values;
* ``value_syntax``: which value codec a Python-style body's template writes its values in;
* ``instructions``: a call format read off a template's tool instructions;
* ``message_headers``: ``MessageHeaders`` for header-addressed (harmony-like) templates;
* ``assembly``: ``derive_dialect``, reading the envelope, reasoning and ids off the renders and
  putting the spec together.
"""

from .acceptance import ProbeMiss, reads_no_probe_call
from .assembly import derive_dialect, template_reasoning
from .instructions import INSTRUCTIONS_FAMILY, reads_instruction_example
from .lexemes import common_prefix, diff_affixes, is_marker, lex, split_repeat
from .probe_renderer import ProbeRenderer
from .probes import PROBE_ARGS, PROBE_NAME, PROBE_RICH_ARGS, header_rest

__all__ = [
    "INSTRUCTIONS_FAMILY",
    "PROBE_ARGS",
    "PROBE_NAME",
    "PROBE_RICH_ARGS",
    "ProbeMiss",
    "ProbeRenderer",
    "common_prefix",
    "derive_dialect",
    "diff_affixes",
    "header_rest",
    "is_marker",
    "lex",
    "reads_instruction_example",
    "reads_no_probe_call",
    "split_repeat",
    "template_reasoning",
]
