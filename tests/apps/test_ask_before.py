"""``ask_before``: the library's approval helper denies a side-effecting call when nobody can
answer (issue 29 s3: an example approved a booking by itself because stdin was piped)."""

from __future__ import annotations

import io

from tooldialect import Deny, PendingCall, ask_before


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def booking(name: str = "weather_book_table") -> PendingCall:
    return PendingCall(step=1, id="c1", name=name, arguments='{"people": 2}')


def test_a_side_effect_is_denied_when_stdin_is_not_a_terminal() -> None:
    out = io.StringIO()
    hook = ask_before(lambda call: "book" in call.name, stdin=io.StringIO("y\n"), out=out)
    verdict = hook(booking())
    assert isinstance(verdict, Deny) and "not a terminal" in verdict.reason
    assert "no (stdin is not a terminal" in out.getvalue()
    assert hook(booking("weather_current_weather")) is True  # not selected: runs


def test_a_terminal_answers() -> None:
    out = io.StringIO()
    assert ask_before(stdin=Terminal("y\n"), out=out)(booking()) is True
    assert isinstance(ask_before(stdin=Terminal("\n"), out=out)(booking()), Deny)  # N default
