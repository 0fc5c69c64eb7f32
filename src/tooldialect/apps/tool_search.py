"""Tool search with deferred exposure: an agent with hundreds of tools, a prompt with a few.

250 tools are a prompt of 20k-70k tokens: minutes of prefill on a laptop CPU before the first
word, and every description competes for a small model's attention. With tool search the model
is offered one tool, ``tool_search``, over the names, descriptions and parameter names of all the
others (BM25, no model). The tools a search finds join the offered set for the following steps.
The offered set only grows by appending (``tool_search``, the pinned tools, then each found tool
in the order found), so the rendered prompt of one step is a prefix of the next one's up to the
tools added: the prompt cache and the tool-prefix checkpoint keep what they hold. The grammar is
built from the request's tools, so it allows exactly the offered set.

``Agent(llm, tools=..., tool_search=True)`` turns it on; ``None`` (the default) turns it on
when the agent has more than :data:`SEARCH_ABOVE` tools; ``ToolSearch(...)`` sets the details.
The ranking is Okapi BM25 written here (a few dozen lines over a few hundred short documents):
the libraries that package it pull in numpy and scipy for what this needs none of.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ToolSpecError
from .python_tool import Tool

__all__ = [
    "BM25",
    "SEARCH_ABOVE",
    "SEARCH_TOOL",
    "DeferredTools",
    "ToolIndex",
    "ToolSearch",
    "search_settings",
    "words",
]

SEARCH_TOOL = "tool_search"
"""The name the model calls the search by."""

SEARCH_ABOVE = 30
"""With ``tool_search=None`` an agent searches when it has more tools than this.
``bench/tool_search.py`` (docs/benchmarks.md) at 250 tools: the first token cold in 0.015x the
time, the right tool 7 of 8 times against 4 of 8, but once every tool's prefix is cached the
first token comes faster with all of them offered (1.4 s against 15.3 s). 30 tools are about
3.7k prompt tokens: a minute of cold prefill on a 2-core CPU, cheap once cached, few enough for
a small model to choose among."""

_STOP_WORDS = (
    "a an and are as at be by can do for from how i if in is it its me my of on or the this to "
    "what when which with you your"
)
_STOP = frozenset(_STOP_WORDS.split())
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The search terms of ``text``: camelCase and snake_case split, lower case, common words
    dropped, a plural folded to its singular (``invoices`` and ``invoice`` match)."""
    out = []
    for word in _WORD.findall(_CAMEL.sub(" ", text).lower()):
        if word in _STOP:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def parameter_names(schema: Any) -> list[str]:
    """Every property name of a JSON Schema, nested ones and ``$defs`` too."""
    names: list[str] = []
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, Mapping):
                names.extend(str(k) for k in value)
            names.extend(parameter_names(value))
    elif isinstance(schema, list):
        for value in schema:
            names.extend(parameter_names(value))
    return names


def tool_terms(tool: Tool) -> list[str]:
    """A tool's document: its name's words twice (the name says most about what it does), its
    description and its parameter names."""
    name = words(tool.name.replace(".", " "))
    params = words(" ".join(parameter_names(tool.parameters)))
    return [*name, *name, *words(tool.description), *params]


class BM25:
    """Okapi BM25 over tokenized documents (``k1``, ``b`` as in Robertson's paper; idf kept
    positive for terms in more than half the documents, as Lucene does)."""

    def __init__(
        self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75
    ) -> None:
        self.k1 = k1
        self.b = b
        self.counts = [Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        self.average = sum(self.lengths) / len(documents) if documents else 0.0
        frequency: Counter[str] = Counter()
        for counts in self.counts:
            frequency.update(counts.keys())
        n = len(documents)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def scores(self, query: Iterable[str]) -> list[float]:
        """One score per document (0 where no query term occurs)."""
        terms = list(query)
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.average) if self.average else 0
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            out.append(score)
        return out


class ToolIndex:
    """BM25 over tools' names, descriptions and parameter names."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools = list(tools)
        self.names = tuple(t.name for t in self.tools)
        self._bm25 = BM25([tool_terms(t) for t in self.tools])

    def search(self, query: str, *, limit: int, context: str = "") -> list[Tool]:
        """The ``limit`` best tools for ``query``, best first (ties keep the tools' order);
        none that shares no word with it. ``context`` (the user's request) counts half as much
        as the query: a small model's query often drops the words that name the task."""
        query_words = words(query)
        scores = self._bm25.scores([*query_words, *query_words, *words(context)])
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [self.tools[i] for i in ranked[:limit] if scores[i] > 0]


@dataclass(frozen=True)
class ToolSearch:
    """How an agent defers its tools. ``limit``: tools a search adds at most; ``prefetch``: the
    tools a search for the user's request offers from the first step on (0: none), so a model
    can call the right one without searching first; ``pinned``: tool names offered from the
    first step on; ``above``: with ``tool_search=None``, search when the agent has more tools
    than this."""

    limit: int = 5
    prefetch: int = 3
    pinned: tuple[str, ...] = ()
    above: int = SEARCH_ABOVE

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ToolSpecError(f"ToolSearch.limit must be at least 1, got {self.limit!r}")
        if self.prefetch < 0:
            raise ToolSpecError(f"ToolSearch.prefetch must be at least 0, got {self.prefetch!r}")
        if self.above < 0:
            raise ToolSpecError(f"ToolSearch.above must be at least 0, got {self.above!r}")


def search_settings(option: bool | ToolSearch | None, *, tool_count: int) -> ToolSearch | None:
    """The settings a run defers its tools with, or ``None`` to offer them all: ``True`` and a
    ``ToolSearch`` always search, ``False`` never, ``None`` above :data:`SEARCH_ABOVE` tools."""
    if option is None:
        return ToolSearch() if tool_count > SEARCH_ABOVE else None
    if isinstance(option, ToolSearch):
        return option
    if isinstance(option, bool):
        return ToolSearch() if option else None
    raise ToolSpecError(f"tool_search must be True, False, None or a ToolSearch, got {option!r}")


class DeferredTools:
    """One run's offered set: ``tool_search`` first, the pinned tools, then each tool a search
    found, in the order found. It only grows, by appending."""

    def __init__(
        self, settings: ToolSearch, *, pinned: Iterable[str] = (), context: str = ""
    ) -> None:
        self.settings = settings
        self.context = context
        """The request searches are for (the run's last user message): its words count too."""
        self.offered: list[str] = []
        """The names offered, in order (``tool_search`` not counted)."""
        self._append((*settings.pinned, *pinned))
        self._all: Mapping[str, Tool] = {}
        self._index: ToolIndex | None = None
        self._prefetched = False
        self.tool = Tool.from_function(self.search, name=SEARCH_TOOL)
        """The ``tool_search`` tool the model calls."""

    def offer(self, tools: Mapping[str, Tool], *, called: Iterable[str] = ()) -> dict[str, Tool]:
        """The tools to offer this step, out of all of them (``tools``: MCP servers' lists may
        change between steps; an offered tool that left is no longer offered). A tool ``called``
        by name joins too: a model (or a client without the grammar) that knows it needs no
        search, and the call runs."""
        if SEARCH_TOOL in tools:
            raise ToolSpecError(
                f"a tool is named {SEARCH_TOOL!r}, the name of the tool search; rename it or pass "
                "tool_search=False"
            )
        missing = [n for n in self.settings.pinned if n not in tools]
        if missing:
            raise ToolSpecError(f"ToolSearch.pinned names tools the agent lacks: {missing}")
        self._all = tools
        if not self._prefetched:  # once, on the first step: the request's best matches
            self._prefetched = True
            if self.settings.prefetch and self.context:
                self._append(t.name for t in self._search(self.context, self.settings.prefetch))
        self._append(n for n in called if n in tools)
        return {SEARCH_TOOL: self.tool, **{n: tools[n] for n in self.offered if n in tools}}

    def search(self, query: str) -> str:
        """Find the tool for a task among many more tools than the ones listed. Only tools a
        search found can be called: search before you say that you cannot do something.

        Args:
            query: The task, in a few words.
        """
        found = self._search(query, self.settings.limit, context=self.context)
        if not found:
            return f"No tool matches {query!r}. Search again with other words, or answer."
        self._append(t.name for t in found)
        lines = [
            f"- {t.name}({', '.join(t.parameters.get('properties', {}))}): {_first(t)}"
            for t in found
        ]
        return "Found these tools; call the one that does the task:\n" + "\n".join(lines)

    def _search(self, query: str, limit: int, *, context: str = "") -> list[Tool]:
        index = self._index
        if index is None or index.names != tuple(self._all):
            index = self._index = ToolIndex(self._all.values())
        return index.search(query, limit=limit, context=context)

    def _append(self, names: Iterable[str]) -> None:
        for name in names:
            if name != SEARCH_TOOL and name not in self.offered:
                self.offered.append(name)


def _first(tool: Tool) -> str:
    """A tool's description, first sentence (the offered tool's full schema is in the prompt)."""
    text = " ".join(tool.description.split())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text
