// `minimesh authz` in pure form: for the pods of a workload, each port's Server (or default policy),
// its routes and who each authorization admits, from the same index the controller runs. Pods whose
// answers are identical are reported once.
import {
  describeAuthorization,
  describeInboundRoute,
  describeProtocol,
  describeRateLimit,
  describeServerRef,
} from './describe.js';
import { serverPorts, serverSelects } from './index/inbound.js';
import type { PolicyIndex } from './index/policy-index.js';
import type { InboundServer } from './model.js';

export interface PortReport {
  port: number;
  server: string;
  protocol: string;
  /** Route (with its matches) → what admits requests on it (its own authorizations, then the server's). */
  routes: Array<{ route: string; admits: string[] }>;
  /** What admits non-HTTP connections (opaque, TLS, undetected). */
  connections: string[];
  /** The Server's HTTP rate limit (HTTPLocalRateLimitPolicy), described; absent: none. */
  rateLimit?: string;
  notes: string[];
}

export interface AuthzReport {
  namespace: string;
  pods: string[];
  ports: PortReport[];
}

/** The ports worth reporting for a pod: its named container ports and every port a Server selects on it. */
export function reportPorts(index: PolicyIndex, namespace: string, pod: string): number[] {
  const w = index.workload('pod', namespace, pod);
  if (!w) return [];
  const ports = new Set<number>(Object.values(w.portNames).flat());
  for (const p of Object.keys(w.probes)) ports.add(Number(p));
  for (const s of index.store.inNamespace('Server', namespace))
    if (serverSelects(s, w)) for (const p of serverPorts(s, w)) ports.add(p);
  return [...ports].sort((a, b) => a - b);
}

function portReport(server: InboundServer, port: number, notes: string[]): PortReport {
  const serverAuthz = server.authorizations.map(describeAuthorization);
  const httpLike = server.protocol.kind !== 'opaque' && server.protocol.kind !== 'tls';
  return {
    port,
    server: describeServerRef(server),
    protocol: describeProtocol(server.protocol),
    routes: httpLike
      ? server.httpRoutes.map((r) => ({
          route: describeInboundRoute(r),
          admits: [...r.authorizations.map(describeAuthorization), ...serverAuthz],
        }))
      : [],
    connections: serverAuthz,
    ...(server.rateLimit && httpLike ? { rateLimit: describeRateLimit(server.rateLimit) } : {}),
    notes,
  };
}

/** The report for some pods of one namespace (extra ports are added to each pod's own). */
export function authzReport(
  index: PolicyIndex,
  namespace: string,
  pods: readonly string[],
  extraPorts: readonly number[] = [],
): AuthzReport[] {
  const groups = new Map<string, AuthzReport>();
  for (const pod of pods) {
    const ports = [...new Set([...reportPorts(index, namespace, pod), ...extraPorts])].sort((a, b) => a - b);
    const reports: PortReport[] = [];
    for (const port of ports) {
      const r = index.inbound('pod', namespace, pod, port);
      if (!r) continue;
      const notes = [
        ...r.conflicting.map(
          (s) => `Server ${s} also selects this port and is ignored for it (the oldest Server wins)`,
        ),
        ...r.ignored.map((i) => `${i.kind} ${i.namespace}/${i.name} has no effect: ${i.reason}`),
      ];
      reports.push(portReport(r.server, port, notes));
    }
    const key = JSON.stringify(reports);
    const g = groups.get(key);
    if (g) g.pods.push(pod);
    else groups.set(key, { namespace, pods: [pod], ports: reports });
  }
  return [...groups.values()];
}

/** The report as text, one block per group of pods. */
export function formatAuthzReport(reports: readonly AuthzReport[], invalid: readonly string[] = []): string {
  const out: string[] = [];
  for (const r of reports) {
    out.push(`${r.namespace}: ${r.pods.length === 1 ? 'pod' : 'pods'} ${r.pods.join(', ')}`);
    if (r.ports.length === 0) out.push('  (no ports: the pod declares none and no Server selects it)');
    for (const p of r.ports) {
      out.push(`  port ${p.port}: ${p.server}, ${p.protocol}`);
      if (p.rateLimit) out.push(`    rate limit: ${p.rateLimit}`);
      if (p.routes.length === 0) {
        out.push('    connections are admitted for:');
        out.push(...(p.connections.length ? p.connections.map((a) => `      ${a}`) : ['      nobody (closed)']));
      }
      for (const route of p.routes) {
        out.push(`    ${route.route}`);
        out.push(
          ...(route.admits.length ? route.admits.map((a) => `      admits ${a}`) : ['      admits nobody (403)']),
        );
      }
      for (const n of p.notes) out.push(`    note: ${n}`);
    }
  }
  if (invalid.length) {
    out.push('resources that cannot be used (malformed):');
    for (const i of invalid) out.push(`  ${i}`);
  }
  return `${out.join('\n')}\n`;
}
