"""OpenAI response shaping: a finished generation becomes a ``chat.completion`` dict, a running
one a stream of ``chat.completion.chunk`` dicts, both parsed with the request's dialect spec.

Engine-neutral: it reads a ``Request`` (see ``request``), the generated text or pieces, and the
engine's ``GenerationResult``. Every parsed call is checked against its tool's full schema
(``validation``): reported in ``invalid_tool_calls``, or raised, as ``invalid_arguments`` asks.
What to do with a finished reply (the reply memory) is the caller's: ``pipeline.FrontEnd.reply``
does it for batch and stream alike.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..shapes import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    Delta,
    FinishReason,
    Logprobs,
    ToolCallShape,
    Usage,
)
from .validation import InvalidArguments, invalid_calls, surface_invalid

if TYPE_CHECKING:
    from ..engine.base import Generation, GenerationResult
    from ..parse import ParsedOutput, StreamParser
    from .request import Request

__all__ = [
    "build_response",
    "client_ids",
    "logprobs_of",
    "message_for",
    "reply_parser",
    "stream_chunks",
]


def parse_reply(request: Request, text: str, *, truncated: bool = False) -> ParsedOutput:
    """The reply parsed as the request allows (under ``tool_choice="none"`` a call stays text).
    ``truncated``: the token limit cut it, so a cut-off call is never completed
    (docs/parsing.md)."""
    from ..parse import parse_output

    return parse_output(
        text,
        request.setup.spec,
        tools=request.tools,
        reasoning_open=request.reasoning_open,
        prefill=request.prefill,
        truncated=truncated,
        end_of_turn=request.stop,
        stream_arguments=streams_arguments(request),
        read_calls=request.choice.reads_calls,
    )


def streams_arguments(request: Request) -> bool:
    """Whether call arguments stream as they are written: when a grammar constrains the calls,
    their JSON cannot break before the end (only a token limit cuts it), so fragments go out at
    once; unconstrained, a call is held until it ends, so broken JSON stays content (batch and
    stream read alike either way)."""
    return request.grammar is not None


def reply_parser(request: Request, *, stream_arguments: bool) -> StreamParser:
    """A ``StreamParser`` of the reply to ``request``, reading it as ``parse_reply`` does."""
    from ..parse import StreamParser

    return StreamParser(
        request.setup.spec,
        tools=request.tools,
        reasoning_open=request.reasoning_open,
        prefill=request.prefill,
        end_of_turn=request.stop,
        stream_arguments=stream_arguments,
        read_calls=request.choice.reads_calls,
    )


def finish_reason(calls: bool, result: GenerationResult) -> FinishReason:
    """OpenAI's ``finish_reason``: ``tool_calls``, ``length`` or ``stop``. ``length`` wins, as in
    OpenAI's API: the reply was cut, whatever calls it holds (a cut call is never completed)."""
    if result.finish_reason == "length":
        return "length"
    return "tool_calls" if calls else "stop"


def usage(result: GenerationResult) -> Usage:
    """OpenAI's ``usage`` object."""
    shape: Usage = {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
        # OpenAI's field for prompt tokens served from cache: here, from the KV cache
        "prompt_tokens_details": {
            "cached_tokens": result.prompt_tokens - result.last_prompt_eval_tokens
        },
    }
    if result.discarded_tokens:
        shape["completion_tokens_details"] = {"rejected_prediction_tokens": result.discarded_tokens}
    return shape


def message_for(parsed: ParsedOutput) -> AssistantMessage:
    """The OpenAI assistant message for a parsed reply."""
    message: AssistantMessage = {"role": "assistant", "content": parsed.content or None}
    calls: list[ToolCallShape] = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json},
        }
        for c in parsed.tool_calls
    ]
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    if parsed.reasoning_content:
        message["reasoning_content"] = parsed.reasoning_content
    return message


def logprobs_of(entries: list[dict[str, Any]] | None) -> Logprobs | None:
    """OpenAI's ``choices[i].logprobs`` for token entries (``None`` when not requested)."""
    if entries is None:
        return None
    return {"content": list(entries), "refusal": None}


_Shape = TypeVar("_Shape", AssistantMessage, Delta)


def client_ids(message: _Shape, ids: Mapping[str, str]) -> _Shape:
    """``message`` (or a delta) with call ids the prompt mapped given back as the client sent
    them (``Request.call_ids``)."""
    for call in message.get("tool_calls") or [] if ids else []:
        if call.get("id") in ids:
            call["id"] = ids[call["id"]]
    return message


def build_response(
    request: Request,
    text: str,
    result: GenerationResult,
    model: str,
    *,
    invalid_arguments: InvalidArguments = "report",
) -> ChatCompletion:
    """The ``chat.completion`` dict for a finished generation (``invalid_arguments``: what a
    call whose arguments fail its schema does, see ``validation``)."""
    parsed = parse_reply(request, text, truncated=result.finish_reason == "length")
    message = client_ids(message_for(parsed), request.call_ids)
    invalid = invalid_calls(request, parsed.tool_calls, request.call_ids)
    surface_invalid(invalid, invalid_arguments)
    if invalid:
        message["invalid_tool_calls"] = invalid
    calls = message.get("tool_calls")
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": logprobs_of(result.logprobs),
                "finish_reason": finish_reason(bool(calls), result),
            }
        ],
        "usage": usage(result),
    }


def stream_chunks(
    request: Request,
    gen: Generation,
    model: str,
    *,
    on_reply: Callable[[AssistantMessage, str], None] | None = None,
    invalid_arguments: InvalidArguments = "report",
) -> Iterator[ChatCompletionChunk]:
    """``chat.completion.chunk`` dicts for a running generation, calls streamed as deltas.
    ``on_reply(message, raw_text)`` gets the whole parsed message once the reply ended (before
    the last chunk goes out). Calls whose arguments fail their schema are listed in the last
    chunk's ``delta.invalid_tool_calls``, or raised (``invalid_arguments``, see ``validation``)
    once the parser closed: a call's arguments are complete only then."""
    result = gen.result
    parser = reply_parser(request, stream_arguments=streams_arguments(request))
    cid = "chatcmpl-" + uuid.uuid4().hex
    created = int(time.time())

    entries: list[dict[str, Any]] | None = result.logprobs
    sent = 0

    def chunk(delta: Delta, finish: FinishReason | None = None) -> ChatCompletionChunk:
        nonlocal sent
        logprobs = None
        if entries is not None and len(entries) > sent:
            # each chunk carries the tokens sampled since the previous one (the last chunk those
            # the parser held back), so the chunks' entries add up to the batch response's
            logprobs, sent = logprobs_of(entries[sent:]), len(entries)
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
            ],
        }

    yield chunk({"role": "assistant"})
    saw_call = False
    for piece in gen:
        # the parser's deltas are OpenAI's delta shape (parse/deltas.py writes them)
        for delta in cast("list[Delta]", parser.feed(piece)):
            saw_call = saw_call or "tool_calls" in delta
            yield chunk(client_ids(delta, request.call_ids))
    for delta in cast("list[Delta]", parser.close(truncated=result.finish_reason == "length")):
        saw_call = saw_call or "tool_calls" in delta
        yield chunk(client_ids(delta, request.call_ids))
    invalid = invalid_calls(request, parser.result.tool_calls, request.call_ids)
    surface_invalid(invalid, invalid_arguments)
    if on_reply is not None:
        on_reply(message_for(parser.result), result.text)
    last = chunk(
        {"invalid_tool_calls": invalid} if invalid else {}, finish_reason(saw_call, result)
    )
    last["usage"] = usage(result)
    yield last
