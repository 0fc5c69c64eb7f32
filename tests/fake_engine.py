"""A scripted engine: implements ``engine.base.Engine`` and replays text token by token.

Each script item is one token's piece (``str``, or ``bytes`` for byte-level pieces that may
split a UTF-8 character). It honours what a real engine honours from the request (``max_tokens``
ends with ``length``, stop strings end with ``stop``, the end of the script is an end-of-generation
token), through the same ``TextStream`` the in-process engine decodes with, so the front end's own
behaviour is tested without a GGUF. ``FakeLlama`` is the part of a ``Llama`` the handler reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooldialect.engine.base import Generation, GenerationRequest, GenerationResult
from tooldialect.engine.text import TextStream
from tooldialect.handler import ToolChatHandler


class FakeEngine:
    """Replays :attr:`script`; every request it ran is in :attr:`jobs`."""

    def __init__(
        self, script: Sequence[str | bytes] = (), *, prompt_tokens: int = 7, decoded: int = 3
    ) -> None:
        self.script: list[str | bytes] = list(script)
        self.jobs: list[GenerationRequest] = []
        self.prompt_tokens = prompt_tokens
        self.decoded = decoded

    def run(self, request: GenerationRequest) -> Generation:
        self.jobs.append(request)
        result = GenerationResult(
            prompt_tokens=self.prompt_tokens, last_prompt_eval_tokens=self.decoded
        )
        return Generation(self._pieces(request, list(self.script), result), result)

    @staticmethod
    def _pieces(
        request: GenerationRequest, script: list[str | bytes], result: GenerationResult
    ) -> Iterator[str]:
        out = TextStream(request.stop)
        limit = request.max_tokens if request.max_tokens and request.max_tokens > 0 else None
        result.finish_reason = "stop"  # the script's end is an end-of-generation token
        try:
            for n, piece in enumerate(script, 1):
                result.completion_tokens = n
                text = out.feed(piece)
                if text:
                    yield text
                if out.stopped_by is not None:
                    result.stopped_by = out.stopped_by
                    return
                if limit is not None and n >= limit:
                    result.finish_reason = "length"
                    break
            tail = out.finish()
            if tail:
                yield tail
        finally:
            result.text = out.text


@dataclass
class FakeVocab:
    def token_get_text(self, token: int) -> str:
        return ""


@dataclass(eq=False)
class FakeLlama:
    """What ``ToolChatHandler`` reads from a ``Llama`` (hashable by identity, as a ``Llama``)."""

    chat_template: str
    model_path: str = "/models/fake.gguf"
    architecture: str = "qwen2"
    last_n_tokens_size: int = 64
    cache: Any = None
    metadata: dict[str, str] = field(default_factory=dict)
    _model: Any = field(default_factory=FakeVocab)

    def __post_init__(self) -> None:
        self.metadata = {
            "general.architecture": self.architecture,
            "general.name": "fake",
            "tokenizer.chat_template": self.chat_template,
        }

    def token_bos(self) -> int:
        return -1

    def token_eos(self) -> int:
        return -1


def fake_handler(
    template: str, script: Sequence[str | bytes] = (), **options: Any
) -> tuple[ToolChatHandler, FakeLlama, FakeEngine]:
    """A ``ToolChatHandler`` whose engine for a fake model replays ``script``."""
    handler = ToolChatHandler(**options)
    llama = FakeLlama(template)
    engine = FakeEngine(script)
    handler.setup(llama, engine=engine)
    return handler, llama, engine
