"""Chat completion chunks as a Responses API event stream, and the Response object they make.

``ResponseStream`` reads the handler's ``chat.completion.chunk`` dicts (reasoning, content and
tool-call deltas) and emits the Responses events with sequence numbers: ``response.created``,
``response.in_progress``, per output item ``response.output_item.added``, its content part,
``response.reasoning_text`` / ``response.output_text`` / ``response.function_call_arguments``
deltas and ``.done`` events, ``response.output_item.done``, then ``response.completed`` (or
``response.incomplete`` when ``max_output_tokens`` cut the reply). A non-streamed request is the
same stream drained: its Response is the one ``response.completed`` carries, so a stream
reassembles into exactly the batch response. ``reassemble`` folds events back, as a client does.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from .convert import ResponsesError

__all__ = ["ResponseStream", "reassemble", "response_usage"]


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def response_usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Chat ``usage`` in the Responses shape."""
    if not usage:
        return None
    details = usage.get("prompt_tokens_details") or {}
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "input_tokens_details": {"cached_tokens": details.get("cached_tokens", 0)},
        "output_tokens": usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.get("total_tokens", 0),
    }


class ResponseStream:
    """Builds one Response from chat chunks, emitting its events on the way.

    ``echo``: the request fields the Response repeats (``convert.ChatRequest.echo``).
    """

    def __init__(self, *, model: str, echo: Mapping[str, Any], response_id: str | None = None):
        self.id = response_id or _new_id("resp")
        self._seq = 0
        self._output: list[dict[str, Any]] = []
        self._open: dict[str, int] = {}  # "reasoning" / "message" -> output index
        self._calls: dict[int, int] = {}  # chat tool_calls index -> output index
        self._open_call: int | None = None
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self.response: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "in_progress",
            "output": [],
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **copy.deepcopy(dict(echo)),
        }

    # ---- events ------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def _snapshot(self) -> dict[str, Any]:
        return copy.deepcopy({**self.response, "output": self._output})

    def start(self) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress``."""
        return [
            self._event("response.created", response=self._snapshot()),
            self._event("response.in_progress", response=self._snapshot()),
        ]

    def feed(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The events for one ``chat.completion.chunk``."""
        events: list[dict[str, Any]] = []
        if chunk.get("usage"):
            self._usage = dict(chunk["usage"])
        for choice in chunk.get("choices") or []:
            self._finish = choice.get("finish_reason") or self._finish
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                events += self._text("reasoning", delta["reasoning_content"])
            if delta.get("content"):
                events += self._close("reasoning")
                events += self._text("message", delta["content"])
            for call in delta.get("tool_calls") or []:
                events += self._close("reasoning") + self._close("message")
                events += self._call(call)
        return events

    def finish(self) -> list[dict[str, Any]]:
        """Every open item closed, then ``response.completed`` (or ``response.incomplete``)."""
        cut = self._finish == "length"
        events = self._close("reasoning", cut=cut) + self._close("message", cut=cut)
        events += self._close_call()
        self.response["output"] = self._output
        self.response["usage"] = response_usage(self._usage)
        self.response["status"] = "incomplete" if cut else "completed"
        if cut:
            self.response["incomplete_details"] = {"reason": "max_output_tokens"}
        kind = "response.incomplete" if cut else "response.completed"
        events.append(self._event(kind, response=copy.deepcopy(self.response)))
        return events

    def run(self, chunks: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The whole event sequence for a finished chunk sequence."""
        events = self.start()
        for chunk in chunks:
            events += self.feed(chunk)
        return events + self.finish()

    # ---- items -------------------------------------------------------------------------------

    def _add(self, item: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self._output.append(item)
        index = len(self._output) - 1
        return index, self._event(
            "response.output_item.added", output_index=index, item=copy.deepcopy(item)
        )

    def _text(self, which: str, text: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if which not in self._open:
            events += self._close_call()
            if which == "reasoning":
                item: dict[str, Any] = {"id": _new_id("rs"), "type": "reasoning", "summary": []}
                part: dict[str, Any] = {"type": "reasoning_text", "text": ""}
            else:
                item = {"id": _new_id("msg"), "type": "message", "role": "assistant"}
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            item.update(status="in_progress", content=[])
            index, added = self._add(item)
            self._open[which] = index
            item["content"].append(dict(part))
            events += [
                added,
                self._event(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=part,
                ),
            ]
        index = self._open[which]
        item = self._output[index]
        item["content"][0]["text"] += text
        kind = (
            "response.reasoning_text.delta"
            if which == "reasoning"
            else "response.output_text.delta"
        )
        extra: dict[str, Any] = {} if which == "reasoning" else {"logprobs": []}
        events.append(
            self._event(
                kind, item_id=item["id"], output_index=index, content_index=0, delta=text, **extra
            )
        )
        return events

    def _close(self, which: str, *, cut: bool = False) -> list[dict[str, Any]]:
        index = self._open.pop(which, None)
        if index is None:
            return []
        item = self._output[index]
        part = item["content"][0]
        item["status"] = "incomplete" if cut else "completed"
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        if which == "reasoning":
            done = self._event("response.reasoning_text.done", **where, text=part["text"])
        else:
            done = self._event("response.output_text.done", **where, text=part["text"], logprobs=[])
        return [
            done,
            self._event("response.content_part.done", **where, part=copy.deepcopy(part)),
            self._event("response.output_item.done", output_index=index, item=copy.deepcopy(item)),
        ]

    def _call(self, call: Mapping[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        fn = call.get("function") or {}
        position = int(call.get("index", 0))
        if position not in self._calls:
            events += self._close_call()
            item = {
                "id": _new_id("fc"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": call.get("id") or _new_id("call"),
                "name": fn.get("name") or "",
                "arguments": "",
            }
            index, added = self._add(item)
            self._calls[position] = self._open_call = index
            events.append(added)
        index = self._calls[position]
        item = self._output[index]
        if fn.get("name") and not item["name"]:
            item["name"] = fn["name"]
        if fn.get("arguments"):
            item["arguments"] += fn["arguments"]
            events.append(
                self._event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=fn["arguments"],
                )
            )
        return events

    def _close_call(self) -> list[dict[str, Any]]:
        index, self._open_call = self._open_call, None
        if index is None:
            return []
        item = self._output[index]
        item["status"] = "completed"
        return [
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            ),
            self._event("response.output_item.done", output_index=index, item=copy.deepcopy(item)),
        ]

    # ---- the conversation --------------------------------------------------------------------

    def chat_message(self) -> dict[str, Any]:
        """The reply as one assistant chat message (what a follow-up's history holds)."""
        text = "".join(i["content"][0]["text"] for i in self._output if i["type"] == "message")
        reasoning = "".join(
            i["content"][0]["text"] for i in self._output if i["type"] == "reasoning"
        )
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = [
            {
                "id": i["call_id"],
                "type": "function",
                "function": {"name": i["name"], "arguments": i["arguments"]},
            }
            for i in self._output
            if i["type"] == "function_call"
        ]
        if calls:
            message["tool_calls"] = calls
        elif message["content"] is None:
            message["content"] = ""
        if reasoning:
            message["reasoning_content"] = reasoning
        return message


def reassemble(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Response a client rebuilds from the events: items from ``output_item.added``, text
    and arguments from the deltas, item status from ``output_item.done``, the rest (status,
    usage, incomplete_details) from the last ``response.*`` event. Raises ``ValueError`` when
    sequence numbers skip or a ``.done`` disagrees with its deltas."""
    response: dict[str, Any] = {}
    output: list[dict[str, Any]] = []
    for n, event in enumerate(events):
        if event.get("sequence_number") != n:
            raise ResponsesError(f"event {n} has sequence_number {event.get('sequence_number')}")
        kind = str(event["type"])
        if kind.startswith("response.") and "response" in event:
            response = copy.deepcopy(dict(event["response"]))
            continue
        index = event.get("output_index")
        item = output[index] if isinstance(index, int) and index < len(output) else None
        _apply(kind, event, item, output)
    response["output"] = output
    return response


def _apply(
    kind: str, event: Mapping[str, Any], item: dict[str, Any] | None, output: list[dict[str, Any]]
) -> None:
    if kind == "response.output_item.added":
        added = copy.deepcopy(dict(event["item"]))
        if "content" in added:
            added["content"] = []
        output.append(added)
        return
    if item is None:
        raise ResponsesError(f"{kind} refers to output {event.get('output_index')}, not added yet")
    if kind == "response.content_part.added":
        item["content"].append(copy.deepcopy(dict(event["part"])))
    elif kind in ("response.output_text.delta", "response.reasoning_text.delta"):
        item["content"][event["content_index"]]["text"] += event["delta"]
    elif kind == "response.function_call_arguments.delta":
        item["arguments"] += event["delta"]
    elif kind in ("response.output_text.done", "response.reasoning_text.done"):
        if item["content"][event["content_index"]]["text"] != event["text"]:
            raise ResponsesError(f"{kind} text differs from its deltas")
    elif kind == "response.function_call_arguments.done":
        if item["arguments"] != event["arguments"]:
            raise ResponsesError(f"{kind} arguments differ from its deltas")
    elif kind == "response.output_item.done":
        item["status"] = event["item"].get("status")
