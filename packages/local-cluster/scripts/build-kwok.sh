#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok, the simulated nodes of `npm run cluster -- up --simulated-nodes N`) from
# the Go module proxy into ~/.cache/minimesh/kwok/<version>/, once, with the stage files it needs beside it:
# kwok refuses to start without stages ("no stages found"), and the module ships them as YAML under
# kustomize/stage/; they are concatenated into stages.yaml, passed to kwok with --config.
# Built inside a throw-away module that requires kwok's module (as scripts/go-tool.sh does), so the
# module zip is checked against the Go checksum database: a pinned version is a pinned checksum.
#   MINIMESH_KWOK_VERSION (default v0.8.0)   MINIMESH_CACHE (default ~/.cache/minimesh)
#   --check: exit 0 when it is built, 1 when not (scripts/setup.sh)
set -euo pipefail
version="${MINIMESH_KWOK_VERSION:-v0.8.0}"
cache="${MINIMESH_CACHE:-$HOME/.cache/minimesh}"
out="$cache/kwok/$version"
if [ "${1:-}" = "--check" ]; then
  [ -x "$out/kwok" ] && [ -s "$out/stages.yaml" ]
  exit
fi
if [ -x "$out/kwok" ] && [ -s "$out/stages.yaml" ]; then
  echo "[build-kwok] using cached kwok in $out" >&2
  exit 0
fi
command -v go >/dev/null 2>&1 || {
  echo "[build-kwok] Go >= 1.24 is needed to build kwok $version: not found on PATH" >&2
  exit 1
}
mkdir -p "$out" "$cache/go/mod" "$cache/go/build"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "[build-kwok] building kwok $version from the Go module proxy into $out (first time: about 2 minutes)" >&2
start=$(date +%s)
printf 'module minimesh.io/kwok-build\n\ngo 1.24\n\nrequire sigs.k8s.io/kwok %s\n' "$version" >"$tmp/go.mod"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
(cd "$tmp" && nice -n 10 go build -trimpath -ldflags="-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok >&2)
mod="$(cd "$tmp" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
stages=(
  node/fast/node-initialize.yaml
  node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml
  pod/fast/pod-complete.yaml
  pod/fast/pod-delete.yaml
)
: >"$tmp/stages.yaml"
for s in "${stages[@]}"; do
  [ -f "$mod/kustomize/stage/$s" ] || {
    echo "[build-kwok] kwok $version's module has no kustomize/stage/$s" >&2
    exit 1
  }
  { echo "---"; cat "$mod/kustomize/stage/$s"; } >>"$tmp/stages.yaml"
done
mv "$tmp/stages.yaml" "$out/stages.yaml"
mv "$tmp/kwok" "$out/kwok"
echo "[build-kwok] built in $(($(date +%s) - start))s" >&2
