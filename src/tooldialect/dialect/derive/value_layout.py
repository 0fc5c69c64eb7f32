"""How an element body writes values, read off renders of probe calls: objects and arrays as
child elements (``ElementBody.child``/``item``), arrays as one parameter per element
(``repeat_arrays``), ``None`` arguments left out (``omit_none``), strings escaped or wrapped by a
markup codec (``text_codec``). Each finding is kept only if ``render_call`` then writes
the probe call exactly as the template does."""

from __future__ import annotations

import re
from typing import Any

from ...errors import DialectError
from ..bodies import render_body
from ..spec import ElementBody, format_template
from ..value_codecs import TOKEN_QUOTE, MarkupCodec, registered_codecs, registered_markup_codecs
from .body_shapes import escape
from .probes import (
    PROBE_NAME,
    PROBE_RICH_ARGS,
    Probe,
    assistant_turn,
    probe_call,
    render_probe,
)

__all__ = ["learn_values"]

_OBJECT_KEY = "zzk_g"
_LIST_KEY = "zzk_fs"
_NONE_KEY = "zzk_e"
_ESCAPED = 'zz<&">word'
"""A string value with the characters markup escapes."""
_LINES = "zz\nword"
"""A string value of two lines (that some templates wrap in CDATA, as ``<`` and ``&``)."""
_FIELD = re.compile(r"\{(\w+)\}")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _value_pattern(body: ElementBody, key: str) -> re.Pattern[str]:
    """The param template for ``key`` as a regex capturing its value (other fields loose)."""
    template = format_template(body.param, key=key)
    out, at = "", 0
    for m in _FIELD.finditer(template):
        out += re.escape(template[at : m.start()].replace("{{", "{").replace("}}", "}"))
        out += "(?P<value>.*?)" if m.group(1) == "value" else r"[^<>\n]*?"
        at = m.end()
    out += re.escape(template[at:].strip().replace("{{", "{").replace("}}", "}"))
    return re.compile(out.strip(), re.DOTALL)


def _value_text(text: str, body: ElementBody, key: str) -> str | None:
    m = _value_pattern(body, key).search(text)
    return m.group("value") if m else None


def _child(text: str | None) -> str:
    """The member template read off the object probe's value, or ``""``."""
    if not text or text.lstrip().startswith("{") or "zzk_h" not in text or "zzval" not in text:
        return ""
    template = escape(text).replace("zzk_h", "{key}").replace("zzval", "{value}")
    fields = _FIELD.findall(template)
    return template if fields[:2] == ["key", "value"] and fields.count("value") == 1 else ""


def _item(text: str | None) -> str:
    """The array-element template read off the list probe's value (``[1, "zzitem"]``)."""
    if not text or text.lstrip().startswith("[") or "zzitem" not in text:
        return ""
    second = text.index("zzitem")
    post = text[second + len("zzitem") :]
    first = text.find("1")
    pre = text[:first]
    if first < 0 or not pre.strip() or text != pre + "1" + post + pre + "zzitem" + post:
        return ""
    named = escape(pre + "\x00" + post).replace(_LIST_KEY, "{key}")
    named = named.replace(_LIST_KEY[:-1], "{singular}")
    return named.replace("\x00", "{value}")


def _call_text(probe: Probe, args: dict[str, Any]) -> str | None:
    text = render_probe(
        probe.renderer, probe.shape, assistant_turn(calls=[probe_call(0, args=args)]), rich=True
    )
    if text is None:
        return None
    start = text.rfind(PROBE_NAME)  # the call, not the tool list
    return text[start:] if start >= 0 else None


def _writes(body: ElementBody, args: dict[str, Any], theirs: str, *, exact: bool = False) -> bool:
    try:
        mine = render_body(body, PROBE_NAME, args, "", 0)
    except (DialectError, ValueError, TypeError, KeyError):
        return False
    head = format_template(body.head, name=PROBE_NAME, id="", index=0)
    mine = mine[len(head) :]
    return mine in theirs if exact else _squash(mine) in _squash(theirs)


def _text_codec(probe: Probe, body: ElementBody) -> str:
    """The markup codec whose writing of string values the template's renders hold: of those
    that write the escaped probe as it does, the first that writes the multi-line one as it
    does too (``""``: none, the values are raw)."""
    written = []
    for probe_text in (_ESCAPED, _LINES):
        text = _call_text(probe, {"zzk_a": probe_text, "zzk_b": 42})
        value = _value_text(text, body, "zzk_a") if text is not None else None
        written.append(value if value is not None else text)

    def writes(codec: MarkupCodec, i: int, probe_text: str) -> bool:
        theirs, mine = written[i], codec.escape(probe_text)
        return theirs is not None and (mine == theirs if i else mine in theirs)

    found = [c for c in registered_markup_codecs() if writes(c, 0, _ESCAPED)]
    best = next((c for c in found if writes(c, 1, _LINES)), found[0] if found else None)
    return best.name if best is not None else ""


def _literal_codec(probe: Probe, body: ElementBody) -> ElementBody:
    """``body`` (values written as literals) with the value codec and quote whose writing of
    the rich probe call the template's render holds exactly (else modulo whitespace, else as
    found: JSON)."""
    text = _call_text(probe, dict(PROBE_RICH_ARGS))
    if text is None:
        return body
    # a syntax without null (TOML) leaves ``None`` arguments out
    body = body.model_copy(update={"omit_none": _NONE_KEY not in text})
    bodies = [body] + [
        body.model_copy(update={"value_codec": codec.name, "value_quote": quote})
        for codec in registered_codecs()
        if not codec.token_quoted
        for quote in codec.quotes or (TOKEN_QUOTE,)
    ]
    rich = dict(PROBE_RICH_ARGS)
    exact = next((b for b in bodies if _writes(b, rich, text, exact=True)), None)
    return exact or next((b for b in bodies if _writes(b, rich, text)), body)


def learn_values(probe: Probe, body: ElementBody) -> ElementBody:
    """``body`` with what the template's renders show of nested values, ``None`` and escaping
    (or, where its values are literals, of which syntax)."""
    if body.json_values:
        return _literal_codec(probe, body)
    codec = _text_codec(probe, body)
    if codec:
        body = body.model_copy(update={"text_codec": codec})
    text = _call_text(probe, dict(PROBE_RICH_ARGS))
    if text is None:
        return body
    values = [m.group("value") for m in _value_pattern(body, _LIST_KEY).finditer(text)]
    found = {
        "omit_none": _NONE_KEY not in text,
        "child": _child(_value_text(text, body, _OBJECT_KEY)),
        "item": _item(values[0] if values else None),
        # the key repeated per element (``<zzk_fs>1</zzk_fs><zzk_fs>zzitem</zzk_fs>``)
        "repeat_arrays": values == ["1", "zzitem"],
    }
    rich = dict(PROBE_RICH_ARGS)
    candidate = body.model_copy(update=found)
    if candidate != body and _writes(candidate, rich, text):
        body = candidate
    # the JSON of non-string values escaped too (``{{ v | tojson | e }}``)
    escaping = body.model_copy(update={"escape_json": True})
    if body.xml_escape and not _writes(body, rich, text) and _writes(escaping, rich, text):
        return escaping
    return body
