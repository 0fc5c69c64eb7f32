"""The front end shared by every engine: ``pipeline.FrontEnd`` takes a request through it (options,
template and dialect resolution, the engine's ``GenerationRequest``, the reply); the prompt rendered
with a dialect (``render``), request preparation (``request``: prompt, dialect, grammar, triggers)
and response shaping (``response``: OpenAI chunks and completions)."""
