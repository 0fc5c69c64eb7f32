# Two commands for a fresh machine:  make demo  (set-up + a real tool call)  then  make test
PY := .venv/bin/python

.PHONY: demo setup install models server test test-fast lint bench clean

demo: setup
	$(PY) examples/demo.py

setup: install models server

install:
	bash scripts/install.sh

models:
	$(PY) scripts/fetch_models.py

# llama-server for the server-engine tests: a prebuilt copy when one exists (../shared/bin);
# `bash scripts/build_llama_server.sh` builds one from source (~7 min)
server:
	bash scripts/build_llama_server.sh --prebuilt

test:
	$(PY) -m pytest -q

test-fast:
	$(PY) -m pytest -q -m "not model"

# the same checks .ci/run makes (mypy's files, src and tests, are set in pyproject.toml)
lint:
	.venv/bin/ruff check src tests bench scripts
	.venv/bin/ruff format --check src tests bench scripts
	.venv/bin/mypy

bench:
	$(PY) bench/run.py --quick

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
