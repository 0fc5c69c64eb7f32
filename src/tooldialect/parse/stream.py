"""``StreamParser``: a model reply read piece by piece into OpenAI-shaped ``delta`` dicts.

Outside calls the parser scans for marker *cores* (the marker text without its surrounding
whitespace, which is optional): reasoning open/close, ``strip`` markers and the openers of the
spec's call formats (planned once per spec, in ``stream_plan.py``). Only a suffix that could
still become a marker is held back, so the work per chunk is proportional to the chunk. Once an
opener is seen, a call reader (``calls.py``) takes over and holds the text until the call is
certain; a call that fails before then is given back as content, unchanged.

What the text becomes (content and reasoning under the whitespace rule, calls, the deltas) is
written by ``deltas.DeltaWriter``; this module decides where each piece of text goes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..dialect.spec import DialectSpec
from ..errors import ToolDialectError
from ..tool_defs import ToolLike, normalize_tools
from .calls import (
    BROKEN,
    FAIL,
    Args,
    Begin,
    Context,
    End,
    Reader,
    read_emission,
)
from .deltas import Delta, DeltaWriter
from .header_messages import FormatReader, MessageParser
from .jsonscan import NEED, PLAIN_STRING_STOP, JsonScanner
from .reader_events import Text
from .result import ParsedOutput
from .stream_plan import CALL as _CALL
from .stream_plan import CLOSE as _CLOSE
from .stream_plan import END as _END
from .stream_plan import OPEN as _OPEN
from .stream_plan import Plan, Scan, plan_for
from .variants import read_whole, reads_a_call

__all__ = ["StreamParser"]

_NEXT, _WAIT, _READ = range(3)
"""What ``_on_marker`` says the scan does next."""

_WS = re.compile(r"\s+")
_PLAIN_STOP = PLAIN_STRING_STOP.search


class StreamParser:
    """Incremental parser of one reply; ``feed`` text pieces, then ``close``.

    Deltas are OpenAI ``choices[0].delta`` dicts: ``{"content": s}``, ``{"reasoning_content": s}``,
    a call's first delta ``{"tool_calls": [{"index", "id", "type": "function", "function":
    {"name", "arguments": ""}}]}`` (sent once the call is certain, see ``calls.py``), then
    ``{"tool_calls": [{"index", "function": {"arguments": fragment}}]}``. JSON arguments stream
    as they are generated; element and python arguments come whole when their call ends.

    ``prefill`` is text the prompt already wrote at the start of the assistant turn that belongs
    to the output grammar (Functionary v3.2's generation prompt ends with ``>>>``): it is read as
    if fed first but never emitted, neither as a delta nor in ``result``. ``reasoning_open=True``
    (the prompt ended inside an open reasoning block) is ``prefill=spec.reasoning.open``, put
    before any ``prefill`` given too. A call opener inside a block the prompt opened ends the
    block when a call is read there, whether a close follows or not (the close is then dropped).

    ``stream_arguments``: JSON arguments stream as they are generated, once the call is certain.
    Off (the default), a call's deltas are held until the call ends, because a call whose JSON
    arguments break before the end of the text is no call and stays content; streaming then
    equals batch under any chunking. Turn it on where a grammar constrains the calls (their JSON
    cannot break): a broken call is then kept with its arguments healed, batch alike.

    ``end_of_turn``: marker texts that end the reply (the template's end of an assistant turn,
    such as ``<|im_end|>``, written as text): the marker and anything after it never reach the
    result. The front end passes the markers its template writes after an assistant turn.

    ``read_calls=False``: no call is read (``tool_choice="none"``): a call's text stays content,
    verbatim, while reasoning is still split off; in header-addressed messages (``spec.messages``)
    a message addressed to a function stays content, from its header to its end marker.
    """

    def __init__(
        self,
        spec: DialectSpec,
        *,
        tools: Sequence[ToolLike] | None = None,
        reasoning_open: bool = False,
        prefill: str = "",
        end_of_turn: Sequence[str] = (),
        stream_arguments: bool = False,
        read_calls: bool = True,
    ) -> None:
        self._spec = spec
        self._messages: MessageParser | None = None
        """Header-addressed messages (``spec.messages``) are read by ``MessageParser``."""
        if spec.messages is not None:
            self._messages = MessageParser(
                spec,
                read_formats=_formats_reader(tools),
                tools=tools,
                reasoning_open=reasoning_open,
                prefill=prefill,
                end_of_turn=end_of_turn,
                read_calls=read_calls,
            )
        defs = normalize_tools(tools)
        schemas = {t.name: t.parameters for t in defs}
        self._w = DeltaWriter(spec, stream_arguments=stream_arguments, schemas=schemas)
        """What the text becomes: content, reasoning, calls, their deltas."""
        self._plan = plan_for(spec, tuple(end_of_turn))
        if not read_calls:
            self._plan = _without_calls(self._plan)
        ends = sorted({m.strip() for m in end_of_turn if m.strip()}, key=len, reverse=True)
        self._end_re = re.compile("|".join(map(re.escape, ends))) if ends else None
        """The end-of-turn markers: the first one ends the reply wherever it stands, inside a
        call too (a call missing its closer before ``<|im_end|>`` is a call at the end)."""
        self._end_starts = tuple(m[:i] for m in ends for i in range(len(m) - 1, 0, -1))
        self._end_hold = ""
        """The end of the text fed so far that may begin an end-of-turn marker: held back."""
        self._ctx = Context(spec=spec, schemas=schemas, retract=not stream_arguments)
        self.buf = ""
        """Text not yet consumed (the current call's text while one is being read, less plain
        string text of JSON arguments, which goes straight out as fragments)."""
        self.final = False
        """True once ``close`` was called."""
        self._pos = 0
        self._prefill_left = 0
        self._reader: Reader | None = None
        self._cands: tuple[int, ...] = ()
        self._cand_i = 0
        self._cand_at = 0
        self._cand_core = ""
        self._hold_seen = 0
        self._at_start = bool(self._plan.start)
        self._result: ParsedOutput | None = None
        self._plain = False
        self._jsc: JsonScanner | None = None
        self._jstr = False
        self._jtail: list[str] = []
        """Plain string text of a held call's arguments not yet added to ``buf``."""
        self._fast_mode: bool | None = None
        self._fast_key = "content"
        self._fast_acc = self._w.content.append
        self._fast_char: str | None = None
        self._fast_search: Callable[[str], object] = _no_match
        self._ended = False
        """An end-of-turn marker was read: the rest of the text is not the reply."""
        self._prompt_block = False
        """The reasoning block now open was opened by the prompt (``reasoning_open``/prefill)."""
        self._ends_reasoning = False
        """The call reader now running was started inside a prompt-opened block."""
        self._stray_close = False
        """Calls ended a prompt-opened block: the next reasoning close is dropped."""
        self._block_mark = 0
        """Pieces of reasoning text when the open block began: none since, and its opener
        written again is a repeat (dropped), not text."""
        if reasoning_open and spec.reasoning is not None and self._plan.has_reasoning:
            prefill = spec.reasoning.open + prefill
        if prefill:  # read like output, through the general path, never emitted
            self.buf = prefill
            self._prefill_left = len(prefill)
            self._advance()
            self._w.new_out()
        self._refresh_fast()

    # public API
    def feed(self, text: str) -> list[Delta]:
        """Consume ``text``; return the deltas it completes (possibly none)."""
        if self._messages is not None:
            return self._messages.feed(text)
        if self._ended and not self.final:
            return []  # past the end of the turn
        if self._end_re is not None and not self.final:
            text = self._end_hold + text
            m = self._end_re.search(text)
            if m is not None:
                self._end_hold = ""
                out = self._feed(text[: m.start()])
                self._marker()
                self._ended = True
                self._refresh_fast()
                return out
            keep = next((len(e) for e in self._end_starts if text.endswith(e)), 0)
            self._end_hold = text[len(text) - keep :] if keep else ""
            text = text[: len(text) - keep] if keep else text
        return self._feed(text)

    def _feed(self, text: str) -> list[Delta]:
        # Hot paths first; each leaves exactly the state the general path below would.
        if self._plain and text:
            # no call open, nothing held back, no character that could start a marker: content
            char = self._fast_char
            if (char not in text) if char is not None else (self._fast_search(text) is None):
                w = self._w
                if w.drop_ws:
                    out = w.new_out()
                    w.write_text(text)
                    w.join_run()
                    return out
                if text[-1].isspace():  # trailing whitespace waits: a marker may follow
                    body = text.rstrip()
                    if not body:
                        w.pending_ws += text
                        return []
                    tail = text[len(body) :]
                else:
                    body, tail = text, ""
                if w.pending_ws:
                    body = w.pending_ws + body
                w.pending_ws = tail
                self._fast_acc(body)
                return [{self._fast_key: body}]
        elif self._jsc is not None and text:
            sent = self._feed_args(self._jsc, text)
            if sent is not None:
                return sent
            text = ""
        if self.final:
            raise ToolDialectError("StreamParser.feed() after close(); create a new parser")
        out = self._w.new_out()
        self._jsc = None
        self.buf = self._merged() + text
        self._advance()
        self._refresh_fast()
        self._w.join_run()
        return out

    def _feed_args(self, sc: JsonScanner, text: str) -> list[Delta] | None:
        """Streaming JSON arguments: drive the reader's scanner here (see ``calls.Wait``); None
        where the value ended or broke (the reader takes over)."""
        if self._jstr and _PLAIN_STOP(text) is None:
            # plain text inside a string value: all of it is a safe fragment. It is not added
            # to buf (kept linear in long strings): the scanner never reads it again and,
            # the call being certain, nothing before the scanner's position is re-read.
            # Held calls may still be given back as content: their text is kept aside.
            frag = text
            if self._w.held is not None:
                self._jtail.append(text)
                sc.skip_plain(len(text))
        else:
            self.buf = buf = self._merged() + text
            if sc.advance(buf, False) == NEED:
                frag = sc.take_safe()
                self._jstr = sc.in_open_string(len(buf))
            else:  # the value ended or broke: the reader takes over
                frag = None
        if frag is None:
            return None
        if not frag:
            return []
        return self._w.add_fragment(frag)

    def _merged(self) -> str:
        """``buf`` with the plain string text the hot path kept aside put back."""
        if not self._jtail:
            return self.buf
        tail = "".join(self._jtail)
        self._jtail.clear()
        return self.buf + tail

    def _refresh_fast(self) -> None:
        """Decide whether the next chunk may take the hot path in ``feed``."""
        self._plain = (
            self._reader is None
            and not self.buf
            and not self._at_start
            and not self.final
            and not self._ended
        )
        mode = self._w.reasoning
        if mode != self._fast_mode:
            self._fast_mode = mode
            scan = self._plan.reasoning if mode else self._plan.content
            self._fast_key = "reasoning_content" if mode else "content"
            self._fast_acc = (self._w.reasoning_text if mode else self._w.content).append
            self._fast_char = next(iter(scan.firsts)) if len(scan.firsts) == 1 else None
            self._fast_search = scan.first.search if scan.first is not None else _no_match

    def close(self, *, truncated: bool = False) -> list[Delta]:
        """End of the reply: flush held text, finish or give back an open call.

        ``truncated``: the token limit cut the reply (``finish_reason == "length"``). A cut-off
        call then never becomes a complete call: one not yet announced stays content; one already
        announced (its JSON arguments streaming) gets the rest of its partial arguments text and
        is marked ``ToolCall.truncated``. See docs/parsing.md."""
        if self._messages is not None:
            return self._messages.close(truncated=truncated)
        if self.final:
            return []
        held, self._end_hold = self._end_hold, ""
        out_held = self._feed(held) if held and not self._ended else []
        self._ctx.truncated = truncated
        self.final = True
        self._plain = False
        self._jsc = None
        self.buf = self._merged()
        out = self._w.new_out()
        self._advance()
        self._w.flush()
        self._result = self._w.parsed()
        self._w.join_run()
        return [*out_held, *out] if out_held else out

    @property
    def result(self) -> ParsedOutput:
        """The whole reply parsed; available after ``close``."""
        if self._messages is not None:
            return self._messages.result
        if self._result is None:
            raise ToolDialectError("StreamParser.result is available after close(); call close()")
        return self._result

    # text outside calls
    def _text(self, t: str) -> None:
        if self._w.write_text(t) and not self._w.reasoning:
            self._at_start = False

    def _give(self, a: int, b: int) -> None:
        """``buf[a:b]`` is content, less what of it is prefill (never emitted)."""
        if a < self._prefill_left:
            a = min(self._prefill_left, b)
        if a < b:
            self._text(self.buf[a:b])

    def _marker(self) -> None:
        self._w.mark()

    def _advance(self) -> None:
        while True:
            if self._reader is not None:
                if not self._step():
                    return
            elif not self._scan():
                break
        if self._pos:
            self.buf = self.buf[self._pos :]
            self._hold_seen = max(0, self._hold_seen - self._pos)
            if self._prefill_left:
                self._prefill_left = max(0, self._prefill_left - self._pos)
            self._pos = 0

    def _scan(self) -> bool:
        """Scan text outside calls; True when a call reader was started."""
        buf, pos, plan = self.buf, self._pos, self._plan
        while True:
            if self._at_start and not self._w.reasoning:
                m = _WS.match(buf, pos)
                p = m.end() if m else pos
                if p >= len(buf) and not self.final:
                    return False
                self._give(pos, p)
                self._pos = pos = p
                if p < len(buf):
                    self._at_start = False
                    self._start_reader(plan.start, p, "")
                    return True
            scan = plan.reasoning if self._w.reasoning else plan.content
            m = scan.regex.search(buf, pos) if scan.regex is not None else None
            if m is None:
                k = 0 if self.final else scan.held(buf, pos)
                self._give(pos, len(buf) - k)
                self._pos = len(buf) - k
                return False
            if not self.final:
                # a longer marker may still match at or before this one (">>>" vs ">>>all"):
                # wait, as the whole text would have shown it
                j = len(buf) - scan.held(buf, pos)
                if j <= m.start():
                    self._give(pos, j)
                    self._pos = j
                    return False
            self._give(pos, m.start())
            action, formats = scan.actions[m.group()]
            step = self._on_marker(m, action, formats)
            if step != _NEXT:
                return step == _READ
            pos = self._pos

    def _on_marker(self, m: re.Match[str], action: int, formats: tuple[int, ...]) -> int:
        """Act on the marker ``m`` (the text before it is given): ``_READ`` when a call reader
        was started, ``_WAIT`` to wait for more text, else ``_NEXT`` (scan on from ``_pos``)."""
        if action == _CALL:
            return self._on_call(m, formats)
        if action == _END:  # the end of the turn: nothing after it is the reply
            self._marker()
            self._ended = True
            self._pos = len(self.buf)
            return _WAIT
        if action == _CLOSE and not self._w.reasoning:
            if not self._stray_close:  # a close with no block open: text
                self._give(m.start(), m.end())
                self._pos = m.end()
                return _NEXT
            self._stray_close = False
        if action == _OPEN and self._w.reasoning:
            if len(self._w.reasoning_text) != self._block_mark:  # the opener quoted in reasoning
                self._give(m.start(), m.end())
                self._pos = m.end()
                return _NEXT
            self._marker()  # the block's opener repeated: a marker, the block goes on
            self._pos = m.end()
            return _NEXT
        self._marker()
        if action == _OPEN:
            self._w.reasoning = True
            self._prompt_block = m.start() < self._prefill_left
            self._block_mark = len(self._w.reasoning_text)
        elif action == _CLOSE:
            self._w.reasoning = self._prompt_block = False
            self._at_start = self._at_start or (bool(self._plan.start) and not self._w.content)
        self._pos = m.end()
        return _NEXT

    def _on_call(self, m: re.Match[str], formats: tuple[int, ...]) -> int:
        if self._w.reasoning and self._prompt_block:
            # the generation prompt opened the block: a call ends it, closed later or not
            self._ends_reasoning = True
        elif self._w.reasoning:
            verdict = self._call_in_reasoning(m, formats)
            if verdict is None:
                return _WAIT  # the block may still be closed
            if not verdict:  # quoted in reasoning: text
                self._give(m.start(), m.end())
                self._pos = m.end()
                return _NEXT
            self._w.reasoning = False
        elif not self._spec.parallel_calls and self._w.calls:
            self._give(m.start(), m.end())  # a second call where the dialect allows one: content
            self._pos = m.end()
            return _NEXT
        self._pos = m.start()
        self._start_reader(formats, m.start(), m.group())
        return _READ

    def _call_in_reasoning(self, m: re.Match[str], formats: tuple[int, ...]) -> bool | None:
        """A call opener inside a reasoning block: it ends the block (True) only when the block is
        never closed after it and a complete call follows; None while that is undecided."""
        buf, closes = self.buf, self._plan.closes
        assert closes is not None
        if closes.search(buf, max(m.end(), self._hold_seen)) is not None:
            self._hold_seen = 0
            return False
        if not self.final:
            # hold the text from the opener; search only new text for a close next time
            self._pos = m.start()
            self._hold_seen = max(m.end(), len(buf) - self._plan.close_longest + 1)
            return None
        self._hold_seen = 0
        if not self._spec.parallel_calls and self._w.calls:
            return False
        plans = [self._plan.formats[i] for i in formats]
        return reads_a_call(buf, m.start(), plans, self._ctx)

    # calls
    def _start_reader(self, cands: tuple[int, ...], at: int, core: str) -> None:
        self._cands, self._cand_i, self._cand_at, self._cand_core = cands, 0, at, core
        self._reader = self._read(cands[0], at)

    def _read(self, i: int, at: int) -> Reader:
        read = read_whole if i in self._plan.whole else read_emission
        return read(self, at, self._plan.formats[i], self._ctx)

    def _step(self) -> bool:
        """Run the call reader; False when it waits for more text."""
        reader = self._reader
        assert reader is not None
        while True:
            try:
                ev = next(reader)
            except StopIteration as stop:
                end, status = stop.value
                self._reader_done(end, status)
                return True
            if ev is None or isinstance(ev, JsonScanner):
                if self.final:  # readers decide at the end; this is a safety net
                    self._reader_done(self._cand_at, FAIL)
                    return True
                self._jsc = ev
                self._jstr = ev is not None and ev.in_open_string(len(self.buf))
                return False
            self._event(ev)

    def _reader_done(self, end: int, status: int) -> None:
        self._reader = None
        if self._w.current is not None and status == FAIL:  # announced, never ended: no call
            self._end_call(End(void=True))
        if status == FAIL:
            self._cand_i += 1
            if self._cand_i < len(self._cands):
                self._reader = self._read(self._cands[self._cand_i], self._cand_at)
                return
            # not a call: the opener is content and scanning goes on right after it
            self._ends_reasoning = False
            self._give(self._cand_at, self._cand_at + len(self._cand_core))
            self._pos = self._cand_at + len(self._cand_core)
            return
        self._marker()  # the next content joins earlier content (DeltaWriter.join)
        self._w.join = True
        self._at_start = False
        self._pos = end
        if status == BROKEN:
            self._w.current = None

    def _event(self, ev: Begin | Args | End | Text) -> None:
        if isinstance(ev, Args):
            self._w.add_arguments(ev.text)
        elif isinstance(ev, End):
            self._end_call(ev)
        elif isinstance(ev, Text):  # no call, inside an emission: content
            if self._w.write_loose_text(ev.text) and not self._w.reasoning:
                self._at_start = False
        else:
            self._w.begin_call(ev)

    def _end_call(self, ev: End) -> None:
        if self._w.end_call(ev) and self._ends_reasoning:
            # a call ends the prompt-opened reasoning block
            self._ends_reasoning = self._prompt_block = self._w.reasoning = False
            self._stray_close = True


def _no_match(text: str) -> None:
    return None


def _without_calls(plan: Plan) -> Plan:
    """``plan`` with no call opener looked for: only reasoning, strip and end markers."""

    def scan(of: Scan) -> Scan:
        return Scan.build({k: v for k, v in of.actions.items() if v[0] != _CALL})

    return replace(
        plan,
        content=scan(plan.content),
        reasoning=scan(plan.reasoning),
        start=(),
        whole=frozenset(),
    )


def _formats_reader(tools: Sequence[ToolLike] | None) -> FormatReader:
    """A message body's read by the spec's own call formats: a whole ``StreamParser`` read."""

    def read(spec: DialectSpec, body: str, truncated: bool) -> ParsedOutput:
        inner = StreamParser(spec, tools=tools)
        inner.feed(body)
        inner.close(truncated=truncated)
        return inner.result

    return read
