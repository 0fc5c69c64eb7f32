"""Engines: what decodes. ``in_process`` runs llama-cpp-python with llama.cpp's own (lazy)
grammar sampler; ``llama_server`` sends the same prepared request to llama.cpp's server.

The in-process engine imports ``llama_cpp`` inside the functions that use it, so importing
an engine loads no model library (``tests/test_public_api.py`` lists every module that imports it,
and how).
"""
