"""The reply ``StreamParser`` writes: content and reasoning text under the whitespace rule, calls
with their arguments, and the OpenAI-shaped ``delta`` dicts that carry them. Where the text is
(markers, calls) is ``stream.py``'s business; this module only writes what it is told.

Whitespace rule (the same in ``parse_output``, which is ``StreamParser`` fed once): whitespace
adjacent to a marker (reasoning open/close, a call emission, a ``strip`` marker) is dropped, so
content pieces are stripped on the side where a marker or call touches them; whitespace elsewhere
is kept. Content on both sides of a call emission is joined with one ``"\n"`` (``"Sure.\n<call>\n
Done."`` gives ``"Sure.\nDone."``), sent with the first content after the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..dialect.spec import DialectSpec, format_template
from ..grammar.optional_null import optional_null_keys
from .null_members import NullMembers
from .reader_events import Begin, End
from .result import ParsedOutput, finished_call

__all__ = ["Delta", "DeltaWriter"]

Delta = dict[str, Any]
"""One OpenAI ``choices[0].delta`` dict."""


@dataclass
class _Call:
    index: int
    id: str
    name: str
    parts: list[str]
    cut: bool = False
    nulls: NullMembers | None = None
    """Drops the members whose ``null`` means "not given" from the arguments text."""


class DeltaWriter:
    """Writes one reply's deltas into ``out`` and keeps its parts for the result.

    Text goes to reasoning while ``reasoning`` is set, else to content; consecutive text of one
    kind in one ``out`` is one delta. A call's deltas go out as they come with
    ``stream_arguments``, else they are held until the call ends (``held``).

    A call's arguments text goes through ``NullMembers`` where its tool (in ``schemas``, the
    offered tools' parameters) has keys whose ``null`` means "not given": such members are
    dropped, each held back until its value shows, so the deltas equal the batch arguments."""

    def __init__(
        self,
        spec: DialectSpec,
        *,
        stream_arguments: bool,
        schemas: Mapping[str, Any] | None = None,
    ) -> None:
        self._spec = spec
        self._stream_arguments = stream_arguments
        self._schemas: Mapping[str, Any] = schemas or {}
        self.reasoning = False
        """Text goes to reasoning (a reasoning block is open)."""
        self.content: list[str] = []
        """The content written so far, in pieces."""
        self.reasoning_text: list[str] = []
        """The reasoning written so far, in pieces."""
        self.calls: list[_Call] = []
        self.current: _Call | None = None
        """The call announced and not yet ended."""
        self.held: list[Delta] | None = None
        """A call's deltas held until it ends (``stream_arguments`` off)."""
        self.out: list[Delta] = []
        """Where deltas go; the parser gives a new list per ``feed`` (``new_out``)."""
        self.pending_ws = ""
        """Whitespace after the last text: written only if text, not a marker, follows."""
        self.drop_ws = False
        """A marker was just read: the next text's leading whitespace is dropped."""
        self.join = False
        """Calls were just read: the next content joins earlier content with one newline."""
        self._run: tuple[Delta, str, list[str]] | None = None
        """The last text delta in ``out`` and its pieces, joined once (``join_run``): adding
        to the delta's string each time would copy it, quadratic in a long batch parse."""

    def new_out(self) -> list[Delta]:
        """A fresh ``out``, returned."""
        out: list[Delta] = []
        self.out = out
        return out

    # text
    def emit(self, s: str) -> None:
        """``s`` as it is, to reasoning or content."""
        key = "reasoning_content" if self.reasoning else "content"
        (self.reasoning_text if self.reasoning else self.content).append(s)
        out, run = self.out, self._run
        if run is not None and out and out[-1] is run[0] and run[1] == key:
            run[2].append(s)
        else:
            self.join_run()
            delta = {key: s}
            out.append(delta)
            self._run = (delta, key, [s])

    def join_run(self) -> None:
        """Write the pieces of the last text delta into it (before ``out`` is handed over)."""
        if self._run is not None:
            delta, key, parts = self._run
            delta[key] = "".join(parts)
            self._run = None

    def write_text(self, t: str) -> bool:
        """``t`` under the whitespace rule; whether any of it is not whitespace (written)."""
        if self.drop_ws:
            t = t.lstrip()
            if not t:
                return False
            self.drop_ws = False
        body = t.rstrip()
        if not body:
            self.pending_ws += t
            return False
        lead = self.pending_ws
        if not self.reasoning and self.join:  # content on both sides of a call block
            self.join = False
            if self.content:
                lead = "\n"  # (held whitespace is empty here: a call is a marker)
        self.emit(lead + body if lead else body)
        self.pending_ws = t[len(body) :]
        return True

    def write_loose_text(self, t: str) -> bool:
        """Text inside an emission that is no call (a broken entry in a list of calls): content
        between calls, joined as such; whether any of it was written."""
        self.join = bool(self.content)
        self.drop_ws, self.pending_ws = False, ""
        written = self.write_text(t)
        self.join = False
        self.mark()
        return written

    def mark(self) -> None:
        """A marker was read here: whitespace on both sides of it is dropped."""
        self.pending_ws = ""
        self.drop_ws = True

    def flush(self) -> None:
        """The end of the reply: whitespace still held is text."""
        if self.pending_ws:
            self.emit(self.pending_ws)
            self.pending_ws = ""

    # calls
    def _send(self, delta: Delta) -> None:
        """A call's delta: out now, or held until the call ends (``stream_arguments`` off)."""
        if self.held is not None:
            self.held.append(delta)
        else:
            self.out.append(delta)

    def begin_call(self, ev: Begin) -> None:
        """A call is certain: announce it (its id written by the model, by the spec's
        ``id_template``, or new)."""
        index = len(self.calls)
        cid = ev.id
        if cid is None and ev.index is not None and self._spec.id_template:
            cid = format_template(self._spec.id_template, name=ev.name, index=ev.index, id="")
        if cid is None:
            cid = self._spec.new_id(name=ev.name, index=index)
        keys = optional_null_keys(self._schemas.get(ev.name))
        self.current = call = _Call(
            index=index,
            id=cid,
            name=ev.name,
            parts=[],
            nulls=NullMembers(keys) if keys else None,
        )
        self.calls.append(call)
        if not self._stream_arguments:
            self.held = []
        self._send(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": cid,
                        "type": "function",
                        "function": {"name": ev.name, "arguments": ""},
                    }
                ]
            }
        )

    def add_arguments(self, text: str) -> None:
        """An arguments fragment of the current call, from its reader."""
        call = self.current
        assert call is not None
        if call.nulls is not None:
            text = call.nulls.feed(text)
        if text:
            call.parts.append(text)
            self._send({"tool_calls": [{"index": call.index, "function": {"arguments": text}}]})

    def add_fragment(self, frag: str) -> list[Delta]:
        """A streamed arguments fragment of the current call, taken from its scanner by the
        parser; returns the deltas to send now (none while the call is held)."""
        call = self.current
        assert call is not None
        if call.nulls is not None:
            frag = call.nulls.feed(frag)
            if not frag:
                return []
        call.parts.append(frag)
        delta = {"tool_calls": [{"index": call.index, "function": {"arguments": frag}}]}
        if self.held is not None:
            self.held.append(delta)
            return []
        return [delta]

    def end_call(self, ev: End) -> bool:
        """The current call ends; False when it was void (announced, but no call: nothing of it
        was sent, and it is forgotten)."""
        call, held = self.current, self.held
        self.current, self.held = None, None
        if ev.void:
            if call is not None and self.calls and self.calls[-1] is call:
                self.calls.pop()
            return False
        if ev.cut and call is not None:
            call.cut = True
        if call is not None and call.nulls is not None:
            rest = call.nulls.flush()  # held text of a member cut short: as written
            call.nulls = None
            if rest:
                call.parts.append(rest)
                delta = {"tool_calls": [{"index": call.index, "function": {"arguments": rest}}]}
                (held if held is not None else self.out).append(delta)
        if held:
            self.out.extend(held)
        return True

    def parsed(self) -> ParsedOutput:
        """The reply written so far, whole."""
        content = "".join(self.content)
        reasoning = "".join(self.reasoning_text)
        return ParsedOutput(
            content=content or None,
            reasoning_content=reasoning or None,
            tool_calls=[
                finished_call(c.id, c.name, c.parts, index=c.index, cut=c.cut) for c in self.calls
            ],
        )
