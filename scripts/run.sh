#!/usr/bin/env bash
# Sets up (first time) and runs the app on http://127.0.0.1:7860. Extra arguments go to gui-agent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
exec .venv/bin/gui-agent "$@"
