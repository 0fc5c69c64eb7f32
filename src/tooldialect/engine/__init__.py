"""Engines: what decodes. ``in_process`` runs llama-cpp-python with llama.cpp's own (lazy)
grammar sampler; ``llama_server`` sends the same prepared request to llama.cpp's server.

Only the engines and ``tooldialect.handler`` import ``llama_cpp``, and only when called.
"""
