"""The front end shared by every engine: the prompt rendered with a dialect (``render``),
request preparation (prompt, dialect, grammar, triggers) and response shaping (OpenAI chunks and
completions)."""
