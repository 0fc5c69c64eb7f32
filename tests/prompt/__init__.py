"""Tests of ``tooldialect.prompt`` (tests/README.md says what goes where)."""
