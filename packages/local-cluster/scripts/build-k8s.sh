#!/usr/bin/env bash
# Builds the local cluster's Kubernetes binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy, etcd, kubectl) from the Go module proxy (packages/local-cluster/go)
# into ~/.cache/minimesh/k8s/<version>/bin, once. Reuses the cache when all of them are present.
# Prints how long the build took.
#   MINIMESH_K8S_VERSION (default v1.33.13)   MINIMESH_CACHE (default ~/.cache/minimesh)
#   --force: rebuild even when the binaries exist.
#   --check: exit 0 when every binary is there, 1 when one is missing; prints nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
version="${MINIMESH_K8S_VERSION:-v1.33.13}"
cache="${MINIMESH_CACHE:-$HOME/.cache/minimesh}"
bin="$cache/k8s/$version/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd kubectl)

missing=0
for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing=1; done
if [ "${1:-}" = "--check" ]; then exit "$missing"; fi
if [ "$missing" = 0 ] && [ "${1:-}" != "--force" ]; then
  echo "[build-k8s] using cached binaries in $bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "[build-k8s] Go is required to build kube-apiserver (go 1.24 or newer): not found on PATH" >&2
  exit 1
fi
gov="$(go env GOVERSION 2>/dev/null || true)"; gov="${gov#go}"
if [ "$(printf '%s\n1.24\n' "${gov%%[!0-9.]*}" | sort -V | head -1)" != "1.24" ]; then
  echo "[build-k8s] Go 1.24 or newer is required to build Kubernetes $version: found go $gov" >&2
  exit 1
fi
major="${version#v}"; major="${major%%.*}"
minor="${version#v*.}"; minor="${minor%%.*}"
commit="0000000000000000000000000000000000000000"
date_="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ld="$ld -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date_"
done
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build"
echo "[build-k8s] building ${binaries[*]} $version into $bin (first time: several minutes)"
start=$(date +%s)
cd "$here/go"
GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOTOOLCHAIN=local CGO_ENABLED=0 \
  nice -n 10 go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ld" -o "$bin/" ./cmd/...
end=$(date +%s)
echo "[build-k8s] built in $((end - start))s"
