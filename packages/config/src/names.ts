// Names every component agrees on: annotations, labels, container names, ports, proxy environment.
export const ANNOTATIONS = {
  inject: 'minimesh.io/inject',
  proxyVersion: 'minimesh.io/proxy-version',
  createdBy: 'minimesh.io/created-by',
  trustRootSha256: 'minimesh.io/trust-root-sha256',
  /** Prefix of the per-pod/namespace overrides, e.g. config.minimesh.io/skip-outbound-ports. */
  configPrefix: 'config.minimesh.io/',
  opaquePorts: 'config.minimesh.io/opaque-ports',
  /** What a pod's ports admit when no Server selects them (docs/policy.md). */
  defaultInboundPolicy: 'config.minimesh.io/default-inbound-policy',
  /** CNI mode: the proxy-init arguments the injector resolved for the pod (JSON list); minimesh-cni applies them. */
  proxyInitArgs: 'minimesh.io/proxy-init-args',
} as const;

export const LABELS = {
  controlPlaneNs: 'minimesh.io/control-plane-ns',
  workloadNs: 'minimesh.io/workload-ns',
  controlPlaneComponent: 'minimesh.io/control-plane-component',
  isControlPlane: 'minimesh.io/is-control-plane',
} as const;

export const CONTAINER_NAMES = {
  init: 'minimesh-init',
  proxy: 'minimesh-proxy',
  /** CNI mode's init container in place of minimesh-init (docs/cni.md). */
  validator: 'minimesh-network-validator',
} as const;

export const DEFAULT_PORTS = {
  inbound: 4143,
  outbound: 4140,
  admin: 4191,
  control: 4190,
  destination: 8086,
  destinationAdmin: 9996,
  identity: 8080,
  identityAdmin: 9990,
  injector: 8443,
  injectorAdmin: 9995,
  policy: 8090,
  policyAdmin: 9990,
  proxyUid: 2102,
} as const;

/** Environment variables the proxy reads (Linkerd's LINKERD2_PROXY_* with our prefix). */
export const PROXY_ENV = {
  logLevel: 'MINIMESH_PROXY_LOG',
  logFormat: 'MINIMESH_PROXY_LOG_FORMAT',
  inboundListenAddr: 'MINIMESH_PROXY_INBOUND_LISTEN_ADDR',
  outboundListenAddr: 'MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR',
  adminListenAddr: 'MINIMESH_PROXY_ADMIN_LISTEN_ADDR',
  controlListenAddr: 'MINIMESH_PROXY_CONTROL_LISTEN_ADDR',
  destinationSvcAddr: 'MINIMESH_PROXY_DESTINATION_SVC_ADDR',
  destinationSvcName: 'MINIMESH_PROXY_DESTINATION_SVC_NAME',
  destinationContext: 'MINIMESH_PROXY_DESTINATION_CONTEXT',
  identitySvcAddr: 'MINIMESH_PROXY_IDENTITY_SVC_ADDR',
  identitySvcName: 'MINIMESH_PROXY_IDENTITY_SVC_NAME',
  identityLocalName: 'MINIMESH_PROXY_IDENTITY_LOCAL_NAME',
  identityTokenFile: 'MINIMESH_PROXY_IDENTITY_TOKEN_FILE',
  identityDir: 'MINIMESH_PROXY_IDENTITY_DIR',
  trustAnchors: 'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS',
  inboundPorts: 'MINIMESH_PROXY_INBOUND_PORTS',
  /** This pod's IPs (status.podIPs, comma-separated): endpoints at these are the pod itself (Linkerd's LINKERD2_PROXY_INBOUND_IPS). */
  inboundIps: 'MINIMESH_PROXY_INBOUND_IPS',
  opaquePorts: 'MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION',
  outboundConnectTimeout: 'MINIMESH_PROXY_OUTBOUND_CONNECT_TIMEOUT',
  inboundConnectTimeout: 'MINIMESH_PROXY_INBOUND_CONNECT_TIMEOUT',
  detectTimeout: 'MINIMESH_PROXY_DETECT_TIMEOUT',
  shutdownEndpointEnabled: 'MINIMESH_PROXY_SHUTDOWN_ENDPOINT_ENABLED',
  shutdownGracePeriod: 'MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD',
  /** The tap service's identity: the only client the proxy's tap server accepts; unset: no tap server. */
  tapSvcName: 'MINIMESH_PROXY_TAP_SVC_NAME',
  policySvcAddr: 'MINIMESH_PROXY_POLICY_SVC_ADDR',
  policySvcName: 'MINIMESH_PROXY_POLICY_SVC_NAME',
  /** JSON {"ns","pod"}: the workload the proxy asks the policy controller about. */
  policyWorkload: 'MINIMESH_PROXY_POLICY_WORKLOAD',
  policyClusterNetworks: 'MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS',
  inboundDefaultPolicy: 'MINIMESH_PROXY_INBOUND_DEFAULT_POLICY',
} as const;
