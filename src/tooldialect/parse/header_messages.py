"""``MessageParser``: a reply of header-addressed messages (``DialectSpec.messages``, harmony).

The reply is read message by message. At a message boundary (the start of the reply, after an
end marker, at a ``start`` marker, or at a channel token inside headerless text) the header is
read as tokens (``headers.py``) and routed: reasoning and answer bodies stream out as they come;
a call's body is held until its message ends, then read as JSON arguments, or, when it is not a
JSON object (a ``call_recipients`` message, an XML invoke), by the spec's own call formats.
End-of-message markers never reach the result. Text that is not a header is content, verbatim.

Every decision depends only on the text seen, and text that may still grow into a marker is held
back, so streaming equals batch under any chunking. Whitespace next to a marker is dropped, as in
``StreamParser``; the content of two messages (or around a call) is joined with one ``"\n"``,
reasoning pieces are joined as written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..dialect.spec import DialectSpec, MessageHeaders
from ..errors import ToolDialectError
from ..grammar.optional_null import optional_null_keys
from ..tool_defs import ToolLike, normalize_tools
from .headers import CUT, MAYBE, Header, route
from .headers import read_header as _read_header
from .jsonscan import NEED, JsonScanner
from .null_members import drop_null_members
from .result import ParsedOutput, ToolCall

__all__ = ["FormatReader", "MessageParser"]

FormatReader = Callable[[DialectSpec, str, bool], ParsedOutput]
"""Reads a message body by a spec's own call formats: ``(spec, body, truncated)`` -> the whole
read. ``StreamParser`` passes its batch read (the caller above, so this module does not import
it)."""

_HEAD, _BODY, _TEXT = range(3)


def _earliest(buf: str, p: int, stops: Sequence[str]) -> tuple[int, str]:
    """The first of ``stops`` in ``buf`` from ``p``: ``(at, stop)``, ``(-1, "")`` if none."""
    best, hit = -1, ""
    for s in stops:
        k = buf.find(s, p)
        if k >= 0 and (best < 0 or k < best or (k == best and len(s) > len(hit))):
            best, hit = k, s
    return best, hit


def _held_from(buf: str, p: int, stops: Sequence[str]) -> int:
    """Where a suffix of ``buf`` that may still grow into one of ``stops`` begins."""
    n = len(buf)
    end = n
    for s in stops:
        for k in range(max(p, n - len(s) + 1), n):
            if s.startswith(buf[k:]):
                end = min(end, k)
                break
    return end


def json_arguments(body: str, *, cut: bool, truncated: bool) -> str | None:
    """A call body's JSON object arguments text, or ``None``. ``cut``: the text ended inside the
    message (no end marker), so a JSON object cut short is healed, unless ``truncated`` (the
    token limit cut it: a call held until its end never completes, it stays content)."""
    text = body.strip()
    if not text.startswith("{"):
        return None
    try:
        value, end = json.JSONDecoder(strict=False).raw_decode(text)
    except ValueError:
        if not cut or truncated:
            return None
        sc = JsonScanner(0)
        if sc.advance(text, False) != NEED:
            return None
        healed = sc.take_safe() + sc.heal()
        if not healed.startswith(text.rstrip(" \t\r\n,:")):
            return None  # healing would drop text (a key cut short): not a call, content
        try:
            return healed if isinstance(json.loads(healed), dict) else None
        except ValueError:
            return None
    if not isinstance(value, dict) or text[end:].strip():
        return None
    try:
        json.loads(text[:end])
    except ValueError:  # raw control characters in strings: the arguments re-encoded
        return json.dumps(value, ensure_ascii=False)
    return text[:end]


def _key(kind: str) -> str:
    """Where a message's body goes: a built-in recipient's message (the model's own tool use,
    not an offered tool, not an answer) is reasoning (docs/parsing.md)."""
    return "content" if kind == "content" else "reasoning"


class MessageParser:
    """``StreamParser``'s API (``feed``, ``close``, ``result``, the same deltas) for a spec with
    ``messages``; ``StreamParser`` hands such a spec to it, with ``read_formats``, its own read
    of a body in the spec's call formats (an XML invoke inside a message), and ``read_calls``
    (``False``: a call message is content, verbatim; reasoning and answers are read as ever)."""

    def __init__(
        self,
        spec: DialectSpec,
        *,
        read_formats: FormatReader,
        tools: Sequence[ToolLike] | None = None,
        reasoning_open: bool = False,
        prefill: str = "",
        end_of_turn: Sequence[str] = (),
        read_calls: bool = True,
    ) -> None:
        assert spec.messages is not None
        self._read_calls = read_calls
        """``False`` (``tool_choice="none"``): a message addressed to a function stays content,
        as written from its header to its end marker; the other messages are read as ever."""
        self._header_text = ""
        """The text of the open message's start marker and header, as written."""
        self._spec = spec
        self._read_formats = read_formats
        self._m: MessageHeaders = spec.messages
        defs = normalize_tools(tools)
        self._names = frozenset(t.name for t in defs)
        self._schemas = {t.name: t.parameters for t in defs}
        m = self._m
        self._ends = [e.strip() for e in m.ends if e.strip()]
        self._start = m.start.strip()
        starts = [self._start] if self._start else []  # an empty marker would match everywhere
        self._starts = starts
        self._eot = [e.strip() for e in end_of_turn if e.strip() and e.strip() not in self._ends]
        self._eot = [e for e in self._eot if e != self._start]
        own = [e.strip() for e in m.reasoning_ends if e.strip()]
        self._own = own or self._ends
        self._foreign = [e for e in self._ends if e not in self._own]
        self._channel = m.channel.strip()
        self._longest = max(map(len, [*self._ends, *starts, *self._eot]), default=1)
        self._seen = 0
        """How far a held call body was searched for its end."""
        self.buf = ""
        self.final = False
        self._truncated = False
        self._mode = _HEAD
        self._kind = "content"
        self._name = ""
        self._fresh = True
        """No text of the current piece was emitted yet (its leading whitespace is dropped)."""
        self._fallback = False
        """The header being read started at a channel token inside text: if it is none, the
        token is text."""
        self._ws = 0
        """Where whitespace held before a channel token started (``_fallback``)."""
        self._join = False
        self._gap = False
        """A built-in's recipient was emitted: the next reasoning text follows it after a space."""
        self._ended = False
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        self._out: list[dict[str, Any]] = []
        self._result: ParsedOutput | None = None
        if reasoning_open and spec.reasoning is not None:
            prefill = spec.reasoning.open + prefill
        if prefill:  # read like output, never emitted
            self.buf = prefill
            self._advance()
            self._out, self._content, self._reasoning = [], [], []

    # public API
    def feed(self, text: str) -> list[dict[str, Any]]:
        """Consume ``text``; return the deltas it completes (possibly none)."""
        if self.final:
            raise ToolDialectError("StreamParser.feed() after close(); create a new parser")
        if self._ended:
            return []
        self._out = []
        self.buf += text
        self._advance()
        return self._out

    def close(self, *, truncated: bool = False) -> list[dict[str, Any]]:
        """End of the reply (see ``StreamParser.close``)."""
        if self.final:
            return []
        self.final, self._truncated = True, truncated
        self._out = []
        if not self._ended:
            self._advance()
        self._result = ParsedOutput(
            content="".join(self._content) or None,
            reasoning_content="".join(self._reasoning) or None,
            tool_calls=list(self._calls),
        )
        return self._out

    @property
    def result(self) -> ParsedOutput:
        """The whole reply parsed; available after ``close``."""
        if self._result is None:
            raise ToolDialectError("StreamParser.result is available after close(); call close()")
        return self._result

    # output
    def _emit(self, kind: str, text: str) -> None:
        if not text:
            return
        if kind == "content":
            if self._join and self._content:
                text = "\n" + text
            self._join = False
            self._content.append(text)
            key = "content"
        else:
            if self._gap:
                text, self._gap = " " + text, False
            self._reasoning.append(text)
            key = "reasoning_content"
        if self._out and list(self._out[-1]) == [key]:
            self._out[-1] = {key: self._out[-1][key] + text}
        else:
            self._out.append({key: text})

    def _piece(self, kind: str, a: int, b: int, *, closed: bool) -> int:
        """Emit ``buf[a:b]`` as part of the current piece; ``closed``: a marker ends the piece at
        ``b`` (its trailing whitespace is dropped), else trailing whitespace waits. Returns how far
        the text was consumed."""
        text = self.buf[a:b]
        if self._fresh:
            stripped = text.lstrip()
            a += len(text) - len(stripped)
            text = stripped
        body = text.rstrip() if (closed or not self.final) else text
        if body:
            self._emit(kind, body)
            self._fresh = False
        if closed:
            self._fresh = True
            return b
        return a + len(body) if body else a

    def _add_call(self, name: str, args: str) -> None:
        # a call's body comes whole: its members whose null means "not given" go at once
        args = drop_null_members(args, optional_null_keys(self._schemas.get(name)))
        index = len(self._calls)
        cid = self._spec.new_id(name=name, index=index)
        call = ToolCall(
            id=cid, name=name, arguments=json.loads(args), arguments_json=args, index=index
        )
        self._calls.append(call)
        self._join = bool(self._content)
        self._out.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        self._out.append({"tool_calls": [{"index": index, "function": {"arguments": args}}]})

    # the scan
    def _advance(self) -> None:
        while not self._ended:
            if self._mode == _HEAD:
                go = self._head()
            elif self._mode == _BODY:
                go = self._body()
            else:
                go = self._text()
            if not go:
                break
        if self._ended:
            self.buf = ""

    def _head(self) -> bool:
        """At a message boundary: a start marker, then a header, else headerless text."""
        buf = self.buf
        lead = len(buf) - len(buf.lstrip())
        p = lead if not self._fallback else 0
        rest = buf[p:]
        if not self._fallback:
            for marker in self._eot:
                if rest.startswith(marker):
                    self._ended = True
                    return False
            if self._start and rest.startswith(self._start):
                p += len(self._start)
            elif self._start and self._start.startswith(rest) and not self.final:
                return False
        got = _read_header(
            buf,
            p,
            self._m,
            final=self.final,
            stops=(*self._ends, *self._starts, *self._eot),
            marked=p > len(buf) - len(buf.lstrip()),
        )
        if got == MAYBE:
            return False
        if isinstance(got, Header):
            # where the message's own text begins: its start marker, or its channel token
            self._header_text = buf[self._ws if self._fallback else lead : got.end]
            self._open(got)
            return True
        # no header: text (a channel token that opened none is text too)
        if self._fallback:
            self._fallback = False
            k = self._ws + len(self._channel)
            self._emit("content", buf[:k])
            self._fresh = False
            self.buf = buf[k:]
        elif (got == CUT and self._truncated) or (not buf[p:].strip() and self.final):
            # a start marker alone, or a header the token limit cut, is framing; a header the
            # reply itself ended inside never became a message: its text stays content, as
            # written (the fuzz found ``<|lane|>w1q`` dropped whole for a marked cut header)
            self.buf = ""
            return False
        else:
            self.buf = buf[p:]
        self._mode = _TEXT
        return True

    def _open(self, header: Header) -> None:
        self._kind, self._name = route(header, self._m, self._names)
        if self._kind == "builtin":
            # the recipient token, as written, says which tool the body is for; dropped, a word of
            # the reply was lost (the fuzz found `` to=w1q<|lane|>final<|txt|>`` vanishing whole)
            lead = "\n" if self._reasoning else ""  # its own line after other reasoning
            self._emit("reasoning", lead + self._m.recipient.strip() + self._name)
            self._gap = True
        self._fallback = False
        self._fresh = True
        self.buf = self.buf[header.end :]
        self._mode = _BODY

    def _stops(self) -> list[str]:
        own = self._own if self._kind == "reasoning" else self._ends
        return [*own, *self._starts, *self._eot]

    def _body(self) -> bool:
        buf = self.buf
        stops = self._stops()
        # a held call body is searched only where a stop may begin in text not seen before
        at, stop = _earliest(buf, max(0, self._seen - self._longest), stops)
        if at < 0 and self._kind == "reasoning" and (self._foreign or self._channel):
            loose = self._unclosed_end(buf)
            if loose is None:
                return False
            at, stop = loose
        if at < 0:
            if not self.final:
                self._seen = len(buf)
                if self._kind != "call" and self._kind != "calls":
                    self._seen = 0  # the text is consumed below: the buffer starts anew
                    held = [*stops, *self._foreign]
                    if self._kind == "reasoning" and self._channel:
                        held.append(self._channel)
                    end = _held_from(buf, 0, held)
                    self.buf = buf[self._piece(_key(self._kind), 0, end, closed=False) :]
                return False
            at = len(buf)
        self._seen = 0
        self._finish(buf[:at], cut=not stop, end=stop if stop in self._ends else "")
        self._join = bool(self._content)  # the next message's content starts a new line
        self._ended = stop in self._eot
        self.buf = buf[at + len(stop) if stop not in (self._start, self._channel) else at :]
        self._mode = _HEAD
        return True

    def _unclosed_end(self, buf: str) -> tuple[int, str] | None:
        """Where a reasoning message with no reasoning end in sight ends: ``(-1, "")`` where
        nothing ends it (yet), ``None`` to wait. Another end marker, or a channel token that opens
        a whole header (``...thought<|channel|>final<|message|>``), ends it only if no reasoning
        end comes: until the text is final, the body is held from the first of them (a call
        quoted in reasoning that is closed later stays reasoning)."""
        cands = [*self._foreign, *([self._channel] if self._channel else [])]
        first, _ = _earliest(buf, 0, cands)
        if first < 0:
            return -1, ""
        if not self.final:
            self.buf = buf[self._piece("reasoning", 0, first, closed=False) :]
            return None
        k = first
        while k >= 0:
            k, hit = _earliest(buf, k, cands)
            if k < 0:
                break
            if hit != self._channel:
                return k, hit
            got = _read_header(buf, k, self._m, final=True, stops=(*self._ends, *self._starts))
            if isinstance(got, Header):
                return k, hit
            k += len(hit)
        return -1, ""

    def _finish(self, body: str, *, cut: bool, end: str = "") -> None:
        """The message ends after ``body`` (and its end marker ``end``, ``""`` where none)."""
        kind = self._kind
        if kind not in ("call", "calls"):
            self.buf = body
            self._piece(_key(kind), 0, len(body), closed=True)
            return
        if not self._read_calls:  # no call is read: the message stays text, as written
            self.buf = self._header_text + body + end
            self._piece("content", 0, len(self.buf), closed=True)
            return
        # every call message is read (``parallel_calls`` bounds what grammars write: a reply of
        # messages may still hold several)
        if kind == "call":
            args = json_arguments(body, cut=cut, truncated=self._truncated)
            if args is not None:
                self._add_call(self._name, args)
                return
        # a body that opens a JSON object is the arguments or nothing; other bodies (an XML
        # invoke, a ``call_recipients`` message) may hold calls in the spec's own formats
        if (kind == "calls" or not body.lstrip().startswith("{")) and self._inner_calls(body):
            return
        self.buf = body  # not a call: its body is content
        self._piece("content", 0, len(body), closed=True)

    def _inner_calls(self, body: str) -> bool:
        """Calls in ``body`` written in the spec's own formats (an XML invoke): added, with the
        body's other text, when there are any."""
        got = self._read_formats(
            self._spec.model_copy(update={"messages": None}), body, self._truncated
        )
        if not got.tool_calls or any(c.truncated for c in got.tool_calls):
            return False
        if got.reasoning_content:
            self._emit("reasoning", got.reasoning_content)
        if got.content:
            self._emit("content", got.content)
        for call in got.tool_calls:
            self._add_call(call.name, call.arguments_json)
        return True

    def _text(self) -> bool:
        """Headerless text: content up to an end marker, a start marker or a channel token."""
        buf = self.buf
        stops = [*self._ends, *self._starts, *self._eot]
        if self._channel:
            stops.append(self._channel)
        at, stop = _earliest(buf, 0, stops)
        if at < 0:
            end = len(buf) if self.final else _held_from(buf, 0, stops)
            self.buf = buf[self._piece("content", 0, end, closed=False) :]
            return False
        if stop == self._channel:
            # a header may start here: hold the whitespace before it until that is known
            keep = self._piece("content", 0, at, closed=False)
            self.buf = buf[keep:]
            self._ws = at - keep
            self._fallback = True
            self._mode = _HEAD
            return True
        self._piece("content", 0, at, closed=True)
        self._join = bool(self._content)
        self._ended = stop in self._eot
        self.buf = buf[at + len(stop) if stop != self._start else at :]
        self._mode = _HEAD
        return True
