#!/usr/bin/env bash
# npm run demo — the whole mesh on the local cluster: local cluster → chart (the Linkerd tutorial's install command) →
# client and server apps → first meshed request → a short report. --keep leaves everything running.
# Needs root (network namespaces and iptables, like the local cluster and the integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: the local cluster runs pods in network namespaces and needs root (try: sudo npm run demo)" >&2
  exit 1
fi
bash scripts/setup.sh >/dev/null
npx turbo run build --output-logs=errors-only >/dev/null
exec npx --no-install tsx e2e/demo.ts "$@"
