"""The OpenAI shapes at the library's boundary, typed: what a chat completion returns and streams,
and what a request's messages and tools look like.

Requests are read leniently (clients send more and less than OpenAI documents), so a request
``Message`` stays an open mapping and tools are ``tools.ToolLike``; what the library writes back
is exact, so responses are ``TypedDict`` s. They describe OpenAI's wire format plus the fields
llama-cpp-python and OpenAI-compatible servers add (``reasoning_content``,
``usage.prompt_tokens_details``). Python 3.10 has no ``NotRequired``: optional keys live in a
``total=False`` subclass.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypedDict

__all__ = [
    "AssistantMessage",
    "ChatCompletion",
    "ChatCompletionChunk",
    "Choice",
    "ChunkChoice",
    "CompletionTokensDetails",
    "Delta",
    "FinishReason",
    "FunctionCall",
    "InvalidToolCall",
    "Logprobs",
    "Message",
    "SchemaProblem",
    "ToolCallDelta",
    "ToolCallShape",
    "Usage",
]

Message: TypeAlias = dict[str, Any]
"""One chat message of a request (``role``, ``content``, ``tool_calls``, ``tool_call_id``...),
as the library copies and rewrites it. Open: templates read fields OpenAI never defined."""

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls"]


class FunctionCall(TypedDict):
    name: str
    arguments: str
    """The arguments as a JSON object text."""


class ToolCallShape(TypedDict):
    """One call in ``message.tool_calls``."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class SchemaProblem(TypedDict):
    """One way a call's arguments fail its tool's schema."""

    path: str
    """JSON pointer into the arguments (``""``: the arguments object itself)."""
    keyword: str
    """The schema keyword that failed (``type``, ``minimum``...; ``name``: no such tool)."""
    message: str


class InvalidToolCall(TypedDict):
    """A call in ``tool_calls`` whose arguments fail its tool's full JSON Schema (non-standard,
    after LangChain's ``invalid_tool_calls``; docs/parsing.md)."""

    id: str
    """The id of the call in ``tool_calls`` it describes."""
    name: str
    args: str
    """The arguments text, as in the call's ``function.arguments``."""
    error: str
    """The problems in words: ``path: message (keyword)``, joined with ``; ``."""
    problems: list[SchemaProblem]


class _AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None


class AssistantMessage(_AssistantMessage, total=False):
    """``choices[0].message`` of a completion."""

    tool_calls: list[ToolCallShape]
    reasoning_content: str
    invalid_tool_calls: list[InvalidToolCall]
    """Calls of ``tool_calls`` that fail their schema (only when some do)."""


class Logprobs(TypedDict):
    """``choices[i].logprobs``: one entry per sampled token (OpenAI's ``token``, ``logprob``,
    ``bytes``, ``top_logprobs``)."""

    content: list[dict[str, Any]]
    refusal: None


class PromptTokensDetails(TypedDict):
    cached_tokens: int
    """Prompt tokens the KV cache already held."""


class CompletionTokensDetails(TypedDict):
    rejected_prediction_tokens: int
    """Tokens decoded and then taken back (steering rewound the reply there): counted in
    ``completion_tokens``, as OpenAI counts rejected predictions, but not in the reply."""


class _Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails


class Usage(_Usage, total=False):
    completion_tokens_details: CompletionTokensDetails
    """Only when a steered reply took tokens back."""


class Choice(TypedDict):
    index: int
    message: AssistantMessage
    logprobs: Logprobs | None
    finish_reason: FinishReason


class ChatCompletion(TypedDict):
    """A ``chat.completion`` response."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class FunctionDelta(TypedDict, total=False):
    name: str
    """The whole name, in the call's first delta."""
    arguments: str
    """A fragment of the arguments text."""


class _ToolCallDelta(TypedDict):
    index: int


class ToolCallDelta(_ToolCallDelta, total=False):
    """A call's part in a chunk: the first carries ``id``, ``type`` and the name."""

    id: str
    type: Literal["function"]
    function: FunctionDelta


class Delta(TypedDict, total=False):
    """``choices[0].delta`` of a chunk."""

    role: Literal["assistant"]
    content: str
    reasoning_content: str
    tool_calls: list[ToolCallDelta]
    invalid_tool_calls: list[InvalidToolCall]
    """On the last chunk: the streamed calls that fail their schema (only when some do)."""


class ChunkChoice(TypedDict):
    index: int
    delta: Delta
    logprobs: Logprobs | None
    finish_reason: FinishReason | None


class _ChatCompletionChunk(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]


class ChatCompletionChunk(_ChatCompletionChunk, total=False):
    """A ``chat.completion.chunk``; the last one carries ``usage``."""

    usage: Usage
