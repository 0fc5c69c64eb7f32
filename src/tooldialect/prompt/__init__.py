"""The prompt stage: the model's own chat template, rendered in a sandbox under a budget.

``template`` (load, sandbox, capabilities), ``budget`` (bounded renders), ``compat`` (quirks of
real templates), ``messages`` (request validation), ``history`` (earlier replies as the model
wrote them), ``render`` (messages + tools -> prompt text), ``fallbacks`` (templates shipped for
GGUFs that carry none).
"""
