"""The in-process engine: one-pass decoding on llama-cpp-python with llama.cpp's own (lazy)
grammar sampler, the prompt cache, fast-forward and the logprobs hooks."""

from ..base import Generation, GenerationResult, SamplingParams
from .generate import Engine, engine_for

__all__ = ["Engine", "Generation", "GenerationResult", "SamplingParams", "engine_for"]
