#!/usr/bin/env bash
# npm run cluster -- <up|down|status|exec|logs|kubectl>: the local Kubernetes cluster
# (packages/local-cluster). Builds the package first when its dist is missing or stale.
# up and down run under the same lock as ensureCluster() (<state dir>.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=packages/local-cluster
if [ ! -f "$pkg/dist/main.js" ] || [ -n "$(find "$pkg/src" -newer "$pkg/dist/main.js" -name '*.ts' -not -name '*.test.ts' 2>/dev/null | head -1)" ]; then
  (cd "$pkg" && npx tsc -p tsconfig.build.json)
fi
case "${1:-}" in
  up|down) exec flock "${MINIMESH_CLUSTER_DIR:-/tmp/minimesh-cluster}.lock" node "$pkg/dist/main.js" "$@" ;;
  *) exec node "$pkg/dist/main.js" "$@" ;;
esac
