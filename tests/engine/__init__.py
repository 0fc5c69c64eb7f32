"""Tests of ``tooldialect.engine`` (tests/README.md says what goes where)."""
