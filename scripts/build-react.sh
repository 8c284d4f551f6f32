#!/usr/bin/env bash
# Builds the React front end (backends/react) into backends/react/dist, which
# `gui-agent serve` serves at /react/. Needs Node.js 18+ and npm (packages from the npm
# registry). Does nothing when the build is newer than its sources.
set -euo pipefail
cd "$(dirname "$0")/../backends/react"
log() { echo "build-react: $*" >&2; }
command -v npm >/dev/null || { log "npm is missing: install Node.js 18+ and npm"; exit 1; }
key=$(cat package.json package-lock.json vite.config.js index.html src/* | sha1sum | cut -c1-12)
stamp="dist/.built-$key"
if [ -f "$stamp" ]; then exit 0; fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing its packages (npm ci)"
  # (a registry that cannot be reached fails within about a minute, not the default five)
  npm ci --no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=30000
fi
log "building"
npx --no-install vite build --logLevel warn
touch "$stamp"
