#!/usr/bin/env bash
# Create .venv and install tooldialect with its test, bench, dev, server, clients and mcp extras.
# llama-cpp-python ships to PyPI as source only. When a prebuilt wheel folder exists
# (../shared/wheels, or $TOOLDIALECT_WHEELS) pip takes the wheel from there; otherwise it builds
# from source with portable CPU flags (a native build can fault on CPUs that advertise AMX).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
WHEELS=${TOOLDIALECT_WHEELS:-../shared/wheels}
FIND_LINKS=()
if [ -d "$WHEELS" ]; then
  FIND_LINKS=(--find-links "$WHEELS")
  echo "install: using prebuilt wheels from $WHEELS"
else
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
  echo "install: no wheel folder; building llama-cpp-python from source with CMAKE_ARGS=$CMAKE_ARGS (~7 min)"
fi
if [ ${#FIND_LINKS[@]} -gt 0 ]; then
  .venv/bin/python -m pip install -q "${FIND_LINKS[@]}" -e ".[test,bench,dev,server,clients,mcp]"
else
  # the source build says nothing for minutes under -q: run it verbose into a log and print a
  # heartbeat line (elapsed time, latest build step) every 30 s; show the log's tail on failure
  LOG=.venv/install.log
  if ! .venv/bin/python -m pip install -v -e ".[test,bench,dev,server,clients,mcp]" 2>&1 \
      | .venv/bin/python scripts/heartbeat.py "$LOG" "building llama-cpp-python"; then
    tail -n 60 "$LOG" >&2
    echo "install: failed; the whole log is in $LOG" >&2
    exit 1
  fi
fi
