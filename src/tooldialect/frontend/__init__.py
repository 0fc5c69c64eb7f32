"""The front end shared by every engine: request preparation (prompt, dialect, grammar,
triggers) and response shaping (OpenAI chunks and completions)."""
