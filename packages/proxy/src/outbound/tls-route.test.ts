// The TLS route stage with a fake next stage: the SNI picks the most specific route (exact over
// wildcard, the default route without SNIs last); a Forbidden route (a Deny EgressNetwork's
// tls-egress-deny) or an Invalid one refuses the connection with a reset before anything is relayed,
// counted in outbound_tls_route_{open,close}_total (parent_*, route_*, hostname) and
// proxy_errors_total; an allowed one goes on with its backend and the buffered ClientHello; a name no
// route matches is refused and counted in no route's series.
import type { CompiledOutboundPolicy, CompiledTlsRoute, CompiledTransportBackend } from '@minimesh/policy/client';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { fakeSocket, targets, toAddr } from '../../test/support/stages.js';
import { TlsRouteMetrics } from '../policy/tcp-route-metrics.js';
import type { Accept, Opaque, Sni } from '../targets.js';
import { pushTlsRoute } from './tls-route.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });
const EGRESS = { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' };
const fwd = (port: number, weight = 1): CompiledTransportBackend => ({
  kind: 'forward',
  weight,
  meta: EGRESS,
  addr: { ip: '127.0.0.1', port },
});
const route = (name: string, snis: string[], over: Partial<CompiledTlsRoute> = {}): CompiledTlsRoute => ({
  meta: { group: 'gateway.networking.k8s.io', kind: 'TLSRoute', name },
  ref: { namespace: 'shop', section: '', port: 0 },
  snis: snis.map((s) =>
    s.startsWith('*.')
      ? { kind: 'suffix', reverseLabels: s.slice(2).split('.').reverse() }
      : { kind: 'exact', name: s },
  ),
  backends: [fwd(1443)],
  ...over,
});
const POLICY: CompiledOutboundPolicy = {
  meta: EGRESS,
  ref: { namespace: 'shop', section: '', port: 443 },
  protocol: 'tls',
  http1: [],
  http2: [],
  tls: [
    route('partner-wild', ['*.partner.example'], { backends: [fwd(2443)] }),
    route('partner-api', ['api.partner.example']),
    route('broken', ['broken.example'], {
      refused: { error: 'invalid_backend', message: 'Service not found gone' },
    }),
    {
      meta: { group: '', kind: 'default', name: 'tls-egress-deny' },
      snis: [],
      refused: { error: 'forbidden', message: 'route tls-egress-deny: TLS connection forbidden' },
      backends: [fwd(443)],
    },
  ],
};

function setup(policy = POLICY) {
  const registry = new Registry();
  const errors: string[] = [];
  const warned: string[] = [];
  const next = targets<Opaque<Accept>>();
  const log = Object.assign(Object.create(logger) as typeof logger, {
    warn: (_f: unknown, msg: string) => void warned.push(msg),
  });
  const h = pushTlsRoute({ metrics: new TlsRouteMetrics(registry), error: (c) => errors.push(c), log })(next.next);
  const conn = (sni: string) => {
    const socket = fakeSocket();
    const t: Sni<Accept> = {
      parent: { direction: 'outbound', socket, orig: toAddr('203.0.113.10', 443) },
      socket,
      prefix: Buffer.from('client hello'),
      policy,
      sni,
    };
    void h(t);
    return { t, socket };
  };
  return { registry, errors, warned, next, conn };
}

const series = async (registry: Registry, name: string): Promise<Array<Record<string, string | number>> | undefined> =>
  (await registry.getSingleMetric(name)?.get())?.values.map((v) => ({ ...v.labels, value: v.value }));

describe('outbound TLS route', () => {
  it.each([
    ['api.partner.example', 'partner-api', 1443],
    ['www.partner.example', 'partner-wild', 2443],
  ])('%s takes %s and goes on to its backend with the ClientHello', async (sni, name, port) => {
    const s = setup();
    const c = s.conn(sni);
    expect(s.next.seen.map((t) => [t.kind, t.socket, t.prefix.toString(), t.backend])).toEqual([
      ['opaque', c.socket, 'client hello', fwd(port)],
    ]);
    expect(c.socket.destroyedBy).toEqual([]);
    c.socket.destroy();
    await new Promise((r) => setImmediate(r));
    const labels = {
      parent_group: 'policy.minimesh.io',
      parent_kind: 'EgressNetwork',
      parent_namespace: 'shop',
      parent_name: 'outside',
      parent_port: '443',
      route_group: 'gateway.networking.k8s.io',
      route_kind: 'TLSRoute',
      route_namespace: 'shop',
      route_name: name,
      hostname: sni,
    };
    expect(await series(s.registry, 'outbound_tls_route_open_total')).toEqual([{ ...labels, value: 1 }]);
    // error="" is left out, as every empty label of this proxy's series.
    expect(await series(s.registry, 'outbound_tls_route_close_total')).toEqual([{ ...labels, value: 1 }]);
  });

  it('a name only the default route matches is forbidden: reset before anything is relayed, counted', async () => {
    const s = setup();
    const c = s.conn('Other.Example');
    expect(s.next.seen).toEqual([]);
    expect(c.socket.destroyedBy).toEqual(['reset']);
    expect(s.errors).toEqual(['MINIMESH_PROXY_FORBIDDEN']);
    expect(await series(s.registry, 'outbound_tls_route_close_total')).toEqual([
      {
        parent_group: 'policy.minimesh.io',
        parent_kind: 'EgressNetwork',
        parent_namespace: 'shop',
        parent_name: 'outside',
        parent_port: '443',
        route_kind: 'default',
        route_name: 'tls-egress-deny',
        hostname: 'other.example',
        error: 'forbidden',
        value: 1,
      },
    ]);
  });

  it('an Invalid route is refused and logged at warn, counted as invalid_backend', async () => {
    const s = setup();
    const c = s.conn('broken.example');
    expect(c.socket.destroyedBy).toEqual(['reset']);
    expect(s.errors).toEqual(['MINIMESH_PROXY_INVALID_POLICY']);
    expect(s.warned).toEqual(['TLS connection refused, invalid route backend: Service not found gone']);
    expect((await series(s.registry, 'outbound_tls_route_close_total'))?.map((v) => v.error)).toEqual([
      'invalid_backend',
    ]);
  });

  it('no route matches (no default route): refused, counted in no route series', async () => {
    const s = setup({ ...POLICY, tls: POLICY.tls!.slice(0, 2) });
    const c = s.conn('other.example');
    expect(c.socket.destroyedBy).toEqual(['reset']);
    expect(s.errors).toEqual(['MINIMESH_PROXY_ROUTE_NOT_FOUND']);
    expect(await series(s.registry, 'outbound_tls_route_open_total')).toEqual([]);
  });
});
