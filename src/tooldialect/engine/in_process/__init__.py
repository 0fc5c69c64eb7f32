"""The in-process engine: one-pass decoding on llama-cpp-python with llama.cpp's own (lazy)
grammar sampler, the prompt cache, fast-forward, drafts, tool-prefix checkpoints and the
logprobs hooks. ``LlamaCppEngine`` is the engine; ``LlamaCppStats`` its results' ``stats``."""

from .llama_cpp_engine import LlamaCppEngine
from .stats import LlamaCppStats

__all__ = ["LlamaCppEngine", "LlamaCppStats"]
