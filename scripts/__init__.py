"""Repository scripts; ``fetch_models.MODELS`` is the one table of test-model files."""
