// The `minimesh-proxy` container: the sidecar, its environment, probes and security context.
import { CONTAINER_NAMES, PROXY_ENV, formatPortRanges, toIdentityName, type MeshConfig } from '@minimesh/config';
import type { InjectSettings } from './overrides.js';
import type { Container, EnvVar, HttpProbe } from './types.js';
import { IDENTITY_DIR, TOKEN_DIR, TOKEN_FILE, VOLUME_NAMES } from './volumes.js';

/** Service accounts of the control-plane components the proxy talks to. */
export const CONTROL_PLANE_SERVICE_ACCOUNTS = {
  identity: 'minimesh-identity',
  destination: 'minimesh-destination',
} as const;

export interface ProxyContainerInput {
  config: MeshConfig;
  settings: InjectSettings;
  /** The pod's own (TCP) container ports, sorted. */
  inboundPorts: number[];
  /** Native sidecar (init container with restartPolicy Always) or classic first container. */
  native: boolean;
}

function fieldRef(name: string, fieldPath: string): EnvVar {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

function probe(path: string, port: number, extra: Partial<HttpProbe> = {}): HttpProbe {
  return { httpGet: { path, port }, ...extra };
}

export function buildProxyEnv(config: MeshConfig, s: InjectSettings, inboundPorts: number[]): EnvVar[] {
  const cpNs = config.controlPlaneNamespace;
  const trustDomain = config.identityTrustDomain || config.clusterDomain;
  const identityOf = (serviceAccount: string): string =>
    toIdentityName({ serviceAccount, namespace: cpNs, controlPlaneNamespace: cpNs, trustDomain });
  const { ports } = config.proxy;
  // With IPv6 on, [::] takes both families, and outbound listens on both loopbacks: iptables REDIRECTs
  // a locally made IPv4 connection to 127.0.0.1 and an IPv6 one to ::1 (Linkerd does the same).
  const ipv6 = config.proxyInit.ipv6;
  const any = ipv6 ? '[::]' : '0.0.0.0';
  const env: EnvVar[] = [
    // Downward-API helpers first: later values refer to them with $(name) expansion, because the
    // AdmissionReview may not carry the pod's namespace, name or node.
    fieldRef('_pod_name', 'metadata.name'),
    fieldRef('_pod_ns', 'metadata.namespace'),
    fieldRef('_pod_nodeName', 'spec.nodeName'),
    fieldRef('_pod_sa', 'spec.serviceAccountName'),
    { name: PROXY_ENV.logLevel, value: s.logLevel },
    { name: PROXY_ENV.logFormat, value: config.proxy.logFormat },
    { name: PROXY_ENV.inboundListenAddr, value: `${any}:${ports.inbound}` },
    // The pod's own IPs: an endpoint at one of them is the pod itself, reached in plaintext (as Linkerd's
    // LINKERD2_PROXY_INBOUND_IPS).
    fieldRef(PROXY_ENV.inboundIps, 'status.podIPs'),
    {
      name: PROXY_ENV.outboundListenAddr,
      value: ipv6 ? `127.0.0.1:${ports.outbound},[::1]:${ports.outbound}` : `127.0.0.1:${ports.outbound}`,
    },
    { name: PROXY_ENV.adminListenAddr, value: `${any}:${ports.admin}` },
    { name: PROXY_ENV.controlListenAddr, value: `${any}:${ports.control}` },
    { name: PROXY_ENV.destinationSvcAddr, value: config.destination.address },
    { name: PROXY_ENV.destinationSvcName, value: identityOf(CONTROL_PLANE_SERVICE_ACCOUNTS.destination) },
    {
      name: PROXY_ENV.destinationContext,
      value: '{"ns":"$(_pod_ns)","nodeName":"$(_pod_nodeName)","pod":"$(_pod_name)"}',
    },
    { name: PROXY_ENV.identitySvcAddr, value: config.identity.address },
    { name: PROXY_ENV.identitySvcName, value: identityOf(CONTROL_PLANE_SERVICE_ACCOUNTS.identity) },
    {
      name: PROXY_ENV.identityLocalName,
      value: `$(_pod_sa).$(_pod_ns).serviceaccount.identity.${cpNs}.${trustDomain}`,
    },
    { name: PROXY_ENV.identityTokenFile, value: TOKEN_FILE },
    { name: PROXY_ENV.identityDir, value: IDENTITY_DIR },
    { name: PROXY_ENV.trustAnchors, value: config.identityTrustAnchorsPEM },
  ];
  // The policy controller runs in the destination pod: it answers as destination's identity.
  env.push(
    { name: PROXY_ENV.policySvcAddr, value: config.policy.address },
    { name: PROXY_ENV.policySvcName, value: identityOf(CONTROL_PLANE_SERVICE_ACCOUNTS.destination) },
    { name: PROXY_ENV.policyWorkload, value: '{"ns":"$(_pod_ns)","pod":"$(_pod_name)"}' },
    { name: PROXY_ENV.inboundDefaultPolicy, value: s.defaultInboundPolicy },
    { name: PROXY_ENV.policyClusterNetworks, value: config.clusterNetworks },
  );
  if (inboundPorts.length > 0) env.push({ name: PROXY_ENV.inboundPorts, value: inboundPorts.join(',') });
  env.push(
    { name: PROXY_ENV.opaquePorts, value: formatPortRanges(s.opaquePorts) },
    { name: PROXY_ENV.outboundConnectTimeout, value: config.proxy.connectTimeout },
    { name: PROXY_ENV.detectTimeout, value: config.proxy.detectTimeout },
    { name: PROXY_ENV.shutdownEndpointEnabled, value: String(config.proxy.enableShutdownEndpoint) },
  );
  // viz: the tap service's identity, the only client the proxy's tap server accepts (unset: no tap).
  if (config.proxy.tapSvcName) env.push({ name: PROXY_ENV.tapSvcName, value: config.proxy.tapSvcName });
  return env;
}

export function buildProxyContainer(input: ProxyContainerInput): Container {
  const { config, settings: s } = input;
  const { ports } = config.proxy;
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (s.cpuRequest) requests.cpu = s.cpuRequest;
  if (s.memoryRequest) requests.memory = s.memoryRequest;
  if (s.cpuLimit) limits.cpu = s.cpuLimit;
  if (s.memoryLimit) limits.memory = s.memoryLimit;
  const securityContext: Record<string, unknown> = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    runAsUser: s.proxyUid,
    seccompProfile: { type: 'RuntimeDefault' },
  };
  if (config.proxy.gid >= 0) securityContext.runAsGroup = config.proxy.gid;
  const container: Container = {
    name: CONTAINER_NAMES.proxy,
    image: `${s.proxyImage}:${s.proxyVersion}`,
    imagePullPolicy: config.proxy.image.pullPolicy,
    env: buildProxyEnv(config, s, input.inboundPorts),
    ports: [
      { name: 'minimesh-proxy', containerPort: ports.inbound, protocol: 'TCP' },
      { name: 'minimesh-admin', containerPort: ports.admin, protocol: 'TCP' },
    ],
  };
  if (input.native) {
    container.restartPolicy = 'Always';
    // The app containers start only once the proxy has its identity and is ready.
    container.startupProbe = probe('/ready', ports.admin, { periodSeconds: 1, failureThreshold: 120 });
  }
  container.livenessProbe = probe('/live', ports.admin, { initialDelaySeconds: 10, periodSeconds: 10 });
  container.readinessProbe = probe('/ready', ports.admin, {
    initialDelaySeconds: input.native ? 0 : 2,
    periodSeconds: 10,
  });
  container.resources = {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
  container.securityContext = securityContext;
  container.terminationMessagePolicy = 'FallbackToLogsOnError';
  container.volumeMounts = [
    { name: VOLUME_NAMES.identityEndEntity, mountPath: IDENTITY_DIR },
    { name: VOLUME_NAMES.identityToken, mountPath: TOKEN_DIR, readOnly: true },
  ];
  return container;
}
