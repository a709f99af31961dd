#!/usr/bin/env bash
# The part of `npm run lint` that is not JavaScript: actionlint v1.7.12 (built from the Go module proxy,
# scripts/go-tool.sh) with shellcheck on every workflow, and shellcheck on the image and k3d scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "[lint] shellcheck is missing: bash scripts/setup.sh installs it (Debian package shellcheck)" >&2
  exit 1
fi
actionlint=$(bash scripts/go-tool.sh actionlint)
"$actionlint" -shellcheck="$(command -v shellcheck)" .github/workflows/*.yml
shellcheck -x scripts/images.sh scripts/k3d.sh scripts/go-tool.sh scripts/lint-workflows.sh scripts/stage.sh scripts/setup.sh \
  scripts/demo.sh scripts/test.sh docker/runtime-files.sh packages/local-cluster/scripts/build-k8s.sh \
  scripts/gateway-api.sh scripts/conformance.sh
