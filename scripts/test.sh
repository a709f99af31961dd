#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what is missing, then lint, build, typecheck,
# unit + integration tests of every package (integration tests need root: they make their own
# network namespaces and share one local Kubernetes cluster), then the e2e suite on the local driver.
# Setup and the steps before the tests print one line each (scripts/stage.sh); the tests print their own.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
STAGE_PREFIX="test"
# shellcheck source=scripts/stage.sh
source scripts/stage.sh

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [ -f packages/local-cluster/package.json ] && [ -z "${MINIMESH_KEEP_CLUSTER:-}" ]; then
    npm run --silent cluster -- down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

rm -f packages/*/.vitest-report.json e2e/.vitest-report.json
status=0
stage "build" "turbo run build" npx turbo run build --output-logs=errors-only
stage "lint" "eslint, prettier, actionlint, shellcheck" npm run --silent lint
stage "typecheck" "turbo run typecheck" npx turbo run typecheck --output-logs=errors-only
# The local cluster (a real node; the first import of the images into its containerd takes minutes)
# starts here, before any test hook waits on it. A failure shows the cluster's own lines; the cluster
# tests then fail with the same one.
if [ "$(id -u)" -eq 0 ]; then
  stage "local cluster" "starting (first time: importing the images, ~3 min)" npm run --silent cluster -- up || status=$?
fi
npx turbo run test --concurrency=1 --continue --output-logs=full || status=$?

# One closing line for the whole repository, summed from every package's vitest JSON report.
node scripts/summarize-tests.mjs || status=$?
exit "$status"
