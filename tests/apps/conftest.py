"""Fixtures of the live ``tooldialect serve`` tests (``test_serve_live``, ``test_responses_live``):
a running server on Qwen2.5-Coder-0.5B and the official ``openai`` client on it, one server per
module. A module that wants another server (``test_messages_live``: one thread, Anthropic's
client) defines its own ``base_url`` and ``client``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serve_process import serving
from tooldialect.apps.serve import INSTALL_HINT


@pytest.fixture(scope="module")
def base_url(qwen_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running ``python -m tooldialect.apps.serve`` (killed at the end); its ``/v1`` URL."""
    pytest.importorskip("llama_cpp.server.app", reason=INSTALL_HINT)
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serving(qwen_path, log) as url:
        yield f"{url}/v1"


@pytest.fixture(scope="module")
def client(base_url: str) -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600)
