"""The server engine: tooldialect's dialects and grammars on llama.cpp's own ``llama-server``.

``ServerClient`` prepares each request as ``ToolChatHandler`` does (client-side template render,
dialect spec, grammar, lazy triggers) and sends it to ``/completion`` on the least busy of one or
more servers; ``find_llama_server`` locates a binary for launching one.
"""

from __future__ import annotations

from .client import ServerClient
from .launch import LlamaServer, find_llama_server

__all__ = ["LlamaServer", "ServerClient", "find_llama_server"]
