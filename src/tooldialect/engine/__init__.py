"""The engine: one-pass decoding on llama-cpp-python with llama.cpp's own (lazy) grammar sampler.

Only this package and ``tooldialect.handler`` import ``llama_cpp``, and only when called.
"""

from .generate import Engine, Generation, GenerationResult, engine_for
from .sampling import SamplingParams

__all__ = [
    "Engine",
    "Generation",
    "GenerationResult",
    "SamplingParams",
    "engine_for",
]
