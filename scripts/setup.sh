#!/usr/bin/env bash
# Installs everything minimesh needs on a fresh Debian machine, and nothing twice:
#   Debian packages (iptables with both backends, iproute2, openssl, curl, util-linux, chromium), npm packages,
#   and the native SO_ORIGINAL_DST addon (npm 11 blocks dependency install scripts, so we build it here).
# Safe to run repeatedly; every step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
have iptables-legacy || need_apt+=(iptables)
have ip || need_apt+=(iproute2)
have openssl || need_apt+=(openssl)
have curl || need_apt+=(curl)
have setpriv || need_apt+=(util-linux)
have nsenter || need_apt+=(util-linux)
have flock || need_apt+=(util-linux)       # local cluster: ensureCluster()'s start lock
have mountpoint || need_apt+=(util-linux)  # local cluster: memory-backed emptyDir volumes
have make || need_apt+=(make)
have g++ || need_apt+=(g++)
have python3 || need_apt+=(python3)
have shellcheck || need_apt+=(shellcheck) # npm run lint: actionlint runs it on the workflows
have chromium || need_apt+=(chromium)     # the viz dashboard's browser tests (playwright-core drives it)
# The local cluster's node (packages/local-cluster): containerd + runc run the pods, Debian's CNI
# plugins wire them to the node's bridge, unshare gives containerd and kubelet a private mount namespace.
have containerd || need_apt+=(containerd)
[ -x /usr/sbin/runc ] || have runc || need_apt+=(runc)
[ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
have unshare || need_apt+=(util-linux)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "[setup] missing Debian packages: ${need_apt[*]} (run as root, or: sudo apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# npm packages: `npm ci` from the lock file when node_modules is missing or older than the lock.
# The lock lists every platform's optional packages (buf, turbo, rollup, unrs-resolver are pinned in
# package.json to versions the registry serves for all platforms), so `npm ci` works here, in the
# image build and in users' CI alike.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The SO_ORIGINAL_DST addon (packages/proxy/native), built once per source change.
if [ -f packages/proxy/native/binding.gyp ]; then
  addon=packages/proxy/native/build/Release/original_dst.node
  if [ ! -f "$addon" ] || [ -n "$(find packages/proxy/native -maxdepth 1 -newer "$addon" -name '*.c*' -o -maxdepth 1 -newer "$addon" -name 'binding.gyp')" ]; then
    log "building the SO_ORIGINAL_DST addon"
    # Use the headers that came with this node when it has them (no download needed, works offline).
    gyp_args=()
    node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
    [ -f "$node_prefix/include/node/node_api.h" ] && gyp_args+=(--nodedir="$node_prefix")
    (cd packages/proxy/native && node ../../../node_modules/node-gyp/bin/node-gyp.js rebuild --loglevel=warn "${gyp_args[@]}")
  fi
fi
# The local cluster's Kubernetes binaries (kube-apiserver ... kubelet, kube-proxy, kubectl), built once
# from the Go module proxy into ~/.cache/minimesh (minutes cold): here, so no test hook ever waits on it.
# Left out with MINIMESH_SKIP_IMAGES=1 too (no cluster without images).
if [ -z "${MINIMESH_SKIP_K8S_BUILD:-}${MINIMESH_SKIP_IMAGES:-}" ]; then
  bash packages/local-cluster/scripts/build-k8s.sh | sed 's/^\[build-k8s\]/[setup]/' >&2
fi
# The pinned Go tools (actionlint for npm run lint, k3d for its config test, cnitool for minimesh-cni's
# tests) and the images (docs/images.md):
# built here, before any test, into ~/.cache/minimesh; later runs only compare input hashes (about 1 s).
# The image build installs docker.io and mmdebstrap when missing and stops the engine it started.
# MINIMESH_SKIP_IMAGES=1 leaves this part out (CI's unit job).
if have go && [ -z "${MINIMESH_SKIP_IMAGES:-}" ]; then
  bash scripts/go-tool.sh actionlint >/dev/null
  bash scripts/go-tool.sh k3d >/dev/null
  bash scripts/go-tool.sh cnitool >/dev/null   # minimesh-cni's CNI harness (packages/cni/test)
fi
if [ "$(id -u)" -eq 0 ] && [ -z "${MINIMESH_SKIP_IMAGES:-}" ]; then
  bash scripts/images.sh build
fi
# The CLI: `npx minimesh` runs packages/cli/bin/minimesh.js, which runs the build (turbo: cached, ~1 s when unchanged).
log "building the CLI (npx minimesh)"
npx turbo run build --filter=@minimesh/cli... --output-logs=errors-only >/dev/null
log "ready"
