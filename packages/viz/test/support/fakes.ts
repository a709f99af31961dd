// A small cluster for the dashboard's browser test: the API server as far as viz reads it (VizKube),
// a Prometheus HTTP API on loopback that answers viz's queries with fixed series, and nothing else.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VizKube } from '../../src/kube-io.js';

export const SERVER_ID = 'server.demo.serviceaccount.identity.minimesh.cluster.local';
export const CLIENT_ID = 'client.demo.serviceaccount.identity.minimesh.cluster.local';

const pod = (deploy: string, ip: string) => ({
  metadata: {
    name: `${deploy}-h1-a`,
    namespace: 'demo',
    labels: { 'pod-template-hash': 'h1' },
    ownerReferences: [{ kind: 'ReplicaSet', name: `${deploy}-h1`, controller: true }],
  },
  spec: { serviceAccountName: deploy, containers: [{ name: 'app' }], initContainers: [{ name: 'minimesh-proxy' }] },
  status: { phase: 'Running', podIP: ip },
});
export const PODS = [pod('client', '127.0.0.5'), pod('server', '127.0.0.1')];
const UNMESHED = {
  ...pod('legacy', '127.0.0.9'),
  spec: { serviceAccountName: 'legacy', containers: [{ name: 'app' }] },
};
export const PROXY_METRICS = 'request_total{direction="inbound",tls="true"} 42\n';

export function fakeKube(opts: { tapBase?: string; vizInstalled?: boolean; prometheusUrl?: string } = {}): VizKube {
  const objects: Record<string, unknown> = {
    '/api/v1/namespaces': { items: [{ metadata: { name: 'default' } }, { metadata: { name: 'demo' } }] },
    '/api/v1/namespaces/demo': { metadata: { name: 'demo' } },
    '/api/v1/namespaces/default': { metadata: { name: 'default' } },
    '/apis/apps/v1/namespaces/demo/deployments': {
      items: [{ metadata: { name: 'client', namespace: 'demo' } }, { metadata: { name: 'server', namespace: 'demo' } }],
    },
    '/apis/apps/v1/namespaces/demo/deployments/server': {},
    '/apis/apps/v1/namespaces/demo/deployments/client': {},
    '/apis/apps/v1/namespaces/default/deployments': { items: [] },
    '/api/v1/pods': { items: PODS },
    '/api/v1/namespaces/demo/pods': { items: PODS },
    '/api/v1/namespaces/default/pods': { items: [] },
    '/api/v1/namespaces/demo/pods/server-h1-a': PODS[1],
    '/api/v1/namespaces/demo/pods/legacy-h1-a': UNMESHED,
    '/api/v1/namespaces/demo/pods/server-h1-a:4191/proxy/metrics': PROXY_METRICS,
  };
  if (opts.vizInstalled)
    objects['/api/v1/namespaces/minimesh/configmaps/minimesh-viz'] = {
      data: {
        prometheusUrl: opts.prometheusUrl ?? 'http://minimesh-prometheus.minimesh.svc.cluster.local:9090',
        tapUrl: 'http://minimesh-tap.minimesh.svc.cluster.local:8089',
        tapIdentity: 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local',
      },
    };
  return {
    async request<T>(_m: string, path: string) {
      const o = objects[path];
      return o === undefined
        ? { status: 404, body: { kind: 'Status', message: 'not found' } as T }
        : { status: 200, body: o as T };
    },
    async watch(path, _q, onEvent, wo) {
      const m = /\/services\/minimesh-tap:8089\/proxy(\/tap\?.*)$/.exec(path);
      if (!m || !opts.tapBase) throw new Error(`unexpected watch ${path}`);
      const res = await fetch(`${opts.tapBase}${m[1]}`, wo?.signal ? { signal: wo.signal } : {});
      if (res.status !== 200) {
        const body = (await res.json()) as { message: string };
        throw Object.assign(new Error(body.message), { statusCode: res.status, detail: body.message });
      }
      const reader = res.body!.getReader();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += Buffer.from(value).toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim()) {
            const ev = JSON.parse(line) as { type: string; object: unknown };
            onEvent(ev.type, ev.object);
          }
        }
      }
      return 'ended';
    },
  };
}

type Result = Array<{ metric: Record<string, string>; value?: [number, string]; values?: Array<[number, string]> }>;

/** Answers viz's PromQL by its shape: the demo's client calls server over mTLS, 95 % success. */
function answer(query: string, range?: { start: number; end: number; step: number }): Result {
  const server = { namespace: 'demo', deployment: 'server' };
  const at = (v: number): Pick<Result[number], 'value' | 'values'> => {
    if (!range) return { value: [0, String(v)] };
    const values: Array<[number, string]> = [];
    for (let t = range.start; t <= range.end; t += range.step) values.push([t, String(v * (1 + Math.sin(t / 60) / 4))]);
    return { values };
  };
  if (query.startsWith('count(response_total{direction="outbound"'))
    return [
      {
        metric: {
          ...{ namespace: 'demo', deployment: 'client' },
          dst_namespace: 'demo',
          dst_deployment: 'server',
          server_id: SERVER_ID,
          tls: 'true',
        },
        ...at(1),
      },
    ];
  if (query.startsWith('count(response_total{direction="inbound"'))
    return [{ metric: { ...server, client_id: CLIENT_ID, tls: 'true' }, ...at(1) }];
  // viz stat-outbound: client's route to server, split over server and server-canary.
  const route = {
    parent_namespace: 'demo',
    parent_name: 'server',
    parent_port: '8080',
    route_kind: 'HTTPRoute',
    route_namespace: 'demo',
    route_name: 'server-split',
  };
  const backend = (name: string) => ({ ...route, backend_namespace: 'demo', backend_name: name, backend_port: '8080' });
  if (query.includes('increase(outbound_http_route_request_statuses_total'))
    return [
      { metric: { ...route, http_status: '200' }, ...at(114) },
      { metric: { ...route, http_status: '503' }, ...at(6) },
    ];
  if (query.includes('increase(outbound_http_route_backend_response_statuses_total'))
    return [
      { metric: { ...backend('server'), http_status: '200' }, ...at(108) },
      { metric: { ...backend('server-canary'), http_status: '200' }, ...at(6) },
      { metric: { ...backend('server-canary'), http_status: '503' }, ...at(6) },
    ];
  if (query.startsWith('histogram_quantile(0.5, sum by (le, parent_kind, parent_namespace'))
    return query.includes('backend_name')
      ? [{ metric: backend('server'), ...at(0.004) }]
      : [{ metric: route, ...at(0.005) }];
  // viz authz: the server's Server, allowed by one AuthorizationPolicy, some refused, some rate limited.
  const srv = { srv_group: 'policy.minimesh.io', srv_kind: 'server', srv_name: 'server-http' };
  if (query.includes('increase(inbound_http_authz_allow_total'))
    return [
      {
        metric: { ...srv, route_name: 'default', authz_kind: 'authorizationpolicy', authz_name: 'client-only' },
        ...at(114),
      },
    ];
  if (query.includes('increase(inbound_http_authz_deny_total'))
    return [{ metric: { ...srv, route_name: 'default' }, ...at(12) }];
  if (query.includes('increase(inbound_http_local_ratelimit_total'))
    return [
      {
        metric: {
          ...srv,
          ratelimit_kind: 'HTTPLocalRateLimitPolicy',
          ratelimit_name: 'server-limit',
          ratelimit_scope: 'total',
        },
        ...at(30),
      },
    ];
  if (query.includes('increase(response_total'))
    return [
      { metric: { ...server, classification: 'success', tls: 'true' }, ...at(114) },
      { metric: { ...server, classification: 'failure', tls: 'true' }, ...at(6) },
    ];
  if (query.includes('classification="success"')) return [{ metric: server, ...at(0.95) }];
  if (query.startsWith('sum(rate(response_total')) return [{ metric: server, ...at(2) }];
  if (query.startsWith('histogram_quantile(0.5,')) return [{ metric: server, ...at(0.6) }];
  if (query.startsWith('histogram_quantile(0.95,')) return [{ metric: server, ...at(2.3) }];
  if (query.startsWith('histogram_quantile(0.99,')) return [{ metric: server, ...at(24.7) }];
  if (query.includes('tcp_open_connections')) return [{ metric: server, ...at(2) }];
  return [];
}

export async function startFakePrometheus(): Promise<{ url: string; queries: string[]; close(): Promise<void> }> {
  const queries: string[] = [];
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://p');
    const q = u.searchParams.get('query') ?? '';
    queries.push(q);
    const range = u.pathname === '/api/v1/query_range';
    const body = {
      status: 'success',
      data: {
        resultType: range ? 'matrix' : 'vector',
        result: answer(
          q,
          range
            ? {
                start: Number(u.searchParams.get('start')),
                end: Number(u.searchParams.get('end')),
                step: Number(u.searchParams.get('step')),
              }
            : undefined,
        ),
      },
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    queries,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
