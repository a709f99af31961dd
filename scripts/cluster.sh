#!/usr/bin/env bash
# npm run cluster -- <up|down|status|exec|logs|kubectl>: the local Kubernetes cluster
# (packages/local-cluster). Builds the package first when its dist is missing or stale.
# up and down take the same lock as ensureCluster() (<state dir>.up.lock) themselves. Callers that
# share the machine's one cluster hold /tmp/minimesh-cluster.lock around the whole run (CONTRIBUTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=packages/local-cluster
if [ ! -f "$pkg/dist/main.js" ] || [ -n "$(find "$pkg/src" -newer "$pkg/dist/main.js" -name '*.ts' -not -name '*.test.ts' 2>/dev/null | head -1)" ]; then
  (cd "$pkg" && npx tsc -p tsconfig.build.json)
fi
exec node "$pkg/dist/main.js" "$@"
