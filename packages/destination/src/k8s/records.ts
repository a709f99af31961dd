// The small records the index keeps instead of whole Kubernetes objects: only the fields discovery
// needs. Pure conversions (to*Record) from the API's JSON; nothing here does I/O.
import { ANNOTATIONS, LABELS } from '@minimesh/config';

export interface ServicePortRecord {
  name: string;
  port: number;
  protocol: string;
  /** A number, or the name of a container port. */
  targetPort: number | string;
}

export interface ServiceRecord {
  namespace: string;
  name: string;
  uid: string;
  type: string;
  clusterIPs: string[];
  externalName?: string;
  ports: ServicePortRecord[];
  /** Absent for selector-less Services. */
  selector?: Record<string, string>;
  /** The raw config.minimesh.io/opaque-ports annotation. */
  opaquePorts?: string;
}

export interface SlicePortRecord {
  name: string;
  port: number;
}

export interface TargetRef {
  kind: string;
  namespace: string;
  name: string;
}

export interface SliceEndpointRecord {
  addresses: string[];
  ready: boolean;
  terminating: boolean;
  hostname?: string;
  nodeName?: string;
  zone?: string;
  targetRef?: TargetRef;
}

export interface SliceRecord {
  namespace: string;
  name: string;
  /** The kubernetes.io/service-name label. */
  serviceName: string;
  addressType: string;
  managedBy?: string;
  ports: SlicePortRecord[];
  endpoints: SliceEndpointRecord[];
}

export interface PodRecord {
  namespace: string;
  name: string;
  ips: string[];
  serviceAccount: string;
  nodeName?: string;
  /** The minimesh.io/control-plane-ns label: the control plane that meshes this pod. */
  controlPlaneNs?: string;
  /** The controller owner, e.g. { kind: 'ReplicaSet', name: 'web-5d8f7' }. */
  owner?: { kind: string; name: string };
  podTemplateHash?: string;
  opaquePorts?: string;
  hostNetwork: boolean;
  terminating: boolean;
}

export interface ExternalWorkloadPortRecord {
  name: string;
  port: number;
  protocol: string;
}

export interface ExternalWorkloadRecord {
  namespace: string;
  name: string;
  uid: string;
  labels: Record<string, string>;
  identity: string;
  serverName: string;
  ips: string[];
  ports: ExternalWorkloadPortRecord[];
  ready: boolean;
}

/** The label that names a slice's Service, and the slice manager label. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const strMap = (v: unknown): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(obj(v))) if (typeof val === 'string') out[k] = val;
  return out;
};

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function keyOfObject(o: unknown): string {
  const meta = obj(obj(o).metadata);
  return objectKey(str(meta.namespace), str(meta.name));
}

export function toServiceRecord(o: unknown): ServiceRecord {
  const meta = obj(obj(o).metadata);
  const spec = obj(obj(o).spec);
  const annotations = strMap(meta.annotations);
  const clusterIPs = arr(spec.clusterIPs)
    .map(str)
    .filter((ip) => ip !== '' && ip !== 'None');
  const single = str(spec.clusterIP);
  if (clusterIPs.length === 0 && single !== '' && single !== 'None') clusterIPs.push(single);
  const selector = strMap(spec.selector);
  const rec: ServiceRecord = {
    namespace: str(meta.namespace),
    name: str(meta.name),
    uid: str(meta.uid),
    type: str(spec.type) || 'ClusterIP',
    clusterIPs,
    ports: arr(spec.ports).map((p) => {
      const port = obj(p);
      const target = port.targetPort;
      const portNumber = typeof port.port === 'number' ? port.port : 0;
      return {
        name: str(port.name),
        port: portNumber,
        protocol: str(port.protocol) || 'TCP',
        targetPort:
          typeof target === 'number'
            ? target
            : typeof target === 'string' && target !== ''
              ? /^\d+$/.test(target)
                ? Number(target)
                : target
              : portNumber,
      };
    }),
  };
  if (str(spec.externalName) !== '') rec.externalName = str(spec.externalName);
  if (Object.keys(selector).length > 0) rec.selector = selector;
  if (annotations[ANNOTATIONS.opaquePorts] !== undefined) rec.opaquePorts = annotations[ANNOTATIONS.opaquePorts];
  return rec;
}

export function toSliceRecord(o: unknown): SliceRecord {
  const meta = obj(obj(o).metadata);
  const labels = strMap(meta.labels);
  const rec: SliceRecord = {
    namespace: str(meta.namespace),
    name: str(meta.name),
    serviceName: labels[SERVICE_NAME_LABEL] ?? '',
    addressType: str(obj(o).addressType) || 'IPv4',
    ports: arr(obj(o).ports).map((p) => ({
      name: str(obj(p).name),
      port: typeof obj(p).port === 'number' ? (obj(p).port as number) : 0,
    })),
    endpoints: arr(obj(o).endpoints).map((e) => {
      const ep = obj(e);
      const cond = obj(ep.conditions);
      const out: SliceEndpointRecord = {
        addresses: arr(ep.addresses).map(str).filter(Boolean),
        // The API's rule: a nil ready condition means ready (unknown state is taken as ready).
        ready: cond.ready !== false,
        terminating: cond.terminating === true,
      };
      if (str(ep.hostname) !== '') out.hostname = str(ep.hostname);
      if (str(ep.nodeName) !== '') out.nodeName = str(ep.nodeName);
      if (str(ep.zone) !== '') out.zone = str(ep.zone);
      const ref = obj(ep.targetRef);
      if (str(ref.kind) !== '')
        out.targetRef = {
          kind: str(ref.kind),
          namespace: str(ref.namespace) || str(meta.namespace),
          name: str(ref.name),
        };
      return out;
    }),
  };
  if (labels[MANAGED_BY_LABEL] !== undefined) rec.managedBy = labels[MANAGED_BY_LABEL];
  return rec;
}

export function toPodRecord(o: unknown): PodRecord {
  const meta = obj(obj(o).metadata);
  const spec = obj(obj(o).spec);
  const status = obj(obj(o).status);
  const labels = strMap(meta.labels);
  const annotations = strMap(meta.annotations);
  const ips = arr(status.podIPs)
    .map((p) => str(obj(p).ip))
    .filter(Boolean);
  if (ips.length === 0 && str(status.podIP) !== '') ips.push(str(status.podIP));
  const phase = str(status.phase);
  const rec: PodRecord = {
    namespace: str(meta.namespace),
    name: str(meta.name),
    ips,
    serviceAccount: str(spec.serviceAccountName) || 'default',
    hostNetwork: spec.hostNetwork === true,
    terminating: meta.deletionTimestamp != null || phase === 'Succeeded' || phase === 'Failed',
  };
  if (str(spec.nodeName) !== '') rec.nodeName = str(spec.nodeName);
  if (labels[LABELS.controlPlaneNs] !== undefined) rec.controlPlaneNs = labels[LABELS.controlPlaneNs];
  if (labels['pod-template-hash'] !== undefined) rec.podTemplateHash = labels['pod-template-hash'];
  if (annotations[ANNOTATIONS.opaquePorts] !== undefined) rec.opaquePorts = annotations[ANNOTATIONS.opaquePorts];
  const owner = arr(meta.ownerReferences)
    .map(obj)
    .find((r) => r.controller === true);
  if (owner) rec.owner = { kind: str(owner.kind), name: str(owner.name) };
  return rec;
}

export function toExternalWorkloadRecord(o: unknown): ExternalWorkloadRecord {
  const meta = obj(obj(o).metadata);
  const spec = obj(obj(o).spec);
  const tls = obj(spec.meshTLS);
  const conditions = arr(obj(obj(o).status).conditions).map(obj);
  const readyCondition = conditions.find((c) => str(c.type) === 'Ready');
  return {
    namespace: str(meta.namespace),
    name: str(meta.name),
    uid: str(meta.uid),
    labels: strMap(meta.labels),
    identity: str(tls.identity),
    serverName: str(tls.serverName),
    ips: arr(spec.workloadIPs)
      .map((w) => str(obj(w).ip))
      .filter(Boolean),
    ports: arr(spec.ports).map((p) => ({
      name: str(obj(p).name),
      port: typeof obj(p).port === 'number' ? (obj(p).port as number) : 0,
      protocol: str(obj(p).protocol) || 'TCP',
    })),
    // A workload without a Ready condition is taken as ready; an explicit False takes it out.
    ready: readyCondition === undefined || str(readyCondition.status) !== 'False',
  };
}
