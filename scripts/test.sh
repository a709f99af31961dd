#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what is missing, then lint, build, typecheck,
# unit + integration tests of every package (integration tests need root: they make their own
# network namespaces and share one local Kubernetes cluster), then the e2e suite on the local driver.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

cleanup() {
  if [ -f packages/local-cluster/package.json ] && [ -z "${MINIMESH_KEEP_CLUSTER:-}" ]; then
    npm run --silent cluster -- down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

rm -f packages/*/.vitest-report.json e2e/.vitest-report.json
status=0
npx turbo run build --output-logs=errors-only
npm run --silent lint
npx turbo run typecheck --output-logs=errors-only
# The local cluster (a real node; the first import of the images into its containerd takes minutes)
# starts here, before any test hook waits on it. A failure is one line naming the part; the cluster
# tests then fail with the same line.
if [ "$(id -u)" -eq 0 ]; then
  npm run --silent cluster -- up >/dev/null || status=$?
fi
npx turbo run test --concurrency=1 --continue --output-logs=full || status=$?

# One closing line for the whole repository, summed from every package's vitest JSON report.
node scripts/summarize-tests.mjs || status=$?
exit "$status"
