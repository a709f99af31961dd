// What explain needs to know about a pod, read from its spec and status (pure): is it meshed, the
// proxy's uid and listen ports, its identity, opaque ports, the app's uid, the pod IP.
import { CONTAINER_NAMES, DEFAULT_PORTS, PROXY_ENV } from '@minimesh/config';
import type { PortRange } from '@minimesh/config';
import { parsePortRange } from '@minimesh/proxy-init';

/** The subset of a v1.Pod explain reads (plain JSON, as the API returns it). */
export interface PodLike {
  metadata?: { name?: string; namespace?: string; uid?: string; annotations?: Record<string, string> };
  spec?: {
    nodeName?: string;
    serviceAccountName?: string;
    securityContext?: { runAsUser?: number; runAsGroup?: number };
    containers?: ContainerLike[];
    initContainers?: ContainerLike[];
  };
  status?: {
    podIP?: string;
    phase?: string;
    initContainerStatuses?: ContainerStatusLike[];
    containerStatuses?: ContainerStatusLike[];
  };
}

export interface ContainerStatusLike {
  name: string;
  ready?: boolean;
  started?: boolean;
  restartCount?: number;
  state?: {
    running?: unknown;
    waiting?: { reason?: string; message?: string };
    terminated?: { reason?: string; exitCode?: number };
  };
}

export interface ContainerLike {
  name: string;
  ports?: { containerPort: number; name?: string; protocol?: string }[];
  env?: { name: string; value?: string }[];
  securityContext?: { runAsUser?: number; runAsGroup?: number };
  restartPolicy?: string;
}

export interface PodFacts {
  name: string;
  namespace: string;
  meshed: boolean;
  podIp?: string;
  proxyUid?: number;
  inboundPort: number;
  outboundPort: number;
  adminPort: number;
  controlPort: number;
  identity?: string;
  opaquePorts: PortRange[];
  /** The app container explain speaks for, and its uid (undefined: the image's default user). */
  appContainer?: string;
  appUid?: number;
  appGid?: number;
  /** The proxy container's state from the pod status, when the pod was read from the API. */
  proxyStatus?: { ready: boolean; state: string; restarts: number };
  /** Container ports of the app containers. */
  appPorts: { container: string; port: number; name?: string }[];
}

function portOf(addr: string | undefined, fallback: number): number {
  const m = addr === undefined ? null : /:(\d+)$/.exec(addr);
  return m ? Number(m[1]) : fallback;
}

/** Kubernetes $(VAR) expansion against the container's earlier env and the pod's own fields. */
function expand(value: string, env: Map<string, string>): string {
  return value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env.get(name) ?? whole);
}

export function toPodFacts(pod: PodLike, opts: { container?: string } = {}): PodFacts {
  const name = pod.metadata?.name ?? '';
  const namespace = pod.metadata?.namespace ?? 'default';
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const proxy = all.find((c) => c.name === CONTAINER_NAMES.proxy);
  const env = new Map<string, string>();
  // The injector feeds the identity name from fieldRefs through $(VAR)s; resolve the common ones.
  env.set('_pod_ns', namespace);
  env.set('_pod_name', name);
  env.set('_pod_sa', pod.spec?.serviceAccountName ?? 'default');
  for (const e of proxy?.env ?? []) if (e.value !== undefined) env.set(e.name, expand(e.value, env));
  const apps = (pod.spec?.containers ?? []).filter((c) => c.name !== CONTAINER_NAMES.proxy);
  const app = opts.container !== undefined ? apps.find((c) => c.name === opts.container) : apps[0];
  const opaque = env.get(PROXY_ENV.opaquePorts) ?? '';
  const opaquePorts: PortRange[] = [];
  for (const part of opaque.split(',')) {
    const t = part.trim();
    if (t === '') continue;
    try {
      opaquePorts.push(parsePortRange(t));
    } catch {
      // a name the injector should have resolved; not a port
    }
  }
  const facts: PodFacts = {
    name,
    namespace,
    meshed: proxy !== undefined,
    inboundPort: portOf(env.get(PROXY_ENV.inboundListenAddr), DEFAULT_PORTS.inbound),
    outboundPort: portOf(env.get(PROXY_ENV.outboundListenAddr), DEFAULT_PORTS.outbound),
    adminPort: portOf(env.get(PROXY_ENV.adminListenAddr), DEFAULT_PORTS.admin),
    controlPort: portOf(env.get(PROXY_ENV.controlListenAddr), DEFAULT_PORTS.control),
    opaquePorts,
    appPorts: apps.flatMap((c) =>
      (c.ports ?? [])
        .filter((p) => (p.protocol ?? 'TCP') === 'TCP')
        .map((p) => ({ container: c.name, port: p.containerPort, ...(p.name ? { name: p.name } : {}) })),
    ),
  };
  if (pod.status?.podIP) facts.podIp = pod.status.podIP;
  const ps = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (c) => c.name === CONTAINER_NAMES.proxy,
  );
  if (ps) {
    const st = ps.state ?? {};
    const state =
      st.running !== undefined
        ? 'running'
        : st.waiting
          ? `waiting (${st.waiting.reason ?? 'unknown'})`
          : st.terminated
            ? `terminated (${st.terminated.reason ?? `exit ${st.terminated.exitCode ?? '?'}`})`
            : 'unknown';
    facts.proxyStatus = { ready: ps.ready === true, state, restarts: ps.restartCount ?? 0 };
  }
  const proxyUid = proxy?.securityContext?.runAsUser ?? (proxy ? pod.spec?.securityContext?.runAsUser : undefined);
  if (proxyUid !== undefined) facts.proxyUid = proxyUid;
  const identity = env.get(PROXY_ENV.identityLocalName);
  if (identity !== undefined && !identity.includes('$(')) facts.identity = identity;
  if (app) {
    facts.appContainer = app.name;
    const uid = app.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser;
    const gid = app.securityContext?.runAsGroup ?? pod.spec?.securityContext?.runAsGroup;
    if (uid !== undefined) facts.appUid = uid;
    if (gid !== undefined) facts.appGid = gid;
  }
  return facts;
}
