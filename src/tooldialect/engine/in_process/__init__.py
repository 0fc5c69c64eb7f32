"""The in-process engine: one-pass decoding on llama-cpp-python with llama.cpp's own (lazy)
grammar sampler, the prompt cache, fast-forward and the logprobs hooks."""

from .generate import Engine, Generation, GenerationResult, engine_for
from .sampling import SamplingParams

__all__ = ["Engine", "Generation", "GenerationResult", "SamplingParams", "engine_for"]
