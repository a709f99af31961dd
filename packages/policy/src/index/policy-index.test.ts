// Table-driven tests of the policy index from Kubernetes YAML fixtures (fixtures/*.yaml). Each
// fixture applies objects, then checks answers (described with the same one-liners `minimesh authz`
// prints) and the route statuses the leader would write, then runs steps that apply/delete/reset
// objects (or change the cluster default) and checks again. A check lists only the fields it cares about.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ClusterInfo } from '../cluster-info.js';
import {
  describeAuthorization,
  describeGrpcRetry,
  describeInboundRoute,
  describeOutboundGrpcRoute,
  describeOutboundL4Route,
  describeOutboundRoute,
  describeProtocol,
  describeRetry,
  describeRouteRef,
  describeServerRef,
  describeTimeouts,
} from '../describe.js';
import type { DefaultPolicyName, EgressPolicy, InboundServer, OutboundPolicy } from '../model.js';
import { egressStatusUpdates } from '../status/egress-status.js';
import { routeStatusUpdates, type RouteParentStatus } from '../status/route-status.js';
import { PolicyIndex } from './policy-index.js';
import { isRouteKind, type IndexedKind, type RouteKind } from './store.js';
import { TEST_CLUSTER } from '../testing.js';

interface InboundExpect {
  server?: string;
  protocol?: string;
  authorizations?: string[];
  routes?: string[];
  routeAuthorizations?: Record<string, string[]>;
  routeFilters?: Record<string, string[]>;
  conflicting?: string[];
  ignored?: string[];
}
interface OutboundExpect {
  authority?: string;
  appProtocol?: string;
  routes?: string[];
  grpcRoutes?: string[];
  tlsRoutes?: string[];
  tcpRoutes?: string[];
  serviceDefaults?: string;
}
interface EgressExpect {
  /** "<ns>/<name> <Allow|Deny>" */
  network?: string;
  opaque?: boolean;
  routes?: string[];
  grpcRoutes?: string[];
  tlsRoutes?: string[];
  tcpRoutes?: string[];
}
type Check =
  /** The status.parents minimesh would write for a route ("<Kind> <ns>/<name>"), one line per parent; [] none. */
  | { status: string; expect: string[] | 'unchanged' }
  | { inbound: { pod: string; port: number }; expect: InboundExpect | 'not found' }
  | { outbound: { service: string; port: number; from: string }; expect: OutboundExpect | 'not found' }
  | { lookup: { ip: string; port: number }; expect: string }
  /** What a client in `from` is told about ip:port outside the cluster networks. */
  | { egress: { ip: string; port: number; from: string }; expect: EgressExpect | 'fallback' }
  /** The status.conditions minimesh would write for an EgressNetwork ("<ns>/<name>"), one line each. */
  | { egressStatus: string; expect: string[] | 'unchanged' }
  | { invalid: string[] };
interface Step {
  name: string;
  cluster?: Partial<ClusterInfo> & { defaultPolicy?: DefaultPolicyName };
  apply?: unknown[];
  delete?: Array<{ kind: IndexedKind; namespace: string; name: string }>;
  checks: Check[];
}
interface Fixture {
  name: string;
  objects: unknown[];
  checks: Check[];
  steps?: Step[];
}

const dir = fileURLToPath(new URL('./fixtures/', import.meta.url));
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => [f, parse(readFileSync(dir + f, 'utf8')) as Fixture] as const);

function kindOf(o: unknown): IndexedKind {
  const { kind, apiVersion } = o as { kind: IndexedKind; apiVersion?: string };
  return kind === 'HTTPRoute' && apiVersion?.startsWith('gateway.networking.k8s.io/') ? 'GatewayHTTPRoute' : kind;
}

/** "Service shop/web:80: Accepted=True Accepted; ResolvedRefs=False BackendNotFound (<message>)" */
function describeParentStatus(p: RouteParentStatus): string {
  const r = p.parentRef;
  const parent = `${r.kind ?? 'Gateway'} ${r.namespace ? `${r.namespace}/` : ''}${r.name}${r.port ? `:${r.port}` : ''}${r.sectionName ? `#${r.sectionName}` : ''}`;
  const conds = p.conditions.map((c) => `${c.type}=${c.status} ${c.reason}${c.message ? ` (${c.message})` : ''}`);
  return `${parent}: ${conds.join('; ')}`;
}

function load(objects: readonly unknown[], cluster: ClusterInfo): PolicyIndex {
  const index = new PolicyIndex(cluster);
  for (const o of objects) index.apply(kindOf(o), o);
  return index;
}

function summarizeInbound(s: InboundServer, extra: { conflicting: string[]; ignored: string[] }) {
  const routeName = (r: InboundServer['httpRoutes'][number]) =>
    describeRouteRef(r.ref).replace(/^default route /, 'default route ');
  return {
    server: describeServerRef(s),
    protocol: describeProtocol(s.protocol),
    authorizations: s.authorizations.map(describeAuthorization),
    routes: s.httpRoutes.map(describeInboundRoute),
    routeAuthorizations: Object.fromEntries(
      s.httpRoutes.map((r) => [routeName(r), r.authorizations.map(describeAuthorization)]),
    ),
    routeFilters: Object.fromEntries(
      s.httpRoutes.map((r) => [routeName(r), r.rules.flatMap((x) => x.filters.map((f) => f.kind))]),
    ),
    ...extra,
  };
}

function summarizeOutbound(p: OutboundPolicy) {
  return {
    authority: p.service.authority,
    appProtocol: p.appProtocol ?? 'detect',
    routes: p.httpRoutes.flatMap((r) => describeOutboundRoute(p, r)),
    tlsRoutes: p.tlsRoutes.map((r) => describeOutboundL4Route(r, p.service.authority)),
    tcpRoutes: p.tcpRoutes.map((r) => describeOutboundL4Route(r, p.service.authority)),
    grpcRoutes: p.grpcRoutes.flatMap((r) => describeOutboundGrpcRoute(p, r)),
    serviceDefaults: [
      describeTimeouts(p.timeouts),
      p.retry ? describeRetry(p.retry) : '',
      p.grpcRetry ? `grpc ${describeGrpcRetry(p.grpcRetry)}` : '',
    ]
      .filter(Boolean)
      .join('; '),
  };
}

function summarizeEgress(e: EgressPolicy) {
  // The rules' backends are described against the original destination (what a rule without backendRefs forwards to).
  const as: OutboundPolicy = {
    service: { namespace: e.egress.namespace, name: e.egress.name, port: e.egress.port, authority: 'original-dst' },
    httpRoutes: e.httpRoutes,
    grpcRoutes: e.grpcRoutes,
    tlsRoutes: e.tlsRoutes,
    tcpRoutes: e.tcpRoutes,
    timeouts: {},
  };
  return {
    network: `${e.egress.namespace}/${e.egress.name} ${e.egress.trafficPolicy}`,
    opaque: e.opaque,
    routes: e.httpRoutes.flatMap((r) => describeOutboundRoute(as, r)),
    grpcRoutes: e.grpcRoutes.flatMap((r) => describeOutboundGrpcRoute(as, r)),
    tlsRoutes: e.tlsRoutes.map((r) => describeOutboundL4Route(r, 'original-dst')),
    tcpRoutes: e.tcpRoutes.map((r) => describeOutboundL4Route(r, 'original-dst')),
  };
}

function pick<T extends object>(actual: T, wanted: object): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(wanted)) {
    const v = (actual as Record<string, unknown>)[k];
    const w = (wanted as Record<string, unknown>)[k];
    // For maps keyed by route, compare only the routes the fixture names.
    out[k] = v && w && typeof w === 'object' && !Array.isArray(w) ? pick(v as object, w as object) : v;
  }
  return out as Partial<T>;
}

function runCheck(index: PolicyIndex, c: Check): void {
  if ('status' in c) {
    const [kindText = '', id = ''] = c.status.split(' ');
    const kind = (kindText === 'HTTPRoute.gateway.networking.k8s.io' ? 'GatewayHTTPRoute' : kindText) as RouteKind;
    expect(isRouteKind(kind), `${kindText} is a route kind`).toBe(true);
    const [ns = '', name = ''] = id.split('/');
    const u = routeStatusUpdates(index.store, kind, '2026-01-01T00:00:00Z').find(
      (x) => x.namespace === ns && x.name === name,
    );
    if (c.expect === 'unchanged') expect(u, `${c.status}: no write`).toBeUndefined();
    else expect(u?.ours.map(describeParentStatus) ?? [], c.status).toEqual(c.expect);
    return;
  }
  if ('egressStatus' in c) {
    const [ns = '', name = ''] = c.egressStatus.split('/');
    const u = egressStatusUpdates(index.store, '2026-01-01T00:00:00Z').find(
      (x) => x.namespace === ns && x.name === name,
    );
    if (c.expect === 'unchanged') expect(u, `${c.egressStatus}: no write`).toBeUndefined();
    else
      expect(
        u?.ours.map((x) => `${x.type}=${x.status} ${x.reason}${x.message ? ` (${x.message})` : ''}`) ?? [],
        c.egressStatus,
      ).toEqual(c.expect);
    return;
  }
  if ('egress' in c) {
    const { ip, port, from } = c.egress;
    const a = index.egress(ip, port, from);
    const what = `${ip}:${port} from ${from}`;
    if (c.expect === 'fallback') {
      expect(a.kind, what).toBe('fallback');
      return;
    }
    expect(a.kind, what).toBe('egress');
    if (a.kind === 'egress') expect(pick(summarizeEgress(a.policy), c.expect), what).toEqual(c.expect);
    return;
  }
  if ('inbound' in c) {
    const [ns = '', name = ''] = c.inbound.pod.split('/');
    const r = index.inbound('pod', ns, name, c.inbound.port);
    if (c.expect === 'not found') {
      expect(r, `${c.inbound.pod}:${c.inbound.port}`).toBeUndefined();
      return;
    }
    expect(r, `${c.inbound.pod} is indexed`).toBeDefined();
    const summary = summarizeInbound(r!.server, {
      conflicting: r!.conflicting,
      ignored: r!.ignored.map((i) => `${i.kind} ${i.namespace}/${i.name} is ignored: ${i.reason}`),
    });
    expect(pick(summary, c.expect), `${c.inbound.pod}:${c.inbound.port}`).toEqual(c.expect);
  } else if ('outbound' in c) {
    const [ns = '', name = ''] = c.outbound.service.split('/');
    const p = index.outbound(ns, name, c.outbound.port, c.outbound.from);
    if (c.expect === 'not found') {
      expect(p).toBeUndefined();
      return;
    }
    expect(p, `${c.outbound.service}:${c.outbound.port}`).toBeDefined();
    expect(
      pick(summarizeOutbound(p!), c.expect),
      `${c.outbound.service}:${c.outbound.port} from ${c.outbound.from}`,
    ).toEqual(c.expect);
  } else if ('lookup' in c) {
    const hit = index.lookupIp(c.lookup.ip, c.lookup.port);
    const text = hit ? `${hit.namespace}/${hit.name}${hit.portDefined ? '' : ' (port not defined)'}` : 'not found';
    expect(text).toBe(c.expect);
  } else {
    // Each expected problem is the start of one actual message (which goes on with ", got <value>").
    const actual = index.store.invalid().map((p) => p.message);
    expect(actual.length, actual.join('\n')).toBe(c.invalid.length);
    for (const want of c.invalid)
      expect(
        actual.some((a) => a.startsWith(want)),
        `${want}\nin:\n${actual.join('\n')}`,
      ).toBe(true);
  }
}

describe('policy index fixtures', () => {
  it.each(fixtures)('%s', (_file, fx) => {
    let cluster = { ...TEST_CLUSTER };
    let index = load(fx.objects, cluster);
    for (const c of fx.checks) runCheck(index, c);
    let objects = [...fx.objects];
    for (const step of fx.steps ?? []) {
      if (step.cluster) {
        // The cluster default is a flag: a changed one means a new index fed the same objects.
        cluster = { ...cluster, ...step.cluster };
        index = load(objects, cluster);
      }
      for (const o of step.apply ?? []) {
        index.apply(kindOf(o), o);
        objects.push(o);
      }
      for (const d of step.delete ?? []) {
        index.delete(d.kind, d.namespace, d.name);
        objects = objects.filter((o) => {
          const m = (o as { kind: string; metadata: { namespace: string; name: string } }).metadata;
          return !(kindOf(o) === d.kind && m.namespace === d.namespace && m.name === d.name);
        });
      }
      for (const c of step.checks) runCheck(index, c);
    }
  });
});
