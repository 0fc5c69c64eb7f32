#!/usr/bin/env bash
# Build llama.cpp's llama-server from the very sources llama-cpp-python's sdist vendors, so the
# server matches the in-process library version for version; cache it next to the test models
# ($TOOLDIALECT_MODELS/bin, default ~/.cache/tooldialect/models/bin).
#
#   bash scripts/build_llama_server.sh             # prebuilt copy if one exists, else build (~7 min)
#   bash scripts/build_llama_server.sh --prebuilt  # only take a prebuilt copy; never build
#
# A prebuilt copy: $TOOLDIALECT_LLAMA_SERVER_PREBUILT, or ../shared/bin/llama-server (built the
# same way). Flags are the portable ones of the wheel: a native build faults on CPUs with AMX.
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=${TOOLDIALECT_MODELS:-$HOME/.cache/tooldialect/models}
DEST="$MODELS/bin/llama-server"
PREBUILT=${TOOLDIALECT_LLAMA_SERVER_PREBUILT:-../shared/bin/llama-server}
mkdir -p "$MODELS/bin"
if [ -x "$DEST" ] && "$DEST" --version >/dev/null 2>&1; then
  echo "llama-server: cached at $DEST"; exit 0
fi
if [ -x "$PREBUILT" ]; then
  cp "$PREBUILT" "$DEST.tmp" && mv "$DEST.tmp" "$DEST"
  echo "llama-server: prebuilt copy from $PREBUILT -> $DEST"; exit 0
fi
if [ "${1:-}" = "--prebuilt" ]; then
  echo "llama-server: no prebuilt copy; server tests will skip (build: bash scripts/build_llama_server.sh)"
  exit 0
fi
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
VERSION=$("$PY" -c "import llama_cpp; print(llama_cpp.__version__)" 2>/dev/null || echo 0.3.36)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "llama-server: fetching the llama-cpp-python $VERSION sdist"
"$PY" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK"
tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC=$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)
echo "llama-server: configuring (portable flags, static ggml)"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  > "$WORK/configure.log"
echo "llama-server: building (about 5-7 minutes on 2 cores; a line per finished step)"
cmake --build "$WORK/build" --target llama-server -j"$(nproc)" 2>&1 \
  | grep --line-buffered -E '^\[ *[0-9]+%\]' | awk '{ print "  " $1 " " $2; fflush() }'
cp "$WORK/build/bin/llama-server" "$DEST"
echo "llama-server: built $("$DEST" --version 2>&1 | head -1) -> $DEST"
