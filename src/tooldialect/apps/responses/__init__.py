"""OpenAI's Responses API (``/v1/responses``) for ``tooldialect serve``, on top of the handler.

``convert`` turns a Responses request into a chat completion request for the handler,
``events`` turns the handler's chunks into Responses events and the Response object,
``store`` keeps responses for ``previous_response_id``, ``route`` is the endpoint mounted on
llama-cpp-python's server app. See docs/serve.md for what is served and what is refused.
"""

from __future__ import annotations

from .convert import SUPPORTED_TOOL_TYPES, ChatRequest, ResponsesError, chat_request
from .events import ResponseStream, reassemble
from .route import RESPONSES_PATH, ResponsesEndpoint, mount_responses
from .store import ResponseStore

__all__ = [
    "RESPONSES_PATH",
    "SUPPORTED_TOOL_TYPES",
    "ChatRequest",
    "ResponseStore",
    "ResponseStream",
    "ResponsesEndpoint",
    "ResponsesError",
    "chat_request",
    "mount_responses",
    "reassemble",
]
