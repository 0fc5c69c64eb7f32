"""Tests of ``tooldialect.apps`` (tests/README.md says what goes where)."""
