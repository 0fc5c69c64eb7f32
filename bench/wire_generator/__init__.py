"""A seeded generator of production-style chat templates over a documented space of wire formats
(issue 39 §4): the instrument ``bench/wire_formats.py`` measures derivation on.

``generate(seed)`` draws one point of the space (``WireAxes``) and composes a Jinja chat template
for it; the same seed always gives the same template. Each template renders a whole tool
conversation with the project's sandboxed renderer (``tooldialect.prompt.template.ChatTemplate``):
system and tool declarations, user turns, assistant turns with content, reasoning and any number
of calls, and tool results. The template itself writes every value (value codecs are Jinja
macros, as real templates write them); nothing is pre-rendered in Python. Marker words, separators
and key names are drawn per template from small pools (``GeneratedTemplate.spelling`` records them),
so no marker is the same across the space.

Axes and their values (drawn in this order; ``space.allowed`` says which combine):

* ``codec``, how one JSON value is spelled (strings holding quotes, ``<``, ``&``, newlines;
  numbers; booleans; null; nested objects and arrays):

  - ``json``: ``tojson``;
  - ``python``: ``{'k': 'v', 'n': None, 'b': True}`` (single quotes, backslash escapes);
  - ``yaml_flow``: ``{k: "v", n: null}`` (double-quoted strings, JSON escapes);
  - ``toml_inline``: ``{ k = "v", b = true }`` (no null: a null member is left out);
  - ``js_object``: ``{k: 'v', n: null}`` (bare keys, single-quoted strings);
  - ``lua_table``: ``{k = "v", n = nil, list = {1, 2}}``;
  - ``ruby_hash``: ``{:k => "v", :n => nil}``;
  - ``php_array``: ``['k' => 'v', 'n' => null]`` (single quotes: only ``\\`` and ``\'``
    escaped, newlines raw);
  - ``edn``: ``{:k "v" :n nil :list [1 2]}`` (space-separated);
  - ``sql``: ``'it''s'`` (quote doubled, newlines raw), ``TRUE``/``FALSE``/``NULL``,
    ``ARRAY[...]``, ``JSON_OBJECT('k', v, ...)``;
  - ``markup_text``: strings escaped for markup text (``| e``: ``&amp;``, ``&lt;``, ``&#34;``),
    other values as escaped JSON;
  - ``markup_attr``: the same as a quoted attribute value (``k="a &amp; b"``);
  - ``markup_cdata``: strings raw, wrapped in ``<![CDATA[...]]>`` only when they hold ``<``,
    ``&`` or a newline; other values as JSON;
  - ``typed_prefix``: typed by a prefix character: ``$text`` (raw), ``#3``, ``?true``, ``~``
    (null), ``@[...]`` and ``%{...}`` (JSON).

* ``structure``, how the arguments are laid out:

  - ``object``: one value of the codec's map syntax (literal codecs only);
  - ``items``: ``key<assign>value`` items with a separator or a terminator (``k=v, k=v``,
    ``k: v;\\n``, ``k => v``), wrapped in ``(...)``/``{...}`` or bare;
  - ``records``: an array of name/value records (``[{"name": "k", "value": v}, ...]`` in the
    codec's syntax, or ``<param><name>k</name><value>v</value></param>`` for markup codecs);
  - ``headings``: one heading per argument (``## k\\n`` then the value);
  - ``attributes``: the attributes of one element (``<args k="v" n=3/>``);
  - ``open_markers``: markers with no closer (``<|arg|>k<|val|>v<|arg|>...``): a value ends
    where the next marker, or the call's closer, begins;
  - ``elements``: one element per argument (``<parameter name="k">v</parameter>``, ``<k>v</k>``,
    ``<param=k>\\nv\\n</param>``, ``<arg:k>v</arg:k>``).

* ``name_at``, where the tool's name goes: ``before`` the arguments (``NAME(``, ``NAME ``,
  ``NAME\\n``); ``inside`` them under a key (``{"name": NAME, "arguments": {...}}``, a first item
  ``tool=NAME``, a first heading or element); as an ``attribute`` of the call's element
  (``<invoke name="NAME">``); as a ``key`` (``{NAME: {...}}``, ``<NAME>...</NAME>``); as a
  ``heading`` (``### NAME\\n``).
* ``nesting``: nested objects and arrays written by the ``codec``, or by the ``structure``
  itself (child elements and ``<item>`` elements, nested records; elements and records only).
* ``ids``: ``none``; ``index0`` / ``index1`` (the call's position in its turn, from 0 or 1);
  ``counter`` (a ``namespace()`` counter across the conversation, ``call_1``...); ``letters``
  (``a``, ``b``...); ``caller`` (the client's ``tool_call.id``). Written as an attribute of the
  call's element, a member of its map, or a token after the envelope (``[ID] ``, ``#ID ``).
* ``envelope``, around each call: ``special`` token-like markers
  (``<|tool_call|>...<|/tool_call|>``), XML-ish ``tag`` s, ``bracket`` s (``[CALL]...[/CALL]``,
  ``[[call]]``), ``word`` s (``Action: ``, ``CALL ... END``, ``>>> ``), or ``none``.
* ``section``: ``none``, or ``markers`` around all calls of a turn.
* ``separator`` between calls: ``newline``, ``blank_line``, ``glued``, ``comma``, a ``marker``.
* ``reasoning``: ``none``; ``last_turn`` (a reasoning block kept only after the last user turn);
  ``prompt_open`` (the same, always written there, and the generation prompt opens it, unless
  ``enable_thinking`` is false); ``channels`` (reasoning and answer channels,
  ``<|channel|>analysis<|message|>...``).
* ``tools``, how the system turn declares tools: ``json`` lines, Python ``signatures``, ``xml``
  elements, a ``typescript`` namespace.
* ``turns``: ``special`` (``<|im_start|>role\\n``...), ``header`` (``<|begin|>role<|body|>``...),
  ``brackets`` (``[USER]``...``[/USER]``), ``words`` (``### User:\\n``, assistant turns ended by
  EOS).
* ``results``: a tool ``turn`` per result, or results ``grouped`` in one user turn
  (``loop.previtem`` / ``loop.nextitem``).
* ``content``: ``string``, or ``parts`` (a ``render_content`` macro reading lists of text parts).
* ``strict``: ``lenient``, or ``raise`` (``raise_exception`` for an unexpected role, a misplaced
  system turn, no user turn, arguments given as a string, non-text parts).

Every template also uses macros (the value codec, the argument structure), ``namespace()`` state
(the last user turn; the id counter) and ``loop`` variables.
"""

from __future__ import annotations

from .chat import BOS, EOS, GeneratedTemplate, compose, generate
from .codecs import encode
from .space import AXES, LITERAL_CODECS, WireAxes, allowed, sample_axes

__all__ = [
    "AXES",
    "BOS",
    "EOS",
    "LITERAL_CODECS",
    "GeneratedTemplate",
    "WireAxes",
    "allowed",
    "compose",
    "encode",
    "generate",
    "generate_many",
    "sample_axes",
]


def generate_many(count: int, seed: int = 0) -> list[GeneratedTemplate]:
    """``count`` templates, of seeds ``seed * 1_000_000 + i`` (so runs of different seeds never
    share a template)."""
    return [generate(seed * 1_000_000 + i) for i in range(count)]
