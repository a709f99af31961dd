#!/usr/bin/env bash
# npm run demo — the whole mesh on the local cluster: local cluster → chart (the Linkerd tutorial's install command) →
# client and server apps → first meshed request → a short report. --keep leaves everything running.
# Needs root (network namespaces and iptables, like the local cluster and the integration tests).
# Setup, the build and the cluster's start print one line each (scripts/stage.sh), then the demo its steps.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: the local cluster runs pods in network namespaces and needs root (try: sudo npm run demo)" >&2
  exit 1
fi
bash scripts/setup.sh
STAGE_PREFIX=demo
# shellcheck source=scripts/stage.sh
source scripts/stage.sh
stage "build" "turbo run build" npx turbo run build --output-logs=errors-only
stage "local cluster" "starting (first time: importing the images, ~3 min)" npm run --silent cluster -- up
exec npx --no-install tsx e2e/demo.ts "$@"
