#!/usr/bin/env bash
# Pinned Go tools, built from the Go module proxy into ~/.cache/minimesh/bin once, and their path printed:
#   bash scripts/go-tool.sh actionlint   # rhysd/actionlint v1.7.12 (npm run lint: the workflows)
#   bash scripts/go-tool.sh k3d          # k3d-io/k3d v5.8.3 (scripts/k3d.sh, the k3d config test)
#   bash scripts/go-tool.sh syft         # anchore/syft v1.57.1 (scripts/images.sh sbom: an SBOM per image)
#   bash scripts/go-tool.sh cosign       # sigstore/cosign v2.6.5 (scripts/images.sh sign|verify; the release)
#   bash scripts/go-tool.sh cnitool      # containernetworking/cni v1.3.1's cnitool (minimesh-cni's tests)
# The module zips are checked against the Go checksum database (sum.golang.org) by the go command, so a
# pinned version is also a pinned, verified checksum: CI (.github/workflows) builds them the same way.
# Built inside a throw-away module that requires the tool's module (not `go install tool@version`: the
# proxy here answers 403 to k3d's version list, which `go install` reads for deprecation notices).
#   bash scripts/go-tool.sh --check TOOL # exit 0 when TOOL is built already, 1 when not; prints nothing
# Environment: MINIMESH_CACHE (default ~/.cache/minimesh).
set -euo pipefail

CACHE="${MINIMESH_CACHE:-$HOME/.cache/minimesh}"
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
tool=${1:-}
case "$tool" in
  actionlint)
    version=v1.7.12
    module=github.com/rhysd/actionlint
    package=github.com/rhysd/actionlint/cmd/actionlint
    ldflags="-s -w -X github.com/rhysd/actionlint.version=${version}"
    ;;
  k3d)
    version=v5.8.3
    module=github.com/k3d-io/k3d/v5
    package=github.com/k3d-io/k3d/v5
    # As k3d's release builds: the version decides the helper images' tags (k3d-tools, k3d-proxy).
    ldflags="-s -w -X github.com/k3d-io/k3d/v5/version.Version=${version}"
    ;;
  syft)
    version=v1.57.1
    module=github.com/anchore/syft
    package=github.com/anchore/syft/cmd/syft
    # As syft's release builds (.goreleaser.yaml): `syft version` reports the version.
    ldflags="-s -w -X main.version=${version#v}"
    ;;
  cosign)
    version=v2.6.5
    module=github.com/sigstore/cosign/v2
    package=github.com/sigstore/cosign/v2/cmd/cosign
    ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=${version}"
    ;;
  cnitool)
    # The CNI project's reference harness: runs a conflist's plugins as a container runtime does (ADD,
    # CHECK, DEL with prevResult chaining) against a network namespace (packages/cni/test).
    version=v1.3.1
    module=github.com/containernetworking/cni
    package=github.com/containernetworking/cni/cnitool
    ldflags="-s -w"
    ;;
  *)
    echo "usage: bash scripts/go-tool.sh [--check] actionlint|k3d|syft|cosign|cnitool" >&2
    exit 2
    ;;
esac

bin="$CACHE/bin/${tool}-${version}"
if [ "$check" = 1 ]; then [ -x "$bin" ]; exit; fi
if [ ! -x "$bin" ]; then
  command -v go >/dev/null 2>&1 || {
    echo "[go-tool] Go >= 1.24 is needed to build ${tool} ${version} (https://go.dev/doc/install)" >&2
    exit 1
  }
  mkdir -p "$CACHE/bin"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "[go-tool] building ${tool} ${version} from the Go module proxy into $CACHE/bin" >&2
  printf 'module minimesh.io/go-tool\n\ngo 1.24\n\nrequire %s %s\n' "$module" "$version" >"$tmp/go.mod"
  (cd "$tmp" && GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
    nice -n 10 go build -trimpath -ldflags="$ldflags" -o "$tmp/$tool" "$package" >&2)
  mv "$tmp/$tool" "$bin"
fi
echo "$bin"
