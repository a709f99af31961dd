// Inbound authorization on loopback, in-process: a proxy streams its ports' policies from minimesh's real
// policy API (the @minimesh/policy index and gRPC services, fed the objects the controller would watch)
// and enforces them. Clients connect from 127.0.2.x: the proxy always admits 127.0.0.1 (the pod itself,
// as linkerd2-proxy does), so other loopback addresses stand for other pods. Meshed clients speak mTLS
// with a certificate of the test PKI, as a client proxy would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer as createH1Server, request as h1request } from 'node:http';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect, createServer as createTcpServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import {
  PolicyIndex,
  TEST_CLUSTER,
  createInboundHandlers,
  createOutboundHandlers,
  createPolicyMetrics,
} from '@minimesh/policy';
import { inbound, outbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import type { RunningProxy } from '../src/index.js';
import { bannerServer, grpcFrame, h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki, type TestPki } from './support/pki.js';

const NS = 'shop';
const id = (sa: string) => `${sa}.${NS}.serviceaccount.identity.minimesh.cluster.local`;
const WEB_ID = id('web');
const POD_IP = '127.0.0.2';
/** Connections to this address stand for connections to the pod's TCP port. */
const TCP_VIA = '127.0.0.4';

let pki: TestPki;
let cp: FakeControlPlane;
let grpc: GrpcServer;
let policyAddr = '';
let index: PolicyIndex;
let web: RunningProxy;
const extra: RunningProxy[] = [];
const servers: Array<{ close(): unknown }> = [];
const ports = { http: 0, tcp: 0, slow: 0 };
const SLOW = 'slow.shop.svc.cluster.local:80';
const certs: Record<string, { certPem: string; keyPem: string }> = {};

const meta = (kind: string, name: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: NS, creationTimestamp: '2026-01-01T00:00:00Z', ...extra },
  kind,
});

function webPod(defaultPolicy: string) {
  return {
    apiVersion: 'v1',
    ...meta('Pod', 'web-1', {
      labels: { app: 'web' },
      annotations: { 'config.minimesh.io/default-inbound-policy': defaultPolicy },
    }),
    spec: {
      containers: [
        {
          name: 'app',
          ports: [
            { name: 'http', containerPort: ports.http },
            { name: 'tcp', containerPort: ports.tcp },
          ],
          readinessProbe: { httpGet: { path: '/healthz', port: ports.http } },
        },
      ],
    },
  };
}

const webClientsPolicy = {
  apiVersion: 'policy.minimesh.io/v1alpha1',
  ...meta('AuthorizationPolicy', 'web-clients'),
  spec: {
    targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
    requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
  },
};

/** Plain HTTP/1 from a pod address other than the proxy's own. */
function plainGet(
  path: string,
  from: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = h1request(
      { host: POD_IP, port: web.ports.inbound, path, localAddress: from, agent: false, headers: { host: 'web' } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A meshed client: mTLS to the proxy's identity with the client's certificate, HTTP/2 over it. */
function meshSession(sa: string, from: string): ClientHttp2Session {
  const c = certs[sa];
  return h2connect(`https://${POD_IP}:${web.ports.inbound}`, {
    createConnection: () =>
      tlsConnect({
        socket: netConnect({ host: POD_IP, port: web.ports.inbound, localAddress: from }),
        servername: WEB_ID,
        cert: c?.certPem,
        key: c?.keyPem,
        ca: pki.anchorPem,
        ALPNProtocols: ['h2'],
        checkServerIdentity: () => undefined,
      }),
  });
}

async function meshRequest(
  sa: string,
  from: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ headers: Record<string, unknown>; trailers: Record<string, unknown>; body: string }> {
  const s = meshSession(sa, from);
  try {
    return await new Promise((resolve, reject) => {
      // A client proxy carries HTTP/1 requests over HTTP/2 and names their protocol (the app speaks HTTP/1).
      const q = s.request({ ':authority': 'web', ':path': '/', 'l5d-orig-proto': 'HTTP/1.1', ...headers });
      let h: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      let text = '';
      q.on('response', (x) => (h = x));
      q.on('trailers', (t) => (trailers = t));
      q.on('data', (d: Buffer) => (text += d.toString()));
      q.on('end', () => resolve({ headers: h, trailers, body: text }));
      q.on('error', reject);
      q.end(body);
    });
  } finally {
    s.close();
  }
}

/** Opens a TCP connection to the opaque port: what it reads before the close, or 'closed' if nothing. */
function tcpRead(from: string, sa?: string): Promise<string> {
  return new Promise((resolve) => {
    const c = sa ? certs[sa] : undefined;
    const sock: Socket = c
      ? tlsConnect({
          socket: netConnect({ host: TCP_VIA, port: web.ports.inbound, localAddress: from }),
          servername: WEB_ID,
          cert: c.certPem,
          key: c.keyPem,
          ca: pki.anchorPem,
          checkServerIdentity: () => undefined,
        })
      : netConnect({ host: TCP_VIA, port: web.ports.inbound, localAddress: from });
    let got = '';
    const done = (v: string) => {
      clearTimeout(t);
      sock.destroy();
      resolve(v);
    };
    const t = setTimeout(() => done(got || 'timeout'), 3000);
    sock.on(c ? 'secureConnect' : 'connect', () => sock.write('hello\r\n'));
    sock.on('data', (d: Buffer) => {
      got += d.toString();
      if (got.includes('hello')) done(got);
    });
    sock.on('error', () => done(got || 'closed'));
    sock.on('close', () => done(got || 'closed'));
  });
}

/** Polls until pred holds (policies arrive by stream), then returns the last value. */
async function until<T>(f: () => Promise<T>, pred: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (pred(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function metric(p: RunningProxy, name: string): Promise<string> {
  return p.metrics.registry.getSingleMetricAsString(name);
}

beforeAll(async () => {
  pki = await createTestPki();
  for (const sa of ['client', 'other']) certs[sa] = await pki.leaf(id(sa));
  cp = await startFakeControlPlane(pki);
  const app = h1Echo('web');
  const banner = bannerServer('220 hello from tcp\r\n');
  servers.push(app, banner);
  ports.http = await listen(app);
  ports.tcp = await listen(banner);
  // /delay/<ms>: answers after that long (the route timeout test's upstream).
  const slow = createH1Server((req, res) => {
    const ms = Number(
      /^\/delay\/(\d+)|[?&]delay=(\d+)/
        .exec(req.url ?? '')
        ?.slice(1)
        .find(Boolean) ?? 0,
    );
    const t = setTimeout(() => res.end(`slept ${ms}\n`), ms);
    res.on('close', () => clearTimeout(t));
  });
  servers.push(slow);
  ports.slow = await listen(slow);
  cp.destination.set(SLOW, [{ ip: '127.0.0.1', port: ports.slow }]);

  index = new PolicyIndex(TEST_CLUSTER);
  index.apply('Pod', webPod('deny'));
  index.apply('Server', {
    apiVersion: 'policy.minimesh.io/v1beta3',
    ...meta('Server', 'web-http'),
    spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http' },
  });
  index.apply('AuthorizationPolicy', webClientsPolicy);
  index.apply('Server', {
    apiVersion: 'policy.minimesh.io/v1beta3',
    ...meta('Server', 'web-tcp'),
    spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'tcp', proxyProtocol: 'opaque' },
  });
  index.apply('Service', {
    apiVersion: 'v1',
    ...meta('Service', 'slow'),
    spec: { clusterIP: '10.96.7.7', clusterIPs: ['10.96.7.7'], ports: [{ name: 'http', port: 80 }] },
  });
  index.apply('HTTPRoute', {
    apiVersion: 'policy.minimesh.io/v1beta3',
    ...meta('HTTPRoute', 'slow-timeouts'),
    spec: {
      parentRefs: [{ group: 'core', kind: 'Service', name: 'slow', port: 80 }],
      rules: [
        { matches: [{ path: { type: 'PathPrefix', value: '/delay' } }], timeouts: { request: '300ms' } },
        { matches: [{ path: { type: 'PathPrefix', value: '/' } }] },
      ],
    },
  });
  const logger = createLogger({ name: 'policy', level: 'silent', format: 'json' });
  const metrics = createPolicyMetrics(new Registry());
  grpc = new GrpcServer();
  grpc.addService(inbound.InboundServerPoliciesService, createInboundHandlers({ index, logger, metrics }));
  grpc.addService(outbound.OutboundPoliciesService, createOutboundHandlers({ index, logger, metrics }));
  const port = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  policyAddr = `127.0.0.1:${port}`;

  web = await startHarnessProxy({
    identity: WEB_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inboundHost: '0.0.0.0',
    inbound: (s: Socket) => {
      const la = (s.localAddress ?? '').replace('::ffff:', '');
      return la === POD_IP
        ? { ip: POD_IP, port: ports.http }
        : la === TCP_VIA
          ? { ip: POD_IP, port: ports.tcp }
          : undefined;
    },
    env: {
      MINIMESH_PROXY_POLICY_SVC_ADDR: policyAddr,
      MINIMESH_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: NS, pod: 'web-1' }),
      MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: 'all-unauthenticated',
      MINIMESH_PROXY_INBOUND_PORTS: `${ports.http},${ports.tcp}`,
    },
  });
  await web.ready;
  // The controller's answer replaces the configured default (all-unauthenticated) within moments.
  await until(
    () => plainGet('/', '127.0.2.9'),
    (r) => r.status === 403,
  );
}, 30_000);

afterAll(async () => {
  for (const p of [web, ...extra]) await p?.shutdown(100);
  for (const s of servers) s.close();
  grpc?.forceShutdown();
  await cp?.close();
  removeTempDirs();
});

describe('inbound authorization from the policy API', () => {
  it("the client's service account is admitted; the app sees its identity", async () => {
    const r = await meshRequest('client', '127.0.2.1', { ':path': '/orders' });
    expect(r.headers[':status']).toBe(200);
    expect(JSON.parse(r.body).headers['l5d-client-id']).toBe(id('client'));
    const m = await metric(web, 'inbound_http_authz_allow_total');
    expect(m).toMatch(
      /srv_kind="server",srv_name="web-http"[^}]*route_name="default"[^}]*authz_kind="authorizationpolicy",authz_name="web-clients"[^}]*tls="true"[^}]*client_id="client\.shop\.serviceaccount/,
    );
  });

  it('another identity and an unmeshed client get 403; gRPC gets PERMISSION_DENIED; the deny metric counts them', async () => {
    const other = await meshRequest('other', '127.0.2.2', {});
    expect(other.headers[':status']).toBe(403);
    expect(String(other.headers['x-minimesh-proxy-error'])).toMatch(
      /^MINIMESH_PROXY_UNAUTHORIZED: unauthorized request on route default of server web-http/,
    );
    const plain = await plainGet('/', '127.0.2.3');
    expect(plain.status).toBe(403);
    const g = await meshRequest(
      'other',
      '127.0.2.2',
      { ':method': 'POST', ':path': '/test.Echo/Unary', 'content-type': 'application/grpc' },
      grpcFrame(Buffer.from('x')),
    );
    expect(g.headers[':status']).toBe(200);
    expect(String(g.headers['grpc-status'] ?? g.trailers['grpc-status'])).toBe('7');
    const m = await metric(web, 'inbound_http_authz_deny_total');
    const other3 = m.match(/srv_name="web-http"[^}]*tls="true"[^}]*client_id="other\.shop[^"]*"\} (\d+)/);
    expect(Number(other3?.[1])).toBe(2);
    expect(m).toMatch(/srv_name="web-http"[^}]*tls="no_identity"[^}]*\} 2/);
  });

  it('the probe path stays open to the kubelet, unauthenticated, and only for GET', async () => {
    expect((await plainGet('/healthz', '127.0.2.4')).status).toBe(200);
    expect((await plainGet('/healthz/x', '127.0.2.4')).status).toBe(403);
  });

  it('the pod itself (127.0.0.1) is always admitted, as linkerd2-proxy does', async () => {
    expect((await plainGet('/', '127.0.0.1')).status).toBe(200);
  });

  it('an opaque Server with no authorization closes the connection; an AuthorizationPolicy streamed later opens it', async () => {
    expect(await tcpRead('127.0.2.5')).toBe('closed');
    expect(await tcpRead('127.0.2.5', 'client')).toBe('closed');
    const denied = await metric(web, 'inbound_tcp_authz_deny_total');
    expect(denied).toMatch(/srv_name="web-tcp"[^}]*tls="no_identity"\} 1/);
    expect(denied).toMatch(/srv_name="web-tcp"[^}]*tls="true",client_id="client\.shop[^}]*\} 1/);
    index.apply('AuthorizationPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      ...meta('AuthorizationPolicy', 'tcp-clients'),
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-tcp' },
        requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
      },
    });
    const opened = await until(
      () => tcpRead('127.0.2.5', 'client'),
      (v) => v !== 'closed',
    );
    expect(opened).toContain('220 hello from tcp');
    expect(await tcpRead('127.0.2.6')).toBe('closed');
    expect(await metric(web, 'inbound_tcp_authz_allow_total')).toMatch(
      /srv_name="web-tcp"[^}]*authz_name="tcp-clients"[^}]*client_id="client\.shop/,
    );
  });

  it('deleting the AuthorizationPolicy streams a deny to the running proxy', async () => {
    index.delete('AuthorizationPolicy', NS, 'web-clients');
    const r = await until(
      () => meshRequest('client', '127.0.2.1', {}),
      (v) => v.headers[':status'] === 403,
    );
    expect(r.headers[':status']).toBe(403);
    index.apply('AuthorizationPolicy', webClientsPolicy);
    const back = await until(
      () => meshRequest('client', '127.0.2.1', {}),
      (v) => v.headers[':status'] === 200,
    );
    expect(back.headers[':status']).toBe(200);
  });

  it('with an HTTPRoute on the Server: its matches, a redirect it answers itself, and 404 for what no route matches', async () => {
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      ...meta('HTTPRoute', 'orders'),
      spec: {
        parentRefs: [{ group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' }],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/orders' } }],
            filters: [
              { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: 'orders' }] } },
            ],
          },
          {
            matches: [{ path: { type: 'Exact', value: '/old' } }],
            filters: [
              {
                type: 'RequestRedirect',
                requestRedirect: { path: { type: 'ReplaceFullPath', replaceFullPath: '/orders' }, statusCode: 302 },
              },
            ],
          },
        ],
      },
    });
    const other = await until(
      () => meshRequest('client', '127.0.2.1', { ':path': '/other' }),
      (v) => v.headers[':status'] === 404,
    );
    expect(other.headers[':status']).toBe(404);
    expect(String(other.headers['x-minimesh-proxy-error'])).toMatch(/^MINIMESH_PROXY_ROUTE_NOT_FOUND/);
    const orders = await meshRequest('client', '127.0.2.1', { ':path': '/orders/7' });
    expect(orders.headers[':status']).toBe(200);
    expect(JSON.parse(orders.body).headers['x-route']).toBe('orders');
    const old = await meshRequest('client', '127.0.2.1', { ':path': '/old' });
    expect(old.headers[':status']).toBe(302);
    expect(old.headers.location).toBe('http://web/orders');
    // The Server's AuthorizationPolicy covers its routes: another identity is still denied.
    expect((await meshRequest('other', '127.0.2.2', { ':path': '/orders/7' })).headers[':status']).toBe(403);
    expect(await metric(web, 'inbound_http_route_not_found_total')).toMatch(
      /srv_name="web-http"[^}]*client_id="client\.shop[^}]*\} 1/,
    );
    // Route kinds are the resource's kind, as Linkerd's controller sends them (servers and policies: lower case).
    expect(await metric(web, 'inbound_http_authz_allow_total')).toMatch(/route_kind="HTTPRoute",route_name="orders"/);
    index.delete('HTTPRoute', NS, 'orders');
  });

  it('with the policy server down at start, a proxy serves its configured default and no more openly', async () => {
    const dead = await new Promise<number>((resolve) => {
      const t = createTcpServer();
      t.listen(0, '127.0.0.1', () => {
        const p = (t.address() as { port: number }).port;
        t.close(() => resolve(p));
      });
    });
    const start = (defaultPolicy: string) =>
      startHarnessProxy({
        identity: WEB_ID,
        anchorPem: pki.anchorPem,
        controlAddr: cp.addr,
        inboundHost: '0.0.0.0',
        inbound: () => ({ ip: POD_IP, port: ports.http }),
        env: {
          MINIMESH_PROXY_POLICY_SVC_ADDR: `127.0.0.1:${dead}`,
          MINIMESH_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: NS, pod: 'web-1' }),
          MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: defaultPolicy,
        },
      });
    const get = (p: RunningProxy, from: string) =>
      new Promise<number | string>((resolve) => {
        const req = h1request(
          { host: '127.0.0.1', port: p.ports.inbound, path: '/', localAddress: from, agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
        req.end();
      });
    const deny = await start('deny');
    const authn = await start('all-authenticated');
    extra.push(deny, authn);
    await Promise.all([deny.ready, authn.ready]);
    // Connections from 127.0.0.1 are the pod's own; dial from another loopback address. The deny default
    // is opaque with no authorization, as linkerd2-proxy's: the connection is closed, nothing is read.
    expect(await get(deny, '127.0.2.7')).toBe('ECONNRESET');
    expect(await metric(deny, 'inbound_tcp_authz_deny_total')).toMatch(/srv_kind="default",srv_name="deny"[^}]*\} 1/);
    expect(await get(authn, '127.0.2.7')).toBe(403);
    expect(await get(authn, '127.0.0.1')).toBe(200);
  });
});

/** HTTP/1 through the web proxy's outbound port to the slow Service: status and milliseconds taken. */
function outboundGet(path: string): Promise<{ status: number; ms: number; error?: string }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = h1request(
      { host: '127.0.0.1', port: web.ports.outbound, path, agent: false, headers: { host: SLOW } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: Date.now() - t0,
            error: res.headers['x-minimesh-proxy-error'] as string | undefined,
          }),
        );
      },
    );
    req.on('error', (err) => resolve({ status: 0, ms: Date.now() - t0, error: err.message }));
    req.end();
  });
}

describe('outbound routes from the policy API', () => {
  it("cuts a request at its HTTPRoute's request timeout (504) and leaves other requests alone", async () => {
    // The first request starts the OutboundPolicies watch; the route applies once the policy arrived.
    const cut = await until(
      () => outboundGet('/delay/1500'),
      (r) => r.status === 504,
      10_000,
    );
    expect(cut.status).toBe(504);
    expect(cut.error).toMatch(/^MINIMESH_PROXY_REQUEST_TIMEOUT: request timed out after 300 ms/);
    expect(cut.ms).toBeGreaterThanOrEqual(290);
    expect(cut.ms).toBeLessThan(1400);
    // Under the timeout: answered.
    expect((await outboundGet('/delay/50')).status).toBe(200);
    // A path no timeout rule matches: a 600 ms answer arrives whole.
    const whole = await outboundGet('/other?delay=600');
    expect(whole.status).toBe(200);
    expect(await metric(web, 'proxy_errors_total')).toMatch(
      /direction="outbound",error="MINIMESH_PROXY_REQUEST_TIMEOUT"\} [1-9]/,
    );
  }, 20_000);
});

describe('HTTP local rate limits from the policy API', () => {
  it('an HTTPLocalRateLimitPolicy on the Server: 429 with Retry-After past the limit, counted; deleting it lifts it', async () => {
    index.apply('AuthorizationPolicy', webClientsPolicy);
    index.apply('HTTPLocalRateLimitPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      ...meta('HTTPLocalRateLimitPolicy', 'web-limit'),
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
        identity: { requestsPerSecond: 2 },
      },
    });
    const status = async () => (await meshRequest('client', '127.0.2.1', { ':path': '/' })).headers[':status'];
    // The policy arrives by stream: from then on the third request in a second is refused.
    await until(status, (s) => s === 429);
    await new Promise((r) => setTimeout(r, 1100)); // the bucket is full again: 2 tokens
    // Ten at once: 2 tokens, plus 2 a second for as long as they take to arrive (a loaded machine).
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => meshRequest('client', '127.0.2.1', { ':path': '/' })),
    );
    const seconds = (performance.now() - t0) / 1000;
    const ok = answers.filter((a) => a.headers[':status'] === 200).length;
    const refused = answers.filter((a) => a.headers[':status'] === 429);
    expect(ok + refused.length).toBe(10);
    expect(ok).toBeGreaterThanOrEqual(2);
    expect(ok).toBeLessThanOrEqual(2 + Math.ceil(2 * seconds));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.headers['retry-after']).toBe('1');
    expect(refused[0]!.headers['x-minimesh-proxy-error']).toBe(
      'MINIMESH_PROXY_RATE_LIMITED: per-identity rate limit exceeded: 2rps',
    );
    expect(await metric(web, 'inbound_http_local_ratelimit_total')).toMatch(
      /srv_name="web-http"[^}]*ratelimit_group="policy\.minimesh\.io",ratelimit_kind="HTTPLocalRateLimitPolicy",ratelimit_name="web-limit",ratelimit_scope="identity"[^}]*client_id="client\.shop\.serviceaccount[^}]*\} [1-9]/,
    );
    // Another identity has its own bucket (it is refused by authorization, not by the limit: 403).
    expect((await meshRequest('other', '127.0.2.3', { ':path': '/' })).headers[':status']).toBe(403);
    index.delete('HTTPLocalRateLimitPolicy', NS, 'web-limit');
    await until(
      async () => {
        const got = [];
        for (let i = 0; i < 4; i++) got.push(await status());
        return got;
      },
      (got) => got.every((s) => s === 200),
    );
  }, 20_000);
});
