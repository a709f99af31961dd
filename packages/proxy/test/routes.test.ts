// Outbound routes end to end on loopback, in-process: a proxy streams the policy of a Service from
// minimesh's real policy API (the @minimesh/policy index and gRPC service, fed Gateway API HTTPRoutes
// and a GRPCRoute as the controller would watch them) and endpoints from a fake destination, and
// applies every route field to real requests sent through its outbound port: weighted backends (each
// its own endpoints), weights changed while it runs, header edits, redirects, rewrites, response
// edits, mirrors, failure-injecting backends, gRPC matches and retries on gRPC codes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as h1request } from 'node:http';
import { connect as h2connect, createServer as createH2Server } from 'node:http2';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import { PolicyIndex, TEST_CLUSTER, createOutboundHandlers, createPolicyMetrics } from '@minimesh/policy';
import { outbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki } from './support/pki.js';

const NS = 'shop';
const svc = (name: string, port = 80) => `${name}.${NS}.svc.cluster.local:${port}`;
const WEB = svc('web');
const RPC = svc('rpc', 7070);
const GW = 'gateway.networking.k8s.io/v1';

let cp: FakeControlPlane;
let grpc: GrpcServer;
let index: PolicyIndex;
let proxy: RunningProxy;
const servers: Array<{ close(): unknown }> = [];
/** Requests each app saw (the mirror's copies among them). */
const seen: Record<string, number> = {};
/** Attempts the gRPC app saw per method. */
const grpcAttempts: Record<string, number> = {};
let clusterIp = 1;

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: NS,
  creationTimestamp: '2026-01-01T00:00:00Z',
  ...extra,
});

function service(name: string, port = 80, appProtocol?: string) {
  index.apply('Service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name),
    spec: {
      clusterIP: `10.96.8.${clusterIp++}`,
      ports: [{ name: 'p', port, ...(appProtocol ? { appProtocol } : {}) }],
    },
  });
}

async function app(name: string): Promise<void> {
  const s = h1Echo(name);
  s.prependListener('request', () => void (seen[name] = (seen[name] ?? 0) + 1));
  servers.push(s);
  cp.destination.set(svc(name), [{ ip: '127.0.0.1', port: await listen(s) }]);
}

const canary = (v1: number, v2: number) => ({
  apiVersion: GW,
  kind: 'HTTPRoute',
  metadata: meta('canary'),
  spec: {
    parentRefs: [{ group: '', kind: 'Service', name: 'web', port: 80 }],
    rules: [
      {
        backendRefs: [
          { name: 'web-v1', port: 80, weight: v1 },
          { name: 'web-v2', port: 80, weight: v2 },
        ],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [{ name: 'x-canary', value: 'yes' }] }],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { set: [{ name: 'x-set', value: 's' }], remove: ['x-drop'] },
          },
          { type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'x-resp', value: 'r' }] } },
          { type: 'RequestMirror', requestMirror: { backendRef: { name: 'shadow', port: 80 } } },
        ],
        backendRefs: [{ name: 'web-v2', port: 80 }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/old' } }],
        filters: [
          {
            type: 'RequestRedirect',
            requestRedirect: {
              hostname: 'example.org',
              statusCode: 301,
              path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' },
            },
          },
        ],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/api' } }],
        filters: [
          {
            type: 'URLRewrite',
            urlRewrite: { hostname: 'api.internal', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } },
          },
        ],
        backendRefs: [{ name: 'web-v1', port: 80 }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/broken' } }],
        backendRefs: [{ name: 'missing', port: 80 }],
      },
    ],
  },
});

type Reply = { status: number; app?: string; body: Record<string, unknown>; headers: Record<string, unknown> };

function get(path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve) => {
    const req = h1request(
      { host: '127.0.0.1', port: proxy.ports.outbound, path, agent: false, headers: { host: WEB, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          let body: Record<string, unknown> = {};
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            body = { text };
          }
          resolve({
            status: res.statusCode ?? 0,
            app: res.headers['x-app'] as string | undefined,
            body,
            headers: res.headers,
          });
        });
      },
    );
    req.on('error', (err) => resolve({ status: 0, body: { error: err.message }, headers: {} }));
    req.end();
  });
}

async function until<T>(f: () => Promise<T>, pred: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (pred(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A gRPC call through the proxy: its grpc-status. */
function grpcCall(method: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const s = h2connect(`http://127.0.0.1:${proxy.ports.outbound}`);
    const q = s.request({
      ':method': 'POST',
      ':path': method,
      ':authority': RPC,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    let status = -1;
    q.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']);
    });
    q.on('trailers', (t) => (status = Number(t['grpc-status'])));
    q.on('data', () => undefined);
    q.on('close', () => {
      s.close();
      resolve(status);
    });
    q.on('error', () => undefined);
    q.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

beforeAll(async () => {
  const pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  index = new PolicyIndex(TEST_CLUSTER);
  for (const name of ['web', 'web-v1', 'web-v2', 'shadow']) {
    service(name);
    await app(name);
  }
  // The gRPC app: /test.Echo/Flaky answers UNAVAILABLE twice, then OK; /test.Echo/Denied PERMISSION_DENIED.
  const rpc = createH2Server();
  rpc.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    const n = (grpcAttempts[path] = (grpcAttempts[path] ?? 0) + 1);
    stream.on('data', () => undefined);
    stream.on('end', () => {
      const code = path === '/test.Echo/Flaky' ? (n <= 2 ? 14 : 0) : path === '/test.Echo/Denied' ? 7 : 0;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': code }, { endStream: true });
    });
  });
  servers.push(rpc);
  service('rpc', 7070, 'kubernetes.io/h2c');
  cp.destination.set(RPC, [{ ip: '127.0.0.1', port: await listen(rpc), hint: 'h2' } as never]);
  index.apply('GatewayHTTPRoute', canary(90, 10));
  index.apply('GRPCRoute', {
    apiVersion: GW,
    kind: 'GRPCRoute',
    metadata: meta('rpc', { annotations: { 'retry.minimesh.io/grpc': 'unavailable', 'retry.minimesh.io/limit': '3' } }),
    spec: {
      parentRefs: [{ group: '', kind: 'Service', name: 'rpc', port: 7070 }],
      rules: [
        {
          matches: [{ method: { service: 'test.Echo', method: 'Flaky' } }],
          backendRefs: [{ name: 'rpc', port: 7070 }],
        },
        {
          matches: [{ method: { service: 'test.Echo', method: 'Gone' } }],
          backendRefs: [{ name: 'nothing', port: 7070 }],
        },
        { backendRefs: [{ name: 'rpc', port: 7070 }] },
      ],
    },
  });

  const logger = createLogger({ name: 'policy', level: 'silent', format: 'json' });
  grpc = new GrpcServer();
  grpc.addService(
    outbound.OutboundPoliciesService,
    createOutboundHandlers({ index, logger, metrics: createPolicyMetrics(new Registry()) }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  proxy = await startHarnessProxy({
    identity: `client.${NS}.serviceaccount.identity.minimesh.cluster.local`,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    env: {
      MINIMESH_PROXY_POLICY_SVC_ADDR: `127.0.0.1:${port}`,
      MINIMESH_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: NS, pod: 'client-1' }),
    },
  });
  await proxy.ready;
  // The first request starts the OutboundPolicies watch; the routes apply once the policy arrived.
  await until(
    () => get('/old/x'),
    (r) => r.status === 301,
  );
}, 30_000);

afterAll(async () => {
  await proxy?.shutdown(100);
  for (const s of servers) s.close();
  grpc?.forceShutdown();
  await cp?.close();
  removeTempDirs();
});

describe('outbound routes through the proxy', () => {
  it("splits by weight over each backend's own endpoints, never to the parent; a new weight applies as it streams", async () => {
    const count = async (n: number) => {
      const by: Record<string, number> = {};
      for (let i = 0; i < n; i++) {
        const r = await get('/split');
        by[r.app ?? `status ${r.status}`] = (by[r.app ?? `status ${r.status}`] ?? 0) + 1;
      }
      return by;
    };
    const first = await count(400);
    // 90/10 over 400: web-v2 ~ 40, sd 6; 99.99 % bounds.
    expect(Object.keys(first).sort()).toEqual(['web-v1', 'web-v2']);
    expect(first['web-v2']).toBeGreaterThanOrEqual(16);
    expect(first['web-v2']).toBeLessThanOrEqual(64);
    index.apply('GatewayHTTPRoute', canary(0, 100));
    await until(
      () => get('/split'),
      (r) => r.app === 'web-v2' && seen['web-v1'] !== undefined,
    );
    // Let in-flight policy updates land, then only web-v2 (weight 0 gets nothing).
    await new Promise((r) => setTimeout(r, 200));
    expect(await count(100)).toEqual({ 'web-v2': 100 });
    index.apply('GatewayHTTPRoute', canary(90, 10));
  }, 30_000);

  it('header match: request edits, response edits and a mirror copy to another backend', async () => {
    const before = seen.shadow ?? 0;
    const r = await get('/hdr', { 'x-canary': 'yes', 'x-drop': '1' });
    expect(r.app).toBe('web-v2');
    const headers = r.body.headers as Record<string, string>;
    expect(headers['x-set']).toBe('s');
    expect(headers['x-drop']).toBeUndefined();
    expect(r.headers['x-resp']).toBe('r');
    // The mirror's copy arrives on its own (fire-and-forget).
    await until(
      async () => seen.shadow ?? 0,
      (n) => n > before,
      3000,
    );
    expect(seen.shadow).toBe(before + 1);
  });

  it('a redirect is answered by the proxy with its Location; a rewrite changes host and path', async () => {
    const redirect = await get('/old/page?q=1');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('http://example.org/new/page?q=1');
    const rewritten = await get('/api/users?x=1');
    expect(rewritten.app).toBe('web-v1');
    expect(rewritten.body.url).toBe('/v2/users?x=1');
    expect((rewritten.body.headers as Record<string, string>).host).toBe('api.internal');
  });

  it('a backendRef to a Service that does not exist answers 500', async () => {
    const r = await get('/broken');
    expect(r.status).toBe(500);
  });

  it("route and backend metrics with Linkerd's names and labels show each side of the split", async () => {
    for (let i = 0; i < 20; i++) await get('/split');
    const reg = proxy.metrics.registry;
    const backends = await reg.getSingleMetricAsString('outbound_http_route_backend_response_statuses_total');
    const series = (name: string) =>
      new RegExp(
        `outbound_http_route_backend_response_statuses_total\\{parent_group="core",parent_kind="Service",parent_namespace="shop",parent_name="web",parent_port="80",route_group="gateway.networking.k8s.io",route_kind="HTTPRoute",route_namespace="shop",route_name="canary",backend_group="core",backend_kind="Service",backend_namespace="shop",backend_name="${name}",backend_port="80",http_status="200"\\} [1-9]`,
      );
    expect(backends).toMatch(series('web-v1'));
    expect(backends).toMatch(series('web-v2'));
    const statuses = await reg.getSingleMetricAsString('outbound_http_route_request_statuses_total');
    expect(statuses).toMatch(/route_name="canary",hostname="web.shop.svc.cluster.local",http_status="301"\} [1-9]/);
    expect(statuses).toMatch(/route_name="canary",hostname="web.shop.svc.cluster.local",http_status="500"\} [1-9]/);
    const duration = await reg.getSingleMetricAsString('outbound_http_route_request_duration_seconds');
    expect(duration).toMatch(
      /outbound_http_route_request_duration_seconds_bucket\{le="0.05",.*route_name="canary".*\} [1-9]/,
    );
    expect(await reg.getSingleMetricAsString('outbound_http_route_backend_requests_total')).toMatch(
      /backend_name="web-v2",backend_port="80"\} [1-9]/,
    );
  });

  it('GRPCRoute: retried on UNAVAILABLE until OK; a missing backend answers UNAVAILABLE; other methods go through', async () => {
    const gone = await until(
      () => grpcCall('/test.Echo/Gone'),
      (s) => s === 14,
    );
    expect(gone).toBe(14);
    grpcAttempts['/test.Echo/Flaky'] = 0;
    expect(await grpcCall('/test.Echo/Flaky')).toBe(0);
    expect(grpcAttempts['/test.Echo/Flaky']).toBe(3);
    expect(await grpcCall('/test.Echo/Denied')).toBe(7);
    expect(grpcAttempts['/test.Echo/Denied']).toBe(1);
    const grpc = await proxy.metrics.registry.getSingleMetricAsString('outbound_grpc_route_request_statuses_total');
    expect(grpc).toMatch(
      /route_kind="GRPCRoute",route_namespace="shop",route_name="rpc",hostname="rpc.shop.svc.cluster.local",grpc_status="OK"\} [1-9]/,
    );
    expect(grpc).toMatch(/grpc_status="PERMISSION_DENIED"\} 1/);
    expect(grpc).toMatch(/grpc_status="UNAVAILABLE"\} [1-9]/);
  });
});
