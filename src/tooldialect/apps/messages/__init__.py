"""Anthropic's Messages API (``/v1/messages``, ``/v1/messages/count_tokens``) for
``tooldialect serve``, on top of the handler.

``convert`` turns a Messages request into a chat completion request for the handler,
``events`` turns the handler's chunks into Messages stream events and the Message they make,
``route`` is the endpoint mounted on llama-cpp-python's server app. See docs/serve.md for what
is served and what is refused.
"""

from __future__ import annotations

from .convert import ChatRequest, MessagesError, count_request, messages_request
from .events import MessageStream, reassemble
from .route import COUNT_PATH, MESSAGES_PATH, MessagesEndpoint, mount_messages

__all__ = [
    "COUNT_PATH",
    "MESSAGES_PATH",
    "ChatRequest",
    "MessageStream",
    "MessagesEndpoint",
    "MessagesError",
    "count_request",
    "messages_request",
    "mount_messages",
    "reassemble",
]
