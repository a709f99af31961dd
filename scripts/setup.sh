#!/usr/bin/env bash
# Installs everything minimesh needs on a fresh Debian machine, and nothing twice:
#   Debian packages (iptables with both backends, iproute2, openssl, curl, util-linux, chromium), npm packages,
#   and the proxy's native addon (SO_ORIGINAL_DST, TCP_USER_TIMEOUT, the event loop's idle-time accounting
#   off; npm 11 blocks dependency install scripts, so we build it here).
# Safe to run repeatedly; every step checks before it acts.
# One line per stage on stderr (scripts/stage.sh): what it does and, the first time, about how long it
# takes on a 2-core machine; the build output goes to a log file under ~/.cache/minimesh/logs, shown
# when a stage fails. Measured on a fresh 2-core machine: README.md (first run).
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE_PREFIX=setup
# shellcheck source=scripts/stage.sh
source scripts/stage.sh
setup_started=$SECONDS

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
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@"
}
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "[setup] missing Debian packages: ${need_apt[*]} (run as root, or: sudo apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
  stage "Debian packages" "installing ${need_apt[*]} (apt-get, ~3 min)" apt_install "${need_apt[@]}"
else
  stage_note "Debian packages" "all there"
fi

# npm packages: `npm ci` from the lock file when node_modules is missing or older than the lock.
# The lock lists every platform's optional packages (buf, turbo, rollup, unrs-resolver are pinned in
# package.json to versions the registry serves for all platforms), so `npm ci` works here, in the
# image build and in users' CI alike.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  stage "npm packages" "installing (npm ci, ~3 min)" npm ci --no-audit --no-fund --loglevel=error
else
  stage_note "npm packages" "up to date"
fi

# The proxy's native addon (packages/proxy/native: SO_ORIGINAL_DST, TCP_USER_TIMEOUT, stopLoopIdleTime), built once per
# source change.
build_addon() {
  # Use the headers that came with this node when it has them (no download needed, works offline).
  local gyp_args=() node_prefix
  node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
  [ -f "$node_prefix/include/node/node_api.h" ] && gyp_args+=(--nodedir="$node_prefix")
  (cd packages/proxy/native && node ../../../node_modules/node-gyp/bin/node-gyp.js rebuild --loglevel=warn "${gyp_args[@]}")
}
if [ -f packages/proxy/native/binding.gyp ]; then
  addon=packages/proxy/native/build/Release/original_dst.node
  if [ ! -f "$addon" ] || [ -n "$(find packages/proxy/native -maxdepth 1 -newer "$addon" -name '*.c*' -o -maxdepth 1 -newer "$addon" -name 'binding.gyp')" ]; then
    stage "proxy native addon" "building (node-gyp, ~30 s)" build_addon
  else
    stage_note "proxy native addon" "up to date"
  fi
fi
# The local cluster's Kubernetes binaries (kube-apiserver ... kubelet, kube-proxy, kubectl), built once
# from the Go module proxy into ~/.cache/minimesh: here, so no test hook ever waits on it.
# Left out with MINIMESH_SKIP_IMAGES=1 too (no cluster without images).
if [ -z "${MINIMESH_SKIP_K8S_BUILD:-}${MINIMESH_SKIP_IMAGES:-}" ]; then
  if bash packages/local-cluster/scripts/build-k8s.sh --check; then
    stage_note "Kubernetes binaries" "cached"
  else
    stage "Kubernetes binaries" "building etcd, kube-apiserver ... kubelet from the Go module proxy (first time, 10–18 min)" \
      bash packages/local-cluster/scripts/build-k8s.sh
  fi
  # kwok, the simulated nodes of the scale tests (`npm run cluster -- up --simulated-nodes N`): built
  # here too, so that no test prints a build on the console.
  if bash packages/local-cluster/scripts/build-kwok.sh --check; then
    stage_note "kwok" "cached"
  else
    stage "kwok" "building the simulated nodes from the Go module proxy (first time, ~2 min)" \
      bash packages/local-cluster/scripts/build-kwok.sh
  fi
fi
# The pinned Go tools (actionlint for npm run lint, k3d for its config test, syft and cosign for the
# images' SBOMs and signatures, cnitool for minimesh-cni's tests) and the images (docs/images.md): built here, before any test, into
# ~/.cache/minimesh; later runs only compare input hashes (about 1 s). The image build installs
# docker.io and mmdebstrap when missing and stops the engine it started.
# MINIMESH_SKIP_IMAGES=1 leaves this part out (CI's unit job).
if have go && [ -z "${MINIMESH_SKIP_IMAGES:-}" ]; then
  missing_tools=()
  for t in actionlint k3d syft cosign cnitool; do bash scripts/go-tool.sh --check "$t" || missing_tools+=("$t"); done
  build_go_tools() { local t; for t in "$@"; do bash scripts/go-tool.sh "$t"; done; }
  if [ "${#missing_tools[@]}" -gt 0 ]; then
    stage "Go tools" "building ${missing_tools[*]} from the Go module proxy (first time, ~12 min)" build_go_tools "${missing_tools[@]}"
  else
    stage_note "Go tools" "cached (actionlint, k3d, syft, cosign, cnitool)"
  fi
fi
if [ "$(id -u)" -eq 0 ] && [ -z "${MINIMESH_SKIP_IMAGES:-}" ]; then
  stale=$(bash scripts/images.sh stale | wc -l)
  if [ "$stale" -gt 0 ]; then
    stage "container images" "building ${stale} of $(bash scripts/images.sh refs | wc -l) (first time, ~18 min; after a change under packages/, ~4 min)" \
      bash scripts/images.sh build
  else
    stage_note "container images" "up to date"
  fi
fi
# The CLI: `npx minimesh` runs packages/cli/bin/minimesh.js, which runs the build (turbo: cached, ~1 s when unchanged).
stage "minimesh CLI" "building (turbo)" npx turbo run build --filter=@minimesh/cli... --output-logs=errors-only
printf '[setup] ready in %s s\n' "$(stage_number $((SECONDS - setup_started)))" >&2
