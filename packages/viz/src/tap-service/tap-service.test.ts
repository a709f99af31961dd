// The tap service against a fake API server (VizKube) and real gRPC tap servers on loopback: the
// records it streams, the refusals it reports, the 400/404 answers; and streamTap reading it the way
// the CLI does.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as GrpcServer, ServerCredentials, status, type ServerWritableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tap, toTcpAddress } from '@minimesh/proto';
import { streamTap } from '../api.js';
import type { VizKube } from '../kube-io.js';
import type { TapRecord } from '../tap-record.js';
import { createGrpcDialer } from './dial.js';
import { createTapService, describeTapFailure, parseTapQuery } from './tap-service.js';

const pod = (name: string, ip: string, meshed: boolean, deploy = 'server') => ({
  metadata: {
    name,
    namespace: 'demo',
    labels: { 'pod-template-hash': 'h1' },
    ownerReferences: [{ kind: 'ReplicaSet', name: `${deploy}-h1`, controller: true }],
  },
  spec: {
    serviceAccountName: deploy,
    containers: [{ name: 'app' }],
    initContainers: meshed ? [{ name: 'minimesh-proxy' }] : [],
  },
  status: { phase: 'Running', podIP: ip },
});
const PODS = [
  pod('server-h1-a', '127.0.0.1', true),
  pod('server-h1-b', '127.0.0.2', true),
  pod('client-h1-a', '10.23.0.5', true, 'client'),
  pod('plain-h1-a', '127.0.0.3', false, 'plain'),
];

/** The API server, as far as the tap service reads it. */
function fakeKube(tapBase?: string): VizKube {
  const objects: Record<string, unknown> = {
    '/api/v1/namespaces/demo': { metadata: { name: 'demo' } },
    '/apis/apps/v1/namespaces/demo/deployments/server': {},
    '/apis/apps/v1/namespaces/demo/deployments/plain': {},
    '/apis/apps/v1/namespaces/demo/deployments/client': {},
    '/api/v1/pods': { items: PODS },
    '/api/v1/namespaces/demo/pods': { items: PODS },
  };
  return {
    async request<T>(_m: string, path: string) {
      const o = objects[path];
      return o === undefined
        ? { status: 404, body: { kind: 'Status', message: 'not found' } as T }
        : { status: 200, body: o as T };
    },
    // The API server's service proxy, reduced to what streamTap needs: GET the tap service, read lines.
    async watch(path, _q, onEvent) {
      const m = /\/services\/minimesh-tap:8089\/proxy(\/tap\?.*)$/.exec(path);
      if (!m || !tapBase) throw new Error(`unexpected watch ${path}`);
      const res = await fetch(`${tapBase}${m[1]}`);
      if (res.status !== 200) {
        const body = (await res.json()) as { message: string };
        throw Object.assign(new Error(body.message), { statusCode: res.status, detail: body.message });
      }
      for (const l of (await res.text()).split('\n')) {
        if (l.trim() === '') continue;
        const ev = JSON.parse(l) as { type: string; object: unknown };
        onEvent(ev.type, ev.object);
      }
      return 'ended';
    },
  };
}

const CLIENT_ID = 'client.demo.serviceaccount.identity.minimesh.cluster.local';
const id = (stream: bigint) => ({ base: 9, stream });
function events(n: number): tap.TapEvent[] {
  const out: tap.TapEvent[] = [];
  for (let i = 0; i < n; i++) {
    const base = {
      source: toTcpAddress('10.23.0.5', 40000 + i),
      sourceMeta: { labels: { tls: 'true', client_id: CLIENT_ID } },
      destination: toTcpAddress('127.0.0.1', 8080),
      proxyDirection: tap.TapEvent_ProxyDirection.INBOUND,
    };
    out.push({
      ...base,
      event: {
        $case: 'http',
        value: {
          event: {
            $case: 'requestInit',
            value: {
              id: id(BigInt(i)),
              authority: 'server',
              path: `/p${i}`,
              method: { type: { $case: 'registered', value: 0 } },
            },
          },
        },
      },
    });
    out.push({
      ...base,
      event: {
        $case: 'http',
        value: {
          event: {
            $case: 'responseInit',
            value: { id: id(BigInt(i)), httpStatus: 200, sinceRequestInit: { seconds: 0n, nanos: 2_000_000 } },
          },
        },
      },
    });
    out.push({
      ...base,
      event: {
        $case: 'http',
        value: {
          event: {
            $case: 'responseEnd',
            value: { id: id(BigInt(i)), responseBytes: 5n, sinceRequestInit: { seconds: 0n, nanos: 3_000_000 } },
          },
        },
      },
    });
  }
  return out;
}

// Two "proxies": one tap server on 127.0.0.1 that answers, one on 127.0.0.2 that refuses.
let grpcServers: GrpcServer[] = [];
let tapPort = 0;
const observed: tap.ObserveRequest[] = [];
let http: Server;
let tapBase = '';

beforeAll(async () => {
  const serve = (host: string, impl: (call: ServerWritableStream<tap.ObserveRequest, tap.TapEvent>) => void) =>
    new Promise<number>((resolve, reject) => {
      const s = new GrpcServer();
      s.addService(tap.TapService, { observe: impl });
      s.bindAsync(`${host}:${tapPort}`, ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : (grpcServers.push(s), resolve(port)),
      );
    });
  tapPort = await serve('127.0.0.1', (call) => {
    observed.push(call.request);
    for (const ev of events(Math.min(2, call.request.limit))) call.write(ev);
    call.end();
  });
  await serve('127.0.0.2', (call) =>
    call.emit('error', {
      code: status.PERMISSION_DENIED,
      details: 'client identity default.demo.serviceaccount.identity.minimesh.cluster.local is not the tap service',
    }),
  );
  const kube = fakeKube();
  const handler = createTapService({
    kube,
    dial: createGrpcDialer({ port: tapPort }),
    controlPlaneNamespace: 'minimesh',
    trustDomain: 'cluster.local',
    maxLimit: 1000,
  });
  http = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  tapBase = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => http?.close(r));
  for (const s of grpcServers) s.forceShutdown();
  grpcServers = [];
});

const lines = async (qs: string) => {
  const res = await fetch(`${tapBase}/tap?${qs}`);
  return {
    status: res.status,
    lines: (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; object: Record<string, unknown> }),
  };
};

describe('the tap service', () => {
  it('taps every meshed pod of the workload and streams records, naming the refusal of the other', async () => {
    const r = await lines('namespace=demo&kind=deployment&name=server&limit=2&path=/p');
    expect(r.status).toBe(200);
    expect(r.lines[0]).toEqual({ type: 'BOOKMARK', object: { pods: ['demo/server-h1-a', 'demo/server-h1-b'] } });
    const records = r.lines.filter((l) => l.type === 'ADDED').map((l) => l.object as unknown as TapRecord);
    expect(records).toHaveLength(6);
    expect(records[0]).toMatchObject({
      id: '9:0',
      direction: 'inbound',
      pod: 'demo/server-h1-a',
      type: 'requestInit',
      path: '/p0',
      tls: 'true',
      source: { ip: '10.23.0.5', identity: CLIENT_ID, labels: { pod: 'client-h1-a', deployment: 'client' } },
      destination: {
        identity: 'server.demo.serviceaccount.identity.minimesh.cluster.local',
        labels: { deployment: 'server' },
      },
    });
    const errors = r.lines.filter((l) => l.type === 'ERROR');
    expect(errors).toEqual([
      {
        type: 'ERROR',
        object: {
          pod: 'demo/server-h1-b',
          message:
            'pod demo/server-h1-b: the proxy refused tap (PERMISSION_DENIED: client identity default.demo.serviceaccount.identity.minimesh.cluster.local is not the tap service)',
        },
      },
    ]);
    // What the proxy was asked: the limit and the path prefix.
    expect(observed.at(-1)).toMatchObject({ limit: 2, match: { match: { $case: 'all' } } });
  });

  it('answers 404 for an unknown workload, a workload without meshed pods, and 400 for bad filters', async () => {
    expect(await lines('namespace=demo&kind=deployment&name=nope&limit=1')).toMatchObject({ status: 404 });
    const plain = await fetch(`${tapBase}/tap?namespace=demo&kind=deployment&name=plain&limit=1`);
    expect(plain.status).toBe(404);
    expect(((await plain.json()) as { message: string }).message).toBe(
      'deployment "plain" in namespace "demo" has no meshed pods (1 running without a minimesh-proxy container)',
    );
    const bad = await fetch(`${tapBase}/tap?namespace=demo&kind=deployment&name=server&limit=5000`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toBe(
      "limit 5000 is over this tap service's maximum of 1000",
    );
    expect((await fetch(`${tapBase}/tap?namespace=demo&kind=service&limit=1`)).status).toBe(400);
    expect((await fetch(`${tapBase}/nope`)).status).toBe(404);
  });

  it('streamTap (the CLI side): records, warnings, and one line for a workload that is not there', async () => {
    const kube = fakeKube(tapBase);
    const got: TapRecord[] = [];
    const warnings: string[] = [];
    await streamTap(
      kube,
      'http://minimesh-tap.minimesh.svc.cluster.local:8089',
      { resource: { kind: 'deployment', name: 'server', namespace: 'demo' }, namespace: 'demo', limit: 1 },
      { onRecord: (r) => got.push(r), onWarning: (w) => warnings.push(w) },
    );
    expect(got.map((r) => r.type)).toEqual(['requestInit', 'responseInit', 'responseEnd']);
    expect(warnings).toHaveLength(1);
    await expect(
      streamTap(
        kube,
        'http://minimesh-tap.minimesh.svc.cluster.local:8089',
        { resource: { kind: 'deployment', name: 'gone', namespace: 'demo' }, namespace: 'demo', limit: 1 },
        { onRecord: () => undefined },
      ),
    ).rejects.toThrow('deployment "gone" not found in namespace "demo"');
  });
});

describe('parseTapQuery and describeTapFailure', () => {
  it('builds the ObserveRequest from the query', () => {
    const p = parseTapQuery(
      new URLSearchParams('namespace=demo&kind=pod&name=a-1&limit=3&toKind=deployment&toName=db&method=POST'),
      10,
    );
    expect(p.resource).toEqual({ kind: 'pod', name: 'a-1', namespace: 'demo' });
    expect(p.to).toEqual({ kind: 'deployment', name: 'db', namespace: 'demo' });
    expect(p.req.limit).toBe(3);
    expect(() => parseTapQuery(new URLSearchParams('kind=pod&limit=1'), 10)).toThrow('namespace is required');
  });
  it('says why a proxy did not tap', () => {
    expect(describeTapFailure('demo/a', { code: 14, message: 'x', details: 'connect ECONNREFUSED' })).toBe(
      "pod demo/a: the proxy's tap server is unreachable (UNAVAILABLE: connect ECONNREFUSED)",
    );
    expect(describeTapFailure('demo/a', { code: 12, message: 'x', details: '' })).toContain(
      'is MINIMESH_PROXY_TAP_SVC_NAME set on it?',
    );
  });
});
