"""A call's arguments less the members whose ``null`` means "not given"
(``grammar/optional_null.py``: optional keys whose schema rejects ``null``).

``NullMembers`` reads the arguments' JSON text as it arrives and holds each top-level member back
from its separator until its value's first character is known: a member of such a key whose
value starts with ``n`` (``null``) is dropped with its separator, any other goes out as written.
Its output depends only on the text, never on how the text was cut, so argument deltas still add
up to the batch arguments under any chunking; nothing is dropped where nothing matches (the text
comes out as written, whitespace included). Dropping the first member also drops the separator
after it; dropping every member leaves ``{}``.

Only the top-level object is read; nested values pass through untouched. Text that is no JSON
object (a call cut by the token limit) passes through as far as it goes: ``flush`` gives back
whatever is held, as written.
"""

from __future__ import annotations

import json
import re

__all__ = ["NullMembers", "drop_null_members"]

_START, _LEAD, _KEY, _COLON, _VALUE, _DROP, _REST = range(7)
_WS = " \t\r\n"
_PLAIN = re.compile(r'[^"{}\[\],\\]+')  # a run of a value that changes no state
_STRING = re.compile(r'[^"\\]+')  # a run of string content


class NullMembers:
    """Drops top-level ``"key": null`` members whose key is in ``keys`` from a JSON object's
    text fed in pieces; ``feed`` returns the text decided so far, ``flush`` the rest."""

    def __init__(self, keys: frozenset[str]) -> None:
        self._keys = keys
        self._state = _START
        self._sep = ""
        """What precedes the member being read: ``,`` and whitespace (the first member's:
        the whitespace after ``{``)."""
        self._first_lead = ""
        """The whitespace after ``{``: the lead of whichever member is written first."""
        self._body: list[str] = []
        """The member being read, from its key, while it is held."""
        self._key: list[str] = []
        self._colon = False
        self._first = True
        """No member written yet."""
        self._dropped = False
        self._depth = 0
        """Brackets open inside the current value."""
        self._in_string = False
        self._escape = False

    def feed(self, text: str) -> str:
        """``text`` read; what of it (and of what was held) is decided."""
        if self._state == _REST or (
            self._state == _VALUE
            and self._in_string
            and not self._escape
            and '"' not in text
            and "\\" not in text
        ):
            return text  # past the object, or inside a written string value: as it comes
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            state = self._state
            if state == _REST:
                out.append(text[i:])
                break
            if state in (_VALUE, _DROP):
                i = self._value(text, i, out)
            elif state == _KEY:
                i = self._key_text(text, i)
            else:
                self._step(text[i], out)
                i += 1
        return "".join(out)

    def flush(self) -> str:
        """The end of the text: whatever is held, as written (a cut call's partial text)."""
        held = ""
        if self._state in (_LEAD, _KEY, _COLON, _DROP):
            held = self._lead() + "".join(self._body)
        self._state, self._body = _REST, []
        return held

    def _lead(self) -> str:
        return self._first_lead if self._first else self._sep

    def _step(self, c: str, out: list[str]) -> None:
        """One character outside keys and values: before the object, between members, around
        a colon."""
        state = self._state
        if state == _START:
            out.append(c)
            if c == "{":
                self._state = _LEAD
            elif c not in _WS:
                self._state = _REST  # no object: nothing to drop
        elif state == _LEAD:
            if c in _WS:
                self._sep += c
                if self._first and not self._dropped:
                    self._first_lead += c
            elif c == '"':
                self._state, self._body, self._key = _KEY, [c], []
            elif c == "}":
                self._close(out, trail=self._sep)
            else:
                self._give_up(out, c)
        elif c in _WS or (c == ":" and not self._colon):
            self._colon = self._colon or c == ":"
            self._body.append(c)
        elif not self._colon:
            self._give_up(out, c)
        else:
            self._decide(c, out)

    def _key_text(self, text: str, i: int) -> int:
        """Key characters from ``i``; where the key is read."""
        if self._escape:
            self._escape = False
            self._take_key(text[i])
            return i + 1
        m = _STRING.match(text, i)
        if m is not None:
            self._take_key(m.group())
            return m.end()
        c = text[i]
        self._take_key(c)
        if c == "\\":
            self._escape = True
        else:  # the closing quote
            self._key.pop()
            self._state, self._colon = _COLON, False
        return i + 1

    def _take_key(self, s: str) -> None:
        self._body.append(s)
        self._key.append(s)

    def _decide(self, c: str, out: list[str]) -> None:
        """The value's first character ``c``: drop the member, or write it out."""
        self._depth, self._in_string, self._escape = 0, False, False
        if c == "n" and self._decoded_key() in self._keys:
            self._state = _DROP
            self._body.append(c)
            return
        out.append(self._lead())
        out.extend(self._body)
        self._first, self._body = False, []
        self._state = _VALUE
        self._value(c, 0, out)

    def _decoded_key(self) -> str | None:
        try:
            key = json.loads('"' + "".join(self._key) + '"')
        except ValueError:
            return None
        return key if isinstance(key, str) else None

    def _value(self, text: str, i: int, out: list[str]) -> int:
        """Value characters from ``i`` (written, or held while the member may be dropped);
        where the member ends, the next one or the object's close."""
        sink = out if self._state == _VALUE else self._body
        if self._in_string:
            if self._escape:
                self._escape = False
                sink.append(text[i])
                return i + 1
            m = _STRING.match(text, i)
            if m is not None:
                sink.append(m.group())
                return m.end()
            c = text[i]
            sink.append(c)
            self._escape = c == "\\"
            self._in_string = c != '"'
            return i + 1
        m = _PLAIN.match(text, i)
        if m is not None:
            sink.append(m.group())
            return m.end()
        c = text[i]
        if self._depth == 0 and c in ",}":
            self._end_member(c, out)
        else:
            sink.append(c)
            self._in_string = c == '"'
            self._depth += (c in "{[") - (c in "}]")
        return i + 1

    def _end_member(self, c: str, out: list[str]) -> None:
        """The member ends at ``c``, a ``,`` or the object's ``}``."""
        trail = ""
        if self._state == _DROP:
            held = "".join(self._body)
            trail = held[len(held.rstrip(_WS)) :]  # the layout before ``}`` stays
            self._dropped, self._body = True, []
        if c == ",":
            self._state, self._sep = _LEAD, ","
        else:
            self._close(out, trail=trail)

    def _close(self, out: list[str], *, trail: str) -> None:
        """The object's ``}``; ``trail``: the whitespace before it, kept unless every member
        was dropped (then ``{}``)."""
        if not (self._first and self._dropped):
            out.append(trail)
        out.append("}")
        self._state = _REST

    def _give_up(self, out: list[str], c: str) -> None:
        """Not the JSON expected here: what is held and the rest go out as written."""
        out.append(self._lead() + "".join(self._body) + c)
        self._body = []
        self._state = _REST


def drop_null_members(text: str, keys: frozenset[str]) -> str:
    """``text`` (a JSON object) less its top-level ``null`` members whose key is in ``keys``."""
    if not keys:
        return text
    f = NullMembers(keys)
    return f.feed(text) + f.flush()
