"""The prompt stage: the model's own chat template, rendered in a sandbox under a budget.

``template`` (load, sandbox, capabilities), ``budget`` (bounded renders), ``compat`` (quirks of
real templates), ``request_messages`` (request validation), ``history`` (earlier replies as the
model wrote them), ``fallbacks`` (templates shipped for GGUFs that carry none). Rendering with a
dialect (``frontend.render``) sits above ``dialect``, since it applies the dialect's polyfill.
"""
