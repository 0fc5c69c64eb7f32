"""Chat completion chunks as an Anthropic Messages event stream, and the Message they make.

``MessageStream`` reads the handler's ``chat.completion.chunk`` dicts (reasoning, content and
tool-call deltas) and emits ``message_start``, per content block ``content_block_start``,
``content_block_delta`` (``thinking_delta``, ``text_delta``, ``input_json_delta``) and
``content_block_stop``, then ``message_delta`` (stop reason, usage) and ``message_stop``. A
non-streamed request is the same stream drained: its Message is the one the stream folds into,
so a stream reassembles into exactly the batch response. ``reassemble`` folds events back as
Anthropic's SDK does.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .convert import MessagesError

__all__ = ["MessageStream", "message_usage", "reassemble", "stop_reason"]

ChatUsage = Mapping[str, Any]


def message_usage(usage: ChatUsage | None, *, output: bool = True) -> dict[str, Any]:
    """Chat ``usage`` in Anthropic's shape: prompt tokens the KV cache already held are
    ``cache_read_input_tokens`` and ``input_tokens`` is the rest, as Anthropic counts (their
    sum is the prompt). ``output=False``: ``output_tokens`` 0 (``message_start``'s)."""
    usage = usage or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return {
        "input_tokens": prompt - cached,
        "output_tokens": int(usage.get("completion_tokens") or 0) if output else 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def stop_reason(
    finish: str | None, *, stopped_by: str | None, stop_sequences: Sequence[str]
) -> tuple[str, str | None]:
    """``(stop_reason, stop_sequence)`` for a chat ``finish_reason``: a cut reply is
    ``max_tokens`` whatever it holds, a reply with calls ``tool_use``, one ended by a caller's
    stop string ``stop_sequence`` (naming it), anything else ``end_turn``."""
    if finish == "length":
        return "max_tokens", None
    if finish == "tool_calls":
        return "tool_use", None
    if stopped_by is not None and stopped_by in stop_sequences:
        return "stop_sequence", stopped_by
    return "end_turn", None


class MessageStream:
    """Builds one Message from chat chunks, emitting its events on the way.

    ``live_usage``: the running generation's chat usage, read when ``message_start`` goes out
    (lazily, with the first block, once the prompt is decoded) so its input counts are final.
    """

    def __init__(
        self,
        *,
        model: str,
        stop_sequences: Sequence[str] = (),
        live_usage: Callable[[], ChatUsage | None] | None = None,
        message_id: str | None = None,
    ) -> None:
        self.message: dict[str, Any] = {
            "id": message_id or f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": message_usage(None),
        }
        self._stops = tuple(stop_sequences)
        self._live_usage = live_usage
        self._started = False
        self._open: str | None = None  # "thinking" / "text" / "tool_use"
        self._calls: dict[int, int] = {}  # chat tool_calls index -> content index
        self._arguments: dict[int, str] = {}  # content index -> arguments text
        self._finish: str | None = None
        self._usage: ChatUsage | None = None

    def start(self) -> list[dict[str, Any]]:
        """``message_start`` (once; ``feed`` and ``finish`` send it when it has not gone)."""
        if self._started:
            return []
        self._started = True
        usage = self._live_usage() if self._live_usage is not None else None
        self.message["usage"] = message_usage(usage, output=False)
        return [{"type": "message_start", "message": copy.deepcopy(self.message)}]

    def feed(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The events for one ``chat.completion.chunk``."""
        events: list[dict[str, Any]] = []
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            self._finish = choice.get("finish_reason") or self._finish
            delta = choice.get("delta") or {}
            if any(delta.get(key) for key in ("reasoning_content", "content", "tool_calls")):
                events += self.start()  # the first block: the prompt is decoded by now
            if delta.get("reasoning_content"):
                events += self._text("thinking", delta["reasoning_content"])
            if delta.get("content"):
                events += self._text("text", delta["content"])
            for call in delta.get("tool_calls") or []:
                events += self._call(call)
        return events

    def finish(self, *, stopped_by: str | None = None) -> list[dict[str, Any]]:
        """The open block closed, ``message_delta`` and ``message_stop``. ``stopped_by``: the
        stop string that ended generation (``GenerationResult.stopped_by``)."""
        events = self.start() + self._close()
        reason, sequence = stop_reason(
            self._finish, stopped_by=stopped_by, stop_sequences=self._stops
        )
        usage = message_usage(self._usage)
        self.message.update(stop_reason=reason, stop_sequence=sequence, usage=usage)
        delta = {"stop_reason": reason, "stop_sequence": sequence}
        events.append({"type": "message_delta", "delta": delta, "usage": dict(usage)})
        events.append({"type": "message_stop"})
        return events

    def run(
        self, chunks: Iterable[Mapping[str, Any]], *, stopped_by: Callable[[], str | None]
    ) -> list[dict[str, Any]]:
        """The whole event sequence for a chunk sequence; ``stopped_by`` is read at its end."""
        events: list[dict[str, Any]] = []
        for chunk in chunks:
            events += self.feed(chunk)
        return events + self.finish(stopped_by=stopped_by())

    # ---- blocks ------------------------------------------------------------------------------

    def _begin(self, kind: str, block: dict[str, Any]) -> list[dict[str, Any]]:
        events = self._close()
        self.message["content"].append(block)
        self._open = kind
        index = len(self.message["content"]) - 1
        start = {
            "type": "content_block_start",
            "index": index,
            "content_block": copy.deepcopy(block),
        }
        return [*events, start]

    def _close(self) -> list[dict[str, Any]]:
        if self._open is None:
            return []
        self._open = None
        return [{"type": "content_block_stop", "index": len(self.message["content"]) - 1}]

    def _text(self, kind: str, text: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self._open != kind:
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            events += self._begin(kind, empty if kind == "thinking" else {"type": kind, "text": ""})
        index = len(self.message["content"]) - 1
        self.message["content"][index][kind] += text
        delta = {"type": f"{kind}_delta", kind: text}
        return [*events, {"type": "content_block_delta", "index": index, "delta": delta}]

    def _call(self, call: Mapping[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        fn = call.get("function") or {}
        position = int(call.get("index", 0))
        if position not in self._calls:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex}",
                "name": fn.get("name") or "",
                "input": {},
            }
            events += self._begin("tool_use", block)
            self._calls[position] = len(self.message["content"]) - 1
            self._arguments[self._calls[position]] = ""
        index = self._calls[position]
        piece = fn.get("arguments") or ""
        if piece:
            self._arguments[index] += piece
            self.message["content"][index]["input"] = _arguments(self._arguments[index])
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        return events


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments as its ``input`` (``{}`` while they are not yet a whole object)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def reassemble(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Message a client rebuilds from the events, as Anthropic's SDK folds them: the
    message from ``message_start``, blocks from ``content_block_start``, text, thinking and
    tool input from the deltas, stop reason and usage from ``message_delta``. Raises
    ``MessagesError`` when the sequence is out of order."""
    message: dict[str, Any] | None = None
    buffers: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = copy.deepcopy(dict(event["message"]))
            continue
        if message is None:
            raise MessagesError(f"{kind} came before message_start")
        if kind == "content_block_start":
            if event["index"] != len(message["content"]):
                raise MessagesError(f"content_block_start index {event['index']} out of order")
            message["content"].append(copy.deepcopy(dict(event["content_block"])))
        elif kind == "content_block_delta":
            _apply_delta(message["content"][event["index"]], event["delta"], buffers, event)
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"].update(event["usage"])
    if message is None:
        raise MessagesError("no message_start in the stream")
    for index, text in buffers.items():
        message["content"][index]["input"] = _arguments(text)
    return message


def _apply_delta(
    block: dict[str, Any],
    delta: Mapping[str, Any],
    buffers: dict[int, str],
    event: Mapping[str, Any],
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] += delta["text"]
    elif kind == "thinking_delta":
        block["thinking"] += delta["thinking"]
    elif kind == "signature_delta":
        block["signature"] = delta["signature"]
    elif kind == "input_json_delta":
        buffers[event["index"]] = buffers.get(event["index"], "") + delta["partial_json"]
    else:
        raise MessagesError(f"unknown delta type {kind!r}")
