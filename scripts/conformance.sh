#!/usr/bin/env bash
# npm run conformance [-- --test=ShortName ... --keep --out=DIR]: the Gateway API conformance suite
# (sigs.k8s.io/gateway-api/conformance v1.6.3, profiles MESH-HTTP and MESH-GRPC) against minimesh on the
# local cluster, its report written to docs/conformance/ (docs/conformance/README.md):
#   1. bash scripts/images.sh build   minimesh's images and the suite's echo app (Istio's, from the Go
#                                     module proxy), each rebuilt only when its inputs changed
#   2. npm run cluster -- up          the local node, which imports them (nothing to do when it runs)
#   3. e2e/scripts/conformance.ts     the Gateway API CRDs, the chart, `go test` in conformance/, the report
# With MINIMESH_E2E_DRIVER=k3d, `npm run k3d -- up` has built and imported the images: steps 1 and 2 are
# skipped (the echo app must then be in the k3d cluster too). The first run fetches the Go modules and
# builds Istio's echo app (about 6 minutes) and the suite's test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) exec npx tsx e2e/scripts/conformance.ts --help ;; esac
if [ "${MINIMESH_E2E_DRIVER:-local}" = local ]; then
  bash scripts/images.sh build
  npm run --silent cluster -- up
fi
exec npx tsx e2e/scripts/conformance.ts "$@"
