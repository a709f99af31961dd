// The opaque egress stage with fake policies and a fake next stage: a connection to an address outside
// the cluster networks whose opaque route forbids is reset before the next stage sees it and counted
// (proxy_errors_total via `error`, outbound_tcp_route_{open,close}_total); an allowed one goes on and
// its close is counted; in-cluster addresses and unanswered targets go on as before. A route's backends
// (a TCPRoute's backendRefs) are picked by weight and handed on; a backend an Invalid filter refuses
// refuses its share; a policy of the tls protocol sends the connection to the TLS stages.
import type { CompiledOpaqueRoute, CompiledOutboundPolicy, CompiledTransportBackend } from '@minimesh/policy/client';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { fakeSocket, targets, toAddr } from '../../test/support/stages.js';
import type { OutboundTarget } from '../policy/outbound-policies.js';
import { TcpRouteMetrics } from '../policy/tcp-route-metrics.js';
import type { Accept, Opaque, TlsConn } from '../targets.js';
import { pushEgressTcp } from './egress-tcp.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });

function policyOf(name: string, opaque: CompiledOpaqueRoute | undefined): CompiledOutboundPolicy {
  return {
    meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name },
    ref: { namespace: 'minimesh', section: '', port: 5432 },
    protocol: 'opaque',
    http1: [],
    http2: [],
    ...(opaque ? { opaque } : {}),
  };
}
const DENY = policyOf('partner', {
  meta: { group: '', kind: 'default', name: 'tcp-egress-deny' },
  refused: { error: 'forbidden', message: 'route tcp-egress-deny: TCP connection forbidden' },
});
const ALLOW = policyOf('open', { meta: { group: '', kind: 'default', name: 'tcp-egress-allow' } });

function setup(
  answers: Record<string, CompiledOutboundPolicy | undefined>,
  opts: { random?: () => number; known?: Record<string, CompiledOutboundPolicy> } = {},
) {
  const registry = new Registry();
  const tcpRouteMetrics = new TcpRouteMetrics(registry);
  const errors: string[] = [];
  const asked: string[] = [];
  const warned: string[] = [];
  const next = targets<Opaque<Accept>>();
  const tls = targets<TlsConn<Accept>>();
  const log = Object.assign(Object.create(logger) as typeof logger, {
    warn: (_f: unknown, msg: string) => void warned.push(msg),
  });
  const h = pushEgressTcp({
    policies: {
      isEgress: (ip) => !ip.startsWith('10.'),
      whenAnswered: (t: OutboundTarget) => {
        const key = t.kind === 'addr' ? t.ip : '';
        asked.push(key);
        return Promise.resolve(answers[key]);
      },
      tcpRouteMetrics,
      get: (t: OutboundTarget) => (t.kind === 'addr' ? opts.known?.[t.ip] : undefined),
    },
    waitMs: 500,
    error: (code) => errors.push(code),
    log,
    ...(opts.random ? { random: opts.random } : {}),
  })({ opaque: next.next, tls: tls.next });
  const conn = (ip: string) => {
    const socket = fakeSocket();
    const t: Opaque<Accept> = {
      kind: 'opaque',
      parent: { direction: 'outbound', socket, orig: toAddr(ip, 5432) },
      socket,
      prefix: Buffer.alloc(0),
    };
    return { t, socket, done: h(t) };
  };
  return { registry, errors, asked, next, tls, warned, conn };
}

const series = async (registry: Registry, name: string): Promise<Array<Record<string, string | number>> | undefined> =>
  (await registry.getSingleMetric(name)?.get())?.values.map((v) => ({ ...v.labels, value: v.value }));

describe('outbound egress (opaque TCP)', () => {
  it('a forbidding route resets the connection before anything is relayed, and counts it', async () => {
    const s = setup({ '203.0.113.9': DENY });
    const c = s.conn('203.0.113.9');
    await c.done;
    expect(s.next.seen).toEqual([]);
    expect(c.socket.destroyedBy).toEqual(['reset']);
    expect(s.errors).toEqual(['MINIMESH_PROXY_FORBIDDEN']);
    const labels = {
      parent_group: 'policy.minimesh.io',
      parent_kind: 'EgressNetwork',
      parent_namespace: 'minimesh',
      parent_name: 'partner',
      parent_port: '5432',
      route_kind: 'default',
      route_name: 'tcp-egress-deny',
      target_ip: '203.0.113.9',
      target_port: '5432',
    };
    expect(await series(s.registry, 'outbound_tcp_route_open_total')).toEqual([{ ...labels, value: 1 }]);
    expect(await series(s.registry, 'outbound_tcp_route_close_total')).toEqual([
      { ...labels, error: 'forbidden', value: 1 },
    ]);
  });

  it('an allowing route goes on; its close is counted once, without an error', async () => {
    const s = setup({ '203.0.113.7': ALLOW });
    const c = s.conn('203.0.113.7');
    await c.done;
    expect(s.next.seen).toEqual([c.t]);
    expect(c.socket.destroyedBy).toEqual([]);
    c.socket.destroy();
    await new Promise((r) => setImmediate(r));
    expect(
      (await series(s.registry, 'outbound_tcp_route_close_total'))?.map((v) => [v.route_name, v.error, v.value]),
    ).toEqual([['tcp-egress-allow', undefined, 1]]);
    expect(s.errors).toEqual([]);
  });

  it('in-cluster addresses are not asked about; no answer (or no opaque route) goes on as before', async () => {
    const s = setup({ '203.0.113.8': policyOf('no-opaque-route', undefined) });
    const a = s.conn('10.96.0.10');
    const b = s.conn('203.0.113.5');
    const c = s.conn('203.0.113.8');
    await Promise.all([a.done, b.done, c.done]);
    expect(s.next.seen).toEqual([a.t, b.t, c.t]);
    expect(s.asked).toEqual(['203.0.113.5', '203.0.113.8']);
    expect(await series(s.registry, 'outbound_tcp_route_open_total')).toEqual([]);
  });

  const fwd = (ip: string, port: number, weight: number): CompiledTransportBackend => ({
    kind: 'forward',
    weight,
    meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'partner' },
    addr: { ip, port },
  });
  const TCP_ROUTE = policyOf('partner', {
    meta: { group: 'gateway.networking.k8s.io', kind: 'TCPRoute', name: 'db' },
    ref: { namespace: 'minimesh', section: '', port: 0 },
    backends: [
      fwd('203.0.113.9', 5432, 1),
      fwd('127.0.0.1', 15432, 3),
      {
        kind: 'refused',
        weight: 1,
        meta: { group: '', kind: 'default', name: 'invalid' },
        refused: { error: 'invalid_backend', message: 'Service not found gone' },
      },
    ],
  });

  it("a TCPRoute's backends are picked by weight and handed on; an Invalid backend refuses its share", async () => {
    // Weights 1, 3, 1 over [0, 5): 0.1 → the first, 0.5 → the second, 0.9 → the refused one.
    for (const [r, want] of [
      [0.1, '203.0.113.9:5432'],
      [0.5, '127.0.0.1:15432'],
      [0.9, 'refused'],
    ] as const) {
      const s = setup({ '203.0.113.9': TCP_ROUTE }, { random: () => r });
      const c = s.conn('203.0.113.9');
      await c.done;
      if (want === 'refused') {
        expect(s.next.seen).toEqual([]);
        expect(c.socket.destroyedBy).toEqual(['reset']);
        expect(s.errors).toEqual(['MINIMESH_PROXY_INVALID_POLICY']);
        expect(s.warned).toEqual(['TCP connection refused, invalid route backend: Service not found gone']);
        expect(
          (await series(s.registry, 'outbound_tcp_route_close_total'))?.map((v) => [
            v.route_name,
            v.route_namespace,
            v.error,
          ]),
        ).toEqual([['db', 'minimesh', 'invalid_backend']]);
      } else {
        const b = s.next.seen[0]?.backend;
        expect(b?.kind === 'forward' && `${b.addr.ip}:${b.addr.port}`).toBe(want);
        expect(s.errors).toEqual([]);
      }
    }
  });

  it('every backend at weight 0 refuses the connection', async () => {
    const s = setup({
      '203.0.113.9': policyOf('zero', {
        meta: { group: '', kind: 'default', name: 'z' },
        backends: [fwd('203.0.113.9', 1, 0)],
      }),
    });
    const c = s.conn('203.0.113.9');
    await c.done;
    expect(s.next.seen).toEqual([]);
    expect(c.socket.destroyedBy).toEqual(['reset']);
  });

  it('a policy of the tls protocol sends the connection to the TLS stages (egress: awaited; in-cluster: once known)', async () => {
    const TLS: CompiledOutboundPolicy = { ...policyOf('partner', undefined), protocol: 'tls', tls: [] };
    const s = setup({ '203.0.113.9': TLS }, { known: { '10.96.0.20': TLS } });
    const a = s.conn('203.0.113.9');
    const b = s.conn('10.96.0.20');
    const c = s.conn('10.96.0.21');
    await Promise.all([a.done, b.done, c.done]);
    // The in-cluster one goes at once (its policy is known); the egress one after its answer.
    expect(s.tls.seen.map((t) => [t.parent.orig?.ip, t.policy])).toEqual([
      ['10.96.0.20', TLS],
      ['203.0.113.9', TLS],
    ]);
    expect(s.next.seen).toEqual([c.t]);
    expect(await series(s.registry, 'outbound_tcp_route_open_total')).toEqual([]);
  });
});
