// The outbound opaque chain's egress, TLS and TCP route stages together, on loopback only, as
// outbound/index.ts assembles them (egress → {opaque | detect SNI → TLS route} → discover → balance →
// relay), with a fake policy controller answer for an "outside" original destination (203.0.113.10,
// never dialled: every backend here is a 127.0.0.1 listener the test makes):
//   - TLSRoute allowing allowed.example (Forward backend: a real TLS server on loopback serving two
//     names) → the handshake completes end to end and the server saw the SNI; the Deny default route
//     refuses denied.example with a reset, and the TLS server never sees that connection;
//   - a TLSRoute whose backendRef is a Service → balanced over the Service's endpoints (a loopback
//     listener destination would name);
//   - a TCPRoute whose backend is a Forward to another loopback port (an echo server) → relayed there.
// Metrics: outbound_tls_route_*, outbound_tcp_route_*, proxy_errors_total.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import type { CompiledOutboundPolicy, CompiledTlsRoute } from '@minimesh/policy/client';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointHealth } from '../src/balance/endpoint-health.js';
import type { Discovery } from '../src/destination/discovery.js';
import { stack } from '../src/layers.js';
import { ProxyMetrics } from '../src/metrics/metrics.js';
import { OutboundLabels } from '../src/metrics/traffic-labels.js';
import { pushBalance } from '../src/outbound/balance.js';
import { pushDetectSni } from '../src/outbound/detect-sni.js';
import { pushDiscoverTcp } from '../src/outbound/discover-tcp.js';
import { pushEgressTcp } from '../src/outbound/egress-tcp.js';
import { relayTcp } from '../src/outbound/relay.js';
import { pushTlsRoute } from '../src/outbound/tls-route.js';
import { TcpRouteMetrics, TlsRouteMetrics } from '../src/policy/tcp-route-metrics.js';
import { tcpStream } from '../src/tcp/stream.js';
import { toAddr, type Accept, type Endpoint, type Opaque } from '../src/targets.js';
import { discovered } from './support/stages.js';
import { ending, socketPair, until } from './support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
const OUTSIDE = '203.0.113.10';
const EGRESS = { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' };
const SVC = 'tls-proxy.shop.svc.cluster.local:443';

/** A self-signed certificate for the names (openssl, in a temporary directory). */
function certFor(names: string[]): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mm-tls-route-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'k.pem',
      '-out',
      'c.pem',
      '-days',
      '1',
      '-subj',
      `/CN=${names[0]}`,
      '-addext',
      `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
    ],
    { cwd: dir, stdio: 'pipe' },
  );
  return { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
}

const { key, cert } = certFor(['allowed.example', 'denied.example', 'svc.example']);
/** What each loopback server saw: "<server> <sni>" per TLS connection, "echo" per TCP one. */
const saw: string[] = [];
const tlsServer = (name: string) =>
  createTlsServer({ key, cert }, (s) => {
    saw.push(`${name} ${s.servername || '-'}`);
    s.end(`${name} says hello to ${s.servername}`);
  });
const [direct, behindSvc] = [tlsServer('outside'), tlsServer('svc-endpoint')];
const echo = createServer((s) => s.pipe(s));
const ports = { direct: 0, svc: 0, echo: 0 };

/** Listens on 127.0.0.1 for the whole file (loopback.ts's listen closes after each test). */
const listen = (server: ReturnType<typeof createServer>): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

beforeAll(async () => {
  ports.direct = await listen(direct);
  ports.svc = await listen(behindSvc);
  ports.echo = await listen(echo);
});
afterAll(() => {
  for (const s of [direct, behindSvc, echo]) s.close();
});

function policies(): { tls: CompiledOutboundPolicy; tcp: CompiledOutboundPolicy } {
  const route = (name: string, sni: string, backend: NonNullable<CompiledTlsRoute['backends']>[number]) => ({
    meta: { group: 'gateway.networking.k8s.io', kind: 'TLSRoute', name },
    ref: { namespace: 'shop', section: '', port: 0 },
    snis: [{ kind: 'exact' as const, name: sni }],
    backends: [backend],
  });
  const base = { meta: EGRESS, http1: [], http2: [] };
  return {
    tls: {
      ...base,
      ref: { namespace: 'shop', section: '', port: 443 },
      protocol: 'tls',
      tls: [
        route('allowed', 'allowed.example', {
          kind: 'forward',
          weight: 1,
          meta: EGRESS,
          addr: { ip: '127.0.0.1', port: ports.direct },
        }),
        route('via-service', 'svc.example', {
          kind: 'balancer',
          weight: 1,
          meta: { group: 'core', kind: 'Service', name: 'tls-proxy' },
          authority: SVC,
        }),
        {
          meta: { group: '', kind: 'default', name: 'tls-egress-deny' },
          snis: [],
          refused: { error: 'forbidden', message: 'route tls-egress-deny: TLS connection forbidden' },
          backends: [{ kind: 'forward', weight: 1, meta: EGRESS, addr: { ip: OUTSIDE, port: 443 } }],
        },
      ],
    },
    tcp: {
      ...base,
      ref: { namespace: 'shop', section: '', port: 9000 },
      protocol: 'opaque',
      opaque: {
        meta: { group: 'gateway.networking.k8s.io', kind: 'TCPRoute', name: 'echo' },
        ref: { namespace: 'shop', section: '', port: 0 },
        backends: [{ kind: 'forward', weight: 1, meta: EGRESS, addr: { ip: '127.0.0.1', port: ports.echo } }],
      },
    },
  };
}

/** The chain of outbound/index.ts from the egress stage on, with a fake controller answer and destination. */
function chain() {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const p = policies();
  const dialled: string[] = [];
  const connector = {
    meshIdentity: () => undefined,
    stream: (e: Endpoint): Socket => {
      dialled.push(e.key);
      // Never anything but loopback.
      if (e.ip !== '127.0.0.1') throw new Error(`test would dial ${e.key}`);
      return connect(e.port, e.ip);
    },
  };
  const endpoint = discovered('127.0.0.1', ports.svc);
  const discovery: Discovery = {
    httpNow: () => undefined,
    http: (host) =>
      host === SVC
        ? Promise.resolve({
            authority: SVC,
            policy: undefined,
            concrete: { kind: 'balanced', authority: SVC, set: { list: [endpoint] } },
          })
        : Promise.reject(new Error(`no service ${host}`)),
    tcp: () => Promise.reject(new Error('every connection here has a route backend')),
  };
  const tcp = stack(
    pushDiscoverTcp({ discovery, stream: (t) => tcpStream(t, 'outbound', metrics) }),
    pushBalance(new EndpointHealth(() => undefined)),
    relayTcp({ connector, labels: new OutboundLabels(), metrics, log }),
  );
  const refusals = { error: (code: string) => metrics.error('outbound', code), log };
  const handler = stack(
    pushEgressTcp({
      policies: {
        isEgress: (ip) => ip === OUTSIDE,
        whenAnswered: (t) => Promise.resolve(t.kind === 'addr' && t.port === 9000 ? p.tcp : p.tls),
        tcpRouteMetrics: new TcpRouteMetrics(registry),
      },
      waitMs: 500,
      ...refusals,
    }),
    {
      opaque: tcp,
      tls: stack(
        pushDetectSni({ timeoutMs: 2000, ...refusals }),
        pushTlsRoute({ metrics: new TlsRouteMetrics(registry), ...refusals }),
        tcp,
      ),
    },
  );
  /** A connection from the app to OUTSIDE:port, as the accept and detect stages hand it on. */
  const open = async (port: number, onConnect: (client: Socket) => void) => {
    const pair = await socketPair(onConnect);
    const t: Opaque<Accept> = {
      kind: 'opaque',
      parent: { direction: 'outbound', socket: pair.accepted, orig: toAddr(OUTSIDE, port) },
      socket: pair.accepted,
      prefix: Buffer.alloc(0),
    };
    void handler(t);
    return pair.client;
  };
  const lines = async (re: RegExp) =>
    (await registry.metrics()).split('\n').filter((l) => re.test(l) && !l.startsWith('#'));
  return { open, dialled, lines };
}

/** A TLS client over `raw` for `servername`: what the server said, or how the connection ended. */
function tlsHello(raw: Socket, servername: string): Promise<string> {
  return new Promise((resolve) => {
    const c = tlsConnect({ socket: raw, servername, ca: cert });
    let got = '';
    c.on('data', (d: Buffer) => (got += d.toString()));
    c.on('end', () => resolve(got));
    c.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
    c.on('close', () => resolve(got || 'closed'));
  });
}

describe('outbound egress routes on loopback: TLS by SNI, TCP with a backend', () => {
  it('the allowed SNI handshakes with the outside host; another is reset and never reaches it', async () => {
    const c = chain();
    saw.length = 0;
    let allowedRaw: Socket | undefined;
    const allowed = tlsHello(await c.open(443, (s) => (allowedRaw = s)), 'allowed.example');
    expect(await allowed).toBe('outside says hello to allowed.example');
    expect(allowedRaw).toBeDefined();
    const deniedRaw = await c.open(443, () => undefined);
    const denied = ending(deniedRaw);
    const deniedHello = tlsHello(deniedRaw, 'denied.example');
    expect(await deniedHello).toMatch(/^(error ECONNRESET|closed)$/);
    expect(await denied).toMatch(/^(ECONNRESET|close)$/);
    await until(() => saw.length >= 1, 200);
    expect(saw).toEqual(['outside allowed.example']);
    expect(c.dialled).toEqual([`127.0.0.1:${ports.direct}`]);
    const metrics = await c.lines(/outbound_tls_route_|proxy_errors_total/);
    console.log(`TLS egress on loopback, metrics:\n${metrics.join('\n')}`);
    expect(metrics).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^outbound_tls_route_open_total\{.*route_name="allowed",hostname="allowed.example"\} 1$/),
        expect.stringMatching(
          /^outbound_tls_route_close_total\{.*route_name="tls-egress-deny",hostname="denied.example",error="forbidden"\} 1$/,
        ),
        'proxy_errors_total{direction="outbound",error="MINIMESH_PROXY_FORBIDDEN"} 1',
      ]),
    );
  });

  it("a TLSRoute's Service backend: balanced over the Service's endpoints", async () => {
    const c = chain();
    saw.length = 0;
    expect(await tlsHello(await c.open(443, () => undefined), 'svc.example')).toBe(
      'svc-endpoint says hello to svc.example',
    );
    expect(saw).toEqual(['svc-endpoint svc.example']);
    expect(c.dialled).toEqual([`127.0.0.1:${ports.svc}`]);
  });

  it("a TCPRoute's Forward backend: relayed to that address (another loopback port)", async () => {
    const c = chain();
    const client = await c.open(9000, (s) => s.write('ping\r\n'));
    let got = '';
    client.on('data', (d: Buffer) => (got += d.toString()));
    await until(() => got.length >= 6);
    expect(got).toBe('ping\r\n');
    expect(c.dialled).toEqual([`127.0.0.1:${ports.echo}`]);
    client.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const metrics = await c.lines(/outbound_tcp_route_/);
    console.log(`TCP route on loopback, metrics:\n${metrics.join('\n')}`);
    expect(metrics).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^outbound_tcp_route_open_total\{.*route_kind="TCPRoute",route_namespace="shop",route_name="echo",target_ip="203.0.113.10",target_port="9000"\} 1$/,
        ),
      ]),
    );
  });
});
