"""The llama-server engine: decoding on llama.cpp's own ``llama-server`` over HTTP.

The front end (``tooldialect.server_client.ServerClient``) prepares each request exactly as
``ToolChatHandler`` does; this package only sends it to ``/completion`` on the least busy of one
or more servers (``pool``), and finds or launches a binary (``launch``).
"""

from __future__ import annotations

from .launch import LlamaServer, find_llama_server

__all__ = ["LlamaServer", "find_llama_server"]
