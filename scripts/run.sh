#!/usr/bin/env bash
# Sets up (first time) and runs the app on http://127.0.0.1:7860. Extra arguments go to gui-agent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The React front end at /react/ is optional: built when npm is there, the app runs either way.
if command -v npm >/dev/null; then
  scripts/build-react.sh || echo "run: the React front end was not built; the app runs without it" >&2
fi
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
exec .venv/bin/gui-agent "$@"
