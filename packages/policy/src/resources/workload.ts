// The parts of a Pod (or ExternalWorkload) the policy controller needs: labels for Server selectors,
// named TCP ports, HTTP probe paths (for probe routes) and the policy annotations.
import { parsePortRanges, type PortRange } from '@minimesh/config';
import { parseDefaultPolicy } from '../defaults.js';
import type { DefaultPolicyName } from '../model.js';
import { arr, isObject, objectMeta, type Json } from './fields.js';

export const WORKLOAD_ANNOTATIONS = {
  defaultInboundPolicy: 'config.minimesh.io/default-inbound-policy',
  opaquePorts: 'config.minimesh.io/opaque-ports',
  requireIdentityPorts: 'config.minimesh.io/proxy-require-identity-inbound-ports',
} as const;

export interface WorkloadRecord {
  kind: 'pod' | 'externalworkload';
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** Container port name → port numbers (a name may repeat across containers). */
  portNames: Record<string, number[]>;
  /** Port → paths of the HTTP probes that target it. */
  probes: Record<number, string[]>;
  /** From config.minimesh.io/default-inbound-policy; undefined: the cluster default. */
  defaultPolicy?: DefaultPolicyName;
  /** From config.minimesh.io/opaque-ports; undefined: the cluster default. */
  opaquePorts?: PortRange[];
  requireIdentityPorts: PortRange[];
  /** Annotation values that could not be used, for warnings ("<annotation>: <why>"). */
  problems: string[];
}

interface ContainerJson {
  ports?: Array<{ name?: string; containerPort?: number; protocol?: string }>;
  livenessProbe?: ProbeJson;
  readinessProbe?: ProbeJson;
  startupProbe?: ProbeJson;
}
interface ProbeJson {
  httpGet?: { path?: string; port?: number | string };
}

export function toPodWorkload(o: unknown): WorkloadRecord {
  const meta = objectMeta(o, 'Pod');
  const spec = (isObject((o as Json).spec) ? (o as Json).spec : {}) as Json;
  const containers = [
    ...arr(spec.containers, 'spec.containers'),
    ...arr(spec.initContainers, 'spec.initContainers'),
  ].filter(isObject) as ContainerJson[];
  const portNames: Record<string, number[]> = {};
  const probes: Record<number, string[]> = {};
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if ((p.protocol ?? 'TCP').toUpperCase() !== 'TCP' || !p.name || !validPort(p.containerPort)) continue;
      const list = (portNames[p.name] ??= []);
      if (!list.includes(p.containerPort)) list.push(p.containerPort);
    }
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      const get = probe?.httpGet;
      if (!get) continue;
      // A named probe port refers to a port of the same container.
      const port =
        typeof get.port === 'number'
          ? get.port
          : (c.ports ?? []).find(
              (p) => p.name?.toLowerCase() === String(get.port).toLowerCase() && (p.protocol ?? 'TCP') === 'TCP',
            )?.containerPort;
      if (!validPort(port)) continue;
      const path = (get.path || '/').split('?')[0] || '/';
      const list = (probes[port] ??= []);
      if (!list.includes(path)) list.push(path);
    }
  }
  for (const list of Object.values(probes)) list.sort();
  return {
    kind: 'pod',
    namespace: meta.namespace,
    name: meta.name,
    labels: meta.labels,
    portNames,
    probes,
    ...settings(meta.annotations),
  };
}

export function toExternalWorkload(o: unknown): WorkloadRecord {
  const meta = objectMeta(o, 'ExternalWorkload');
  const spec = (isObject((o as Json).spec) ? (o as Json).spec : {}) as Json;
  const portNames: Record<string, number[]> = {};
  for (const p of arr(spec.ports, 'spec.ports').filter(isObject) as Array<{
    name?: string;
    port?: number;
    protocol?: string;
  }>) {
    if ((p.protocol ?? 'TCP').toUpperCase() !== 'TCP' || !p.name || !validPort(p.port)) continue;
    portNames[p.name] = [p.port];
  }
  return {
    kind: 'externalworkload',
    namespace: meta.namespace,
    name: meta.name,
    labels: meta.labels,
    portNames,
    probes: {},
    ...settings(meta.annotations),
  };
}

function validPort(p: unknown): p is number {
  return typeof p === 'number' && Number.isInteger(p) && p >= 1 && p <= 65535;
}

function settings(
  a: Record<string, string>,
): Pick<WorkloadRecord, 'defaultPolicy' | 'opaquePorts' | 'requireIdentityPorts' | 'problems'> {
  const problems: string[] = [];
  const out: Pick<WorkloadRecord, 'defaultPolicy' | 'opaquePorts' | 'requireIdentityPorts' | 'problems'> = {
    requireIdentityPorts: [],
    problems,
  };
  const dp = a[WORKLOAD_ANNOTATIONS.defaultInboundPolicy];
  if (dp !== undefined) {
    const parsed = parseDefaultPolicy(dp);
    if (parsed) out.defaultPolicy = parsed;
    else
      problems.push(
        `${WORKLOAD_ANNOTATIONS.defaultInboundPolicy}: "${dp}" is not a default policy (all-unauthenticated, all-authenticated, cluster-unauthenticated, cluster-authenticated, deny, audit); the cluster default applies`,
      );
  }
  const ports = (key: string): PortRange[] | undefined => {
    const v = a[key];
    if (v === undefined) return undefined;
    try {
      return parsePortRanges(key, v);
    } catch {
      problems.push(`${key}: "${v}" is not a list of ports or ranges; ignored`);
      return undefined;
    }
  };
  const opaque = ports(WORKLOAD_ANNOTATIONS.opaquePorts);
  if (opaque) out.opaquePorts = opaque;
  out.requireIdentityPorts = ports(WORKLOAD_ANNOTATIONS.requireIdentityPorts) ?? [];
  return out;
}
