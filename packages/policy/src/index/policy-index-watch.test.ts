// Streams out of the index: one update per real change (none for no-op changes), the end of the
// stream when its workload or Service goes, re-lists (reset) that drop what is gone.
import { describe, expect, it, vi } from 'vitest';
import type { EgressAnswer, InboundServer, OutboundPolicy } from '../model.js';
import { TEST_CLUSTER } from '../testing.js';
import { PolicyIndex, type PolicyListener } from './policy-index.js';

const pod = (
  name: string,
  labels: Record<string, string> = { app: 'web' },
  annotations: Record<string, string> = {},
) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels, annotations },
  spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
});
const server = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'policy.minimesh.io/v1beta3',
  kind: 'Server',
  metadata: { name, namespace: 'shop' },
  spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', ...extra },
});
const service = (name: string, annotations: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'shop', annotations },
  spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
});

function recorder<T>() {
  const updates: T[] = [];
  const ends: string[] = [];
  const listener: PolicyListener<T> = { update: (v) => updates.push(v), end: (r) => ends.push(r) };
  return { updates, ends, listener };
}

describe('inbound watches', () => {
  it('sends one update per change of the answer and none for changes that do not alter it', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', pod('web-1'));
    const rec = recorder<InboundServer>();
    const sub = index.watchInbound('pod', 'shop', 'web-1', 8080, rec.listener);
    expect(sub?.current.ref).toEqual({ kind: 'default', name: 'all-unauthenticated' });

    index.apply('Server', server('web'));
    expect(rec.updates.map((u) => u.ref)).toEqual([{ kind: 'server', name: 'web' }]);
    // A Server in the same namespace that selects other pods changes nothing for this port.
    index.apply('Server', { ...server('other'), spec: { podSelector: { matchLabels: { app: 'db' } }, port: 5432 } });
    // The same Server applied again (a resync) changes nothing.
    index.apply('Server', server('web'));
    // Another pod's relabel changes nothing for this one.
    index.apply('Pod', pod('web-2'));
    expect(rec.updates).toHaveLength(1);

    index.apply('Server', server('web', { proxyProtocol: 'opaque' }));
    expect(rec.updates.map((u) => u.protocol.kind)).toEqual(['detect', 'opaque']);

    // The pod is relabeled out of the Server's selector: back to the default policy.
    index.apply('Pod', pod('web-1', { app: 'moved' }));
    expect(rec.updates.at(-1)?.ref).toEqual({ kind: 'default', name: 'all-unauthenticated' });
    // The pod annotation changes the default policy.
    index.apply('Pod', pod('web-1', { app: 'moved' }, { 'config.minimesh.io/default-inbound-policy': 'deny' }));
    expect(rec.updates.at(-1)?.ref).toEqual({ kind: 'default', name: 'deny' });
    expect(rec.updates.at(-1)?.authorizations).toEqual([]);
    sub?.close();
    index.apply('Server', server('web', { proxyProtocol: 'HTTP/2' }));
    expect(rec.updates).toHaveLength(4);
    expect(index.watchCounts()).toEqual({ inbound: 0, outbound: 0 });
  });

  it('is undefined for an unknown workload and ends when the workload is deleted or dropped by a re-list', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    expect(index.watchInbound('pod', 'shop', 'web-1', 8080, recorder<InboundServer>().listener)).toBeUndefined();
    index.apply('Pod', pod('web-1'));
    index.apply('Pod', pod('web-2'));
    const a = recorder<InboundServer>();
    const b = recorder<InboundServer>();
    index.watchInbound('pod', 'shop', 'web-1', 8080, a.listener);
    index.watchInbound('pod', 'shop', 'web-2', 8080, b.listener);
    index.delete('Pod', 'shop', 'web-1');
    expect(a.ends).toEqual(['pod shop/web-1 was deleted']);
    expect(b.ends).toEqual([]);
    index.reset('Pod', [pod('web-3')]);
    expect(b.ends).toEqual(['pod shop/web-2 was deleted']);
    expect(index.watchCounts().inbound).toBe(0);
  });

  it('keeps serving the other listeners when one throws', () => {
    const errors: unknown[] = [];
    const index = new PolicyIndex(TEST_CLUSTER, { onListenerError: (e) => errors.push(e) });
    index.apply('Pod', pod('web-1'));
    const ok = recorder<InboundServer>();
    index.watchInbound('pod', 'shop', 'web-1', 8080, {
      update: () => {
        throw new Error('broken stream');
      },
      end: () => undefined,
    });
    index.watchInbound('pod', 'shop', 'web-1', 8080, ok.listener);
    index.apply('Server', server('web'));
    expect(ok.updates).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('broken stream');
  });

  it('reports conflicts and ignored policies once, when they appear', () => {
    const diagnostics: string[] = [];
    const index = new PolicyIndex(TEST_CLUSTER, { onDiagnostic: (d) => diagnostics.push(d) });
    index.apply('Pod', pod('web-1'));
    index.watchInbound('pod', 'shop', 'web-1', 8080, recorder<InboundServer>().listener);
    index.apply('Server', {
      ...server('a'),
      metadata: { ...server('a').metadata, creationTimestamp: '2026-01-01T00:00:00Z' },
    });
    index.apply('Server', {
      ...server('b'),
      metadata: { ...server('b').metadata, creationTimestamp: '2026-01-02T00:00:00Z' },
    });
    index.apply('Pod', pod('web-2'));
    expect(diagnostics).toEqual([
      'Server a wins the port over b (oldest first, then by name); the others are ignored for it',
    ]);
  });
});

describe('outbound watches', () => {
  it('follows Service annotations and HTTPRoutes, and ends when the Service is deleted', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Service', service('web'));
    const rec = recorder<OutboundPolicy>();
    const sub = index.watchOutbound('shop', 'web', 80, 'shop', rec.listener);
    expect(sub?.current.httpRoutes).toEqual([]);
    index.apply('Service', service('web', { 'timeout.minimesh.io/request': '2s' }));
    expect(rec.updates.at(-1)?.timeouts).toEqual({ requestMs: 2000 });
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'r', namespace: 'shop' },
      spec: { parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }] },
    });
    expect(rec.updates.at(-1)?.httpRoutes.map((r) => r.ref)).toEqual([
      { kind: 'resource', group: 'policy.minimesh.io', resourceKind: 'HTTPRoute', name: 'r', namespace: 'shop' },
    ]);
    // A Pod change cannot alter outbound answers.
    index.apply('Pod', pod('web-1'));
    expect(rec.updates).toHaveLength(2);
    index.delete('Service', 'shop', 'web');
    expect(rec.ends).toEqual(['Service shop/web was deleted']);
  });
});

describe('which watches a change reaches', () => {
  const inNs = <T extends { metadata: Record<string, unknown> }>(o: T, namespace: string): T => ({
    ...o,
    metadata: { ...o.metadata, namespace },
  });

  it('a Server, AuthorizationPolicy or HTTPRoute reaches the watches of its own namespace', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', pod('web-1'));
    index.apply('Pod', inNs(pod('web-1'), 'other'));
    const shop = recorder<InboundServer>();
    const other = recorder<InboundServer>();
    index.watchInbound('pod', 'shop', 'web-1', 8080, shop.listener);
    index.watchInbound('pod', 'other', 'web-1', 8080, other.listener);
    index.apply('Server', server('web'));
    index.apply('Server', inNs(server('web', { proxyProtocol: 'HTTP/2' }), 'other'));
    expect(shop.updates.map((u) => u.protocol.kind)).toEqual(['detect']);
    expect(other.updates.map((u) => u.protocol.kind)).toEqual(['http2']);
    index.delete('Server', 'other', 'web');
    expect(other.updates.at(-1)?.ref).toEqual({ kind: 'default', name: 'all-unauthenticated' });
    expect(shop.updates).toHaveLength(1);
  });

  it('a pod event recomputes the watches of that pod only, in its namespace or any other', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Server', server('web'));
    const recs = new Map<string, ReturnType<typeof recorder<InboundServer>>>();
    for (const ns of ['shop', 'other'])
      for (const name of ['web-1', 'web-2', 'web-3']) {
        index.apply('Pod', inNs(pod(name), ns));
        const rec = recorder<InboundServer>();
        index.watchInbound('pod', ns, name, 8080, rec.listener);
        index.watchInbound('pod', ns, name, 9090, recorder<InboundServer>().listener);
        recs.set(`${ns}/${name}`, rec);
      }
    const inbound = vi.spyOn(index, 'inbound');
    const outbound = vi.spyOn(index, 'outbound');
    // A status-only update of one pod (what most pod events are): its two ports recomputed, nothing sent.
    index.apply('Pod', pod('web-2'));
    expect(inbound.mock.calls.map((c) => c.slice(0, 4))).toEqual([
      ['pod', 'shop', 'web-2', 8080],
      ['pod', 'shop', 'web-2', 9090],
    ]);
    expect([...recs.values()].flatMap((r) => r.updates)).toEqual([]);
    // Relabelled out of the Server: that pod's watch (alone) hears it.
    inbound.mockClear();
    index.apply('Pod', pod('web-2', { app: 'db' }));
    expect(inbound).toHaveBeenCalledTimes(2);
    expect([...recs].filter(([, r]) => r.updates.length > 0).map(([k]) => k)).toEqual(['shop/web-2']);
    // A new pod nobody watches yet, and the deletion of another: no other watch recomputed.
    inbound.mockClear();
    index.apply('Pod', pod('web-4'));
    expect(inbound).not.toHaveBeenCalled();
    index.delete('Pod', 'other', 'web-1');
    expect(inbound.mock.calls.map((c) => c.slice(0, 4))).toEqual([
      ['pod', 'other', 'web-1', 8080],
      ['pod', 'other', 'web-1', 9090],
    ]);
    expect(recs.get('other/web-1')?.ends).toEqual(['pod other/web-1 was deleted']);
    // The pod comes back under the same name: a new watch is followed like any other.
    index.apply('Pod', inNs(pod('web-1'), 'other'));
    const again = recorder<InboundServer>();
    index.watchInbound('pod', 'other', 'web-1', 8080, again.listener);
    index.apply(
      'Pod',
      inNs(pod('web-1', { app: 'web' }, { 'config.minimesh.io/default-inbound-policy': 'deny' }), 'other'),
    );
    expect(again.updates.map((u) => u.ref)).toEqual([{ kind: 'default', name: 'deny' }]);
    expect(outbound).not.toHaveBeenCalled();
    expect(index.watchCounts().inbound).toBe(11);
  });

  it('a Server change recomputes its namespace only; a route change, the outbound watches it may reach only', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    for (const ns of ['shop', 'other', 'third']) {
      index.apply('Service', inNs(service('web'), ns));
      for (const name of ['web-1', 'web-2']) {
        index.apply('Pod', inNs(pod(name), ns));
        index.watchInbound('pod', ns, name, 8080, recorder<InboundServer>().listener);
      }
      // the Service watched from its own namespace and from the next
      index.watchOutbound(ns, 'web', 80, ns, recorder<OutboundPolicy>().listener);
      index.watchOutbound(ns, 'web', 80, ns === 'shop' ? 'other' : 'shop', recorder<OutboundPolicy>().listener);
    }
    const inbound = vi.spyOn(index, 'inbound');
    const outbound = vi.spyOn(index, 'outbound');
    index.apply('Server', inNs(server('web'), 'other'));
    expect(inbound.mock.calls.map((c) => `${c[1]}/${c[2]}`)).toEqual(['other/web-1', 'other/web-2']);
    expect(outbound).not.toHaveBeenCalled();
    inbound.mockClear();
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'r', namespace: 'third' },
      spec: { parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }] },
    });
    // third's Service from third and from shop; nothing of shop's or other's Services (a policy.minimesh.io
    // HTTPRoute may attach to a Server as well: third's inbound watches are looked at too)
    expect(outbound.mock.calls.map((c) => `${c[0]}<${c[3]}`)).toEqual(['third<third', 'third<shop']);
    expect(inbound.mock.calls.map((c) => `${c[1]}/${c[2]}`)).toEqual(['third/web-1', 'third/web-2']);
  });

  it('a Server change recomputes the workloads it selects, before or after, and no other of its namespace', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    const recs = new Map<string, ReturnType<typeof recorder<InboundServer>>>();
    for (const [name, app] of [
      ['web-1', 'web'],
      ['web-2', 'web'],
      ['db-1', 'db'],
      ['cache-1', 'cache'],
    ] as const) {
      index.apply('Pod', pod(name, { app }));
      const rec = recorder<InboundServer>();
      index.watchInbound('pod', 'shop', name, 8080, rec.listener);
      recs.set(name, rec);
    }
    const inbound = vi.spyOn(index, 'inbound');
    const recomputed = () => inbound.mock.calls.map((c) => c[2]);
    index.apply('Server', server('web'));
    expect(recomputed()).toEqual(['web-1', 'web-2']);
    inbound.mockClear();
    index.apply('Server', server('web', { proxyProtocol: 'HTTP/2' }));
    expect(recomputed()).toEqual(['web-1', 'web-2']);
    inbound.mockClear();
    // its selector moves from web to db: both sets, web back to the default, db to the Server
    index.apply('Server', server('web', { podSelector: { matchLabels: { app: 'db' } } }));
    expect(recomputed()).toEqual(['web-1', 'web-2', 'db-1']);
    expect(recs.get('web-1')?.updates.at(-1)?.ref).toEqual({ kind: 'default', name: 'all-unauthenticated' });
    expect(recs.get('db-1')?.updates.at(-1)?.ref).toEqual({ kind: 'server', name: 'web' });
    inbound.mockClear();
    // made invalid: out of the index, what it selected recomputed
    index.apply('Server', server('web', { podSelector: 'app=db' }));
    expect(recomputed()).toEqual(['db-1']);
    expect(recs.get('db-1')?.updates.at(-1)?.ref).toEqual({ kind: 'default', name: 'all-unauthenticated' });
    index.apply('Server', server('web', { podSelector: { matchLabels: { app: 'db' } } }));
    inbound.mockClear();
    index.delete('Server', 'shop', 'web');
    expect(recomputed()).toEqual(['db-1']);
    expect(recs.get('cache-1')?.updates).toEqual([]);
  });

  it('an authentication reaches policies that name it from another namespace', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', pod('web-1'));
    index.apply('Server', server('web'));
    index.apply('AuthorizationPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'web', namespace: 'shop' },
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web' },
        requiredAuthenticationRefs: [
          { group: 'policy.minimesh.io', kind: 'MeshTLSAuthentication', name: 'mesh', namespace: 'security' },
        ],
      },
    });
    const rec = recorder<InboundServer>();
    const sub = index.watchInbound('pod', 'shop', 'web-1', 8080, rec.listener);
    const before = JSON.stringify(sub?.current.authorizations);
    index.apply('MeshTLSAuthentication', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'mesh', namespace: 'security' },
      spec: { identities: ['*'] },
    });
    expect(rec.updates).toHaveLength(1);
    expect(JSON.stringify(rec.updates[0]?.authorizations)).not.toBe(before);
  });

  it("a consumer HTTPRoute in the client's namespace reaches the outbound watch of a Service elsewhere", () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Service', service('web'));
    const rec = recorder<OutboundPolicy>();
    index.watchOutbound('shop', 'web', 80, 'frontend', rec.listener);
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'mine', namespace: 'frontend' },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'web', namespace: 'shop', port: 80 }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/mine' } }] }],
      },
    });
    expect(rec.updates).toHaveLength(1);
    // a route in a third namespace is neither the Service's nor the client's: no update
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'theirs', namespace: 'elsewhere' },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'web', namespace: 'shop', port: 80 }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/theirs' } }] }],
      },
    });
    expect(rec.updates).toHaveLength(1);
  });
});

describe('egress watches and TLSRoutes / TCPRoutes', () => {
  it('a TLSRoute or TCPRoute on the EgressNetwork reaches the watch of its port, and its deletion too', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('EgressNetwork', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'out', namespace: 'minimesh' },
      spec: { trafficPolicy: 'Deny' },
    });
    const rec = recorder<EgressAnswer>();
    const sub = index.watchEgress('203.0.113.7', 443, 'shop', rec.listener);
    const tls = (a: EgressAnswer | undefined) => (a?.kind === 'egress' ? a.policy.tlsRoutes.map((r) => r.ref) : []);
    expect(tls(sub.current)).toEqual([]);
    const route = (kind: 'TLSRoute' | 'TCPRoute', name: string) => ({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind,
      metadata: { name, namespace: 'minimesh' },
      spec: {
        parentRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'out', port: 443 }],
        ...(kind === 'TLSRoute' ? { hostnames: ['api.example'] } : {}),
        rules: [{}],
      },
    });
    index.apply('TLSRoute', route('TLSRoute', 'sni'));
    expect(tls(rec.updates.at(-1))).toEqual([
      {
        kind: 'resource',
        group: 'gateway.networking.k8s.io',
        resourceKind: 'TLSRoute',
        name: 'sni',
        namespace: 'minimesh',
      },
    ]);
    // A TCPRoute on the same port loses it to the TLSRoute: the answer does not change.
    index.apply('TCPRoute', route('TCPRoute', 'raw'));
    expect(rec.updates).toHaveLength(1);
    index.delete('TLSRoute', 'minimesh', 'sni');
    const last = rec.updates.at(-1);
    expect(tls(last)).toEqual([]);
    expect(
      last?.kind === 'egress' ? last.policy.tcpRoutes.map((r) => r.ref.kind === 'resource' && r.ref.name) : [],
    ).toEqual(['raw']);
  });
});
