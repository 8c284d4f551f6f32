#!/usr/bin/env bash
# Sets up everything the tests need (Python deps, Debian chromium, the React front end's
# build), then runs lint, the type checker and the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)  # to build the React front end
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q "${missing[@]}"
fi
scripts/build-react.sh  # (its browser tests run the build)
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
# Three workers on two cores: the browser tests spend part of their time waiting on a page.
# Measured on this 2-core machine: 940 s with two workers, 750-819 s with three, the CPU 93%
# busy with three (so a fourth would only add contention).
.venv/bin/python -m pytest -n 3 --dist loadfile -raR "$@"
