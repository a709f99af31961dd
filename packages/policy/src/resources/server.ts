// Server (policy.minimesh.io): selects a port on pods (or ExternalWorkloads) in its namespace and says
// how its traffic is handled; AuthorizationPolicies and HTTPRoutes then attach to it.
import { isDefaultPolicy } from '../defaults.js';
import type { DefaultPolicyName, InboundProtocol } from '../model.js';
import { FieldError, obj, objectMeta, type ObjectMeta } from './fields.js';
import { parseLabelSelector, type LabelSelector } from './selector.js';

export const PROXY_PROTOCOLS = ['unknown', 'HTTP/1', 'HTTP/2', 'gRPC', 'opaque', 'TLS'] as const;
export type ProxyProtocolName = (typeof PROXY_PROTOCOLS)[number];

export interface ServerSpec {
  meta: ObjectMeta;
  selector: { kind: 'pod' | 'externalWorkload'; selector: LabelSelector };
  /** A port number, or the name of a container port. */
  port: number | string;
  proxyProtocol: ProxyProtocolName;
  /** What the Server admits besides its policies (v1beta3; absent: nothing, i.e. deny). */
  accessPolicy?: DefaultPolicyName;
}

export function parseServer(o: unknown): ServerSpec {
  const meta = objectMeta(o, 'Server');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const hasPod = spec.podSelector !== undefined && spec.podSelector !== null;
  const hasExt = spec.externalWorkloadSelector !== undefined && spec.externalWorkloadSelector !== null;
  if (hasPod === hasExt)
    throw new FieldError('spec', 'exactly one of podSelector and externalWorkloadSelector', {
      podSelector: spec.podSelector,
      externalWorkloadSelector: spec.externalWorkloadSelector,
    });
  const selector = hasPod
    ? { kind: 'pod' as const, selector: parseLabelSelector(spec.podSelector, 'spec.podSelector') }
    : {
        kind: 'externalWorkload' as const,
        selector: parseLabelSelector(spec.externalWorkloadSelector, 'spec.externalWorkloadSelector'),
      };
  const port = parsePortRef(spec.port, 'spec.port');
  const proxyProtocol = (spec.proxyProtocol ?? 'unknown') as ProxyProtocolName;
  if (!PROXY_PROTOCOLS.includes(proxyProtocol))
    throw new FieldError('spec.proxyProtocol', PROXY_PROTOCOLS.join(', '), spec.proxyProtocol);
  let accessPolicy: DefaultPolicyName | undefined;
  if (spec.accessPolicy !== undefined && spec.accessPolicy !== null) {
    if (typeof spec.accessPolicy !== 'string' || !isDefaultPolicy(spec.accessPolicy))
      throw new FieldError('spec.accessPolicy', 'a default policy name', spec.accessPolicy);
    accessPolicy = spec.accessPolicy;
  }
  return { meta, selector, port, proxyProtocol, ...(accessPolicy ? { accessPolicy } : {}) };
}

/** A port number (1-65535) or an IANA_SVC_NAME (a container port's name). */
export function parsePortRef(v: unknown, path: string): number | string {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535) return v;
  if (typeof v === 'string' && /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(v) && /[a-z]/.test(v)) return v;
  throw new FieldError(path, 'a port number (1-65535) or a port name (lower-case, at most 15 characters)', v);
}

export function toInboundProtocol(p: ProxyProtocolName, detectTimeoutMs: number): InboundProtocol {
  switch (p) {
    case 'unknown':
      return { kind: 'detect', timeoutMs: detectTimeoutMs };
    case 'HTTP/1':
      return { kind: 'http1' };
    case 'HTTP/2':
      return { kind: 'http2' };
    case 'gRPC':
      return { kind: 'grpc' };
    case 'opaque':
      return { kind: 'opaque' };
    case 'TLS':
      return { kind: 'tls' };
  }
}
