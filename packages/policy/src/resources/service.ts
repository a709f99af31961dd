// The parts of a Service the outbound index needs: cluster IPs, ports (with appProtocol), and the
// opaque-ports, timeout, retry and failure-accrual annotations.
import { parsePortRanges, portInRanges, type PortRange } from '@minimesh/config';
import type { FailureAccrual, GrpcRouteRetry, RouteRetry, RouteTimeouts } from '../model.js';
import { parseFailureAccrualAnnotations } from './failure-accrual.js';
import { arr, isObject, objectMeta, type Json } from './fields.js';
import { parseGrpcRetryAnnotations, parseRetryAnnotations, parseTimeoutAnnotations } from './route-parts.js';
import { WORKLOAD_ANNOTATIONS } from './workload.js';

export interface ServicePortRecord {
  port: number;
  name?: string;
  appProtocol?: string;
}

export interface ServiceRecord {
  namespace: string;
  name: string;
  /** ClusterIPs (none for headless and ExternalName Services). */
  clusterIPs: string[];
  ports: ServicePortRecord[];
  opaquePorts?: PortRange[];
  timeouts: RouteTimeouts;
  retry?: RouteRetry;
  grpcRetry?: GrpcRouteRetry;
  /** Circuit breaking of its endpoints (balancer.linkerd.io/failure-accrual). */
  failureAccrual?: FailureAccrual;
  /** spec.type (ExternalName Services are no route parents). */
  type?: string;
  problems: string[];
}

export function toServiceRecord(o: unknown): ServiceRecord {
  const meta = objectMeta(o, 'Service');
  const spec = (isObject((o as Json).spec) ? (o as Json).spec : {}) as Json;
  const ips = new Set<string>();
  for (const ip of [spec.clusterIP, ...arr(spec.clusterIPs, 'spec.clusterIPs')])
    if (typeof ip === 'string' && ip !== '' && ip !== 'None') ips.add(ip);
  const ports = (arr(spec.ports, 'spec.ports').filter(isObject) as Array<Record<string, unknown>>)
    .filter((p) => (typeof p.protocol !== 'string' || p.protocol === 'TCP') && typeof p.port === 'number')
    .map((p) => ({
      port: p.port as number,
      ...(typeof p.name === 'string' && p.name ? { name: p.name } : {}),
      ...(typeof p.appProtocol === 'string' && p.appProtocol ? { appProtocol: p.appProtocol } : {}),
    }));
  const problems: string[] = [];
  const rec: ServiceRecord = {
    namespace: meta.namespace,
    name: meta.name,
    clusterIPs: [...ips],
    ports,
    timeouts: {},
    ...(typeof spec.type === 'string' ? { type: spec.type } : {}),
    problems,
  };
  const opaque = meta.annotations[WORKLOAD_ANNOTATIONS.opaquePorts];
  if (opaque !== undefined) {
    try {
      rec.opaquePorts = parsePortRanges(WORKLOAD_ANNOTATIONS.opaquePorts, opaque);
    } catch {
      problems.push(`${WORKLOAD_ANNOTATIONS.opaquePorts}: "${opaque}" is not a list of ports or ranges; ignored`);
    }
  }
  try {
    rec.timeouts = parseTimeoutAnnotations(meta.annotations);
  } catch (err) {
    problems.push(`${(err as Error).message}; ignored`);
  }
  try {
    const retry = parseRetryAnnotations(meta.annotations);
    if (retry) rec.retry = retry;
  } catch (err) {
    problems.push(`${(err as Error).message}; ignored`);
  }
  try {
    const grpcRetry = parseGrpcRetryAnnotations(meta.annotations);
    if (grpcRetry) rec.grpcRetry = grpcRetry;
  } catch (err) {
    // A bad limit or timeout was reported above already.
    const line = `${(err as Error).message}; ignored`;
    if (!problems.includes(line)) problems.push(line);
  }
  const accrual = parseFailureAccrualAnnotations(meta.annotations);
  if (accrual.accrual) rec.failureAccrual = accrual.accrual;
  problems.push(...accrual.problems);
  return rec;
}

/** The protocol a Service port declares (appProtocol first, then the opaque-ports annotation or defaults). */
export function serviceAppProtocol(
  svc: ServiceRecord,
  port: number,
  defaultOpaquePorts: readonly PortRange[],
): 'http1' | 'http2' | 'opaque' | undefined {
  const p = svc.ports.find((x) => x.port === port);
  const ap = p?.appProtocol?.toLowerCase();
  if (ap === 'http') return 'http1';
  if (ap === 'kubernetes.io/h2c') return 'http2';
  if (ap === 'minimesh.io/opaque' || ap === 'minimesh.io/tcp' || ap === 'linkerd.io/opaque' || ap === 'linkerd.io/tcp')
    return 'opaque';
  if (ap !== undefined) return undefined;
  return portInRanges(port, svc.opaquePorts ?? defaultOpaquePorts) ? 'opaque' : undefined;
}
