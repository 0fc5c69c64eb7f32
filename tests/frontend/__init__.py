"""Tests of ``tooldialect.frontend`` (tests/README.md says what goes where)."""
