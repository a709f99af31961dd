// minimesh viz stat|edges|tap|top and diagnostics proxy-metrics, end to end through their flags, over a
// fake API server, a fake Prometheus HTTP API, and the real tap service in front of a gRPC tap server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Server as GrpcServer, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { tap, toTcpAddress } from '@minimesh/proto';
import { diagnosticsCommand, vizCommand, type VizEnv } from '../src/commands/viz-command.js';
import { createGrpcDialer } from '../src/tap-service/dial.js';
import { createTapService } from '../src/tap-service/tap-service.js';
import { CLIENT_ID, fakeKube, PROXY_METRICS, startFakePrometheus } from './support/fakes.js';

let prom: Awaited<ReturnType<typeof startFakePrometheus>>;
let grpc: GrpcServer;
let tapHttp: Server;
let tapBase = '';

beforeAll(async () => {
  prom = await startFakePrometheus();
  grpc = new GrpcServer();
  grpc.addService(tap.TapService, {
    observe: (call: ServerWritableStream<tap.ObserveRequest, tap.TapEvent>) => {
      const meta = {
        source: toTcpAddress('127.0.0.5', 41000),
        sourceMeta: { labels: { tls: 'true', client_id: CLIENT_ID } },
        destination: toTcpAddress('127.0.0.1', 8080),
        proxyDirection: tap.TapEvent_ProxyDirection.INBOUND,
      };
      for (let i = 0; i < call.request.limit; i++) {
        const id = { base: 1, stream: BigInt(i) };
        const path = i % 2 ? '/b' : '/a';
        call.write({
          ...meta,
          event: {
            $case: 'http',
            value: {
              event: {
                $case: 'requestInit',
                value: { id, authority: 'server.demo:8080', path, method: { type: { $case: 'registered', value: 0 } } },
              },
            },
          },
        });
        call.write({
          ...meta,
          event: {
            $case: 'http',
            value: {
              event: {
                $case: 'responseInit',
                value: {
                  id,
                  httpStatus: i === 2 ? 500 : 200,
                  sinceRequestInit: { seconds: 0n, nanos: (i + 1) * 1_000_000 },
                },
              },
            },
          },
        });
        call.write({
          ...meta,
          event: {
            $case: 'http',
            value: {
              event: {
                $case: 'responseEnd',
                value: { id, responseBytes: 2n, sinceRequestInit: { seconds: 0n, nanos: (i + 1) * 1_000_000 } },
              },
            },
          },
        });
      }
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const handler = createTapService({
    kube: fakeKube(),
    dial: createGrpcDialer({ port }),
    controlPlaneNamespace: 'minimesh',
    trustDomain: 'cluster.local',
    maxLimit: 1000,
  });
  tapHttp = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => tapHttp.listen(0, '127.0.0.1', r));
  tapBase = `http://127.0.0.1:${(tapHttp.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => tapHttp.close(r));
  grpc.forceShutdown();
  await prom.close();
});

const env = (kube = fakeKube({ tapBase, vizInstalled: true, prometheusUrl: prom.url })): VizEnv => ({
  connect: async () => ({ kube, server: 'https://fake:6443', namespace: undefined }),
  interrupt: new AbortController().signal,
});

async function run(
  command: typeof vizCommand,
  argv: string[],
  e: VizEnv = env(),
): Promise<{ code: number; stdout: string; stderr: string; error?: Error & { exitCode?: number } }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d: Buffer) => (stdout += d.toString()));
  err.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    const code = await command(argv, { stdout: out, stderr: err }, e);
    return { code, stdout, stderr };
  } catch (error) {
    const x = error as Error & { exitCode?: number };
    return { code: x.exitCode ?? 1, stdout, stderr, error: x };
  }
}

describe('minimesh viz stat-outbound', () => {
  it("shows the workload's route and each backend of its split, from the route metrics", async () => {
    const r = await run(vizCommand, ['stat-outbound', 'deploy/client', '-n', 'demo']);
    expect(r.error).toBeUndefined();
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SERVICE\s+ROUTE\s+TYPE\s+BACKEND\s+SUCCESS\s+RPS\s+LATENCY_P50/);
    expect(lines[1]).toMatch(/^server:8080\s+server-split\s+HTTPRoute\s+95\.00%\s+2\.0rps\s+5ms/);
    expect(lines[2]).toMatch(/^\s+├─►\s+server-canary:8080\s+50\.00%\s+0\.2rps/);
    expect(lines[3]).toMatch(/^\s+└─►\s+server:8080\s+100\.00%\s+1\.8rps\s+4ms/);
    expect(
      prom.queries.some((q) =>
        q.includes('outbound_grpc_route_request_statuses_total{namespace="demo", deployment="client"}[1m]'),
      ),
    ).toBe(true);
  });

  it('needs a named workload', async () => {
    const r = await run(vizCommand, ['stat-outbound', 'deploy', '-n', 'demo']);
    expect(r.code).toBe(2);
  });
});

describe('minimesh viz authz', () => {
  it("shows the workload's requests per Server and authorization: allowed, unauthorized, rate limited", async () => {
    const r = await run(vizCommand, ['authz', 'deploy/server', '-n', 'demo']);
    expect(r.error).toBeUndefined();
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SERVER\s+ROUTE\s+AUTHORIZATION\s+RPS\s+UNAUTHORIZED\s+RATE_LIMITED\s+RATE_LIMIT$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(
        /^server-http\s+-\s+-\s+0\.0rps\s+0\.0rps\s+0\.5rps\s+HTTPLocalRateLimitPolicy\/server-limit \(total\)$/,
      ),
      expect.stringMatching(/^server-http\s+default\s+-\s+0\.0rps\s+0\.2rps\s+0\.0rps\s+-$/),
      expect.stringMatching(
        /^server-http\s+default\s+authorizationpolicy\/client-only\s+1\.9rps\s+0\.0rps\s+0\.0rps\s+-$/,
      ),
    ]);
    expect(
      prom.queries.some((q) =>
        q.includes('inbound_http_local_ratelimit_total{namespace="demo", deployment="server"}[1m]'),
      ),
    ).toBe(true);
  });

  it('needs a named workload', async () => {
    const r = await run(vizCommand, ['authz', 'deploy', '-n', 'demo']);
    expect(r.code).toBe(2);
  });
});

describe('minimesh viz stat', () => {
  it('prints the table of the demo namespace: the server at 95 % success, 2 rps', async () => {
    const r = await run(vizCommand, ['stat', 'deploy', '-n', 'demo']);
    expect(r.error).toBeUndefined();
    expect(r.stdout.split('\n')).toEqual([
      'NAME     MESHED   SUCCESS      RPS   LATENCY_P50   LATENCY_P95   LATENCY_P99   TCP_CONN',
      'client      1/1         -        -             -             -             -          -',
      'server      1/1    95.00%   2.0rps         0.6ms         2.3ms          25ms          2',
      '',
    ]);
  });

  it('stat ns lists every namespace with its meshed pods', async () => {
    const r = await run(vizCommand, ['stat', 'ns']);
    expect(r.error).toBeUndefined();
    expect(r.stdout.split('\n').map((l) => l.split(/ +/).slice(0, 3).join(' '))).toEqual([
      'NAME MESHED SUCCESS',
      'default - -',
      'demo 2/2 95.00%',
      '',
    ]);
  });

  it('-o json and -o wide', async () => {
    const j = await run(vizCommand, ['stat', 'deploy/server', '-n', 'demo', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toEqual([
      expect.objectContaining({ name: 'server', meshed: '1/1', success: 0.95, rps: 2 }),
    ]);
    const w = await run(vizCommand, ['stat', 'deploy', '-n', 'demo', '-o', 'wide']);
    expect(w.stdout.split('\n')[0]).toContain('MTLS   READ_BYTES/SEC   WRITE_BYTES/SEC');
    const y = await run(vizCommand, ['stat', 'deploy/server', '-n', 'demo', '-o', 'yaml']);
    expect(y.stdout).toMatch(/^- namespace: demo\n/);
    expect(parseYaml(y.stdout)).toEqual(JSON.parse(j.stdout));
  });

  it('one line for an unknown workload or namespace, viz not installed, Prometheus unreachable, bad flags', async () => {
    expect(await run(vizCommand, ['stat', 'deploy/nope', '-n', 'demo'])).toMatchObject({
      code: 2,
      error: { message: 'deployment "nope" not found in namespace "demo"' },
    });
    expect(await run(vizCommand, ['stat', 'deploy', '-n', 'nope'])).toMatchObject({
      code: 2,
      error: { message: 'namespace "nope" not found' },
    });
    const notInstalled = await run(vizCommand, ['stat', 'deploy', '-n', 'demo'], env(fakeKube()));
    expect(notInstalled.code).toBe(1);
    expect(notInstalled.error?.message).toMatch(
      /^viz is not installed in namespace "minimesh" \(no ConfigMap minimesh-viz\): helm upgrade/,
    );
    const down = await run(vizCommand, ['stat', 'deploy', '-n', 'demo', '--prometheus-url', 'http://127.0.0.1:9']);
    expect(down.code).toBe(1);
    expect(down.error?.message).toMatch(/^prometheus at http:\/\/127\.0\.0\.1:9 is unreachable: /);
    expect(await run(vizCommand, ['stat', 'deploy', '-o', 'xml'])).toMatchObject({
      code: 2,
      error: { message: 'minimesh viz stat: -o "xml" is not valid: expected table, wide, json, yaml' },
    });
    expect(await run(vizCommand, ['top', 'deploy/server', '-o', 'wide'])).toMatchObject({
      code: 2,
      error: { message: 'minimesh viz top: -o "wide" is not valid: expected table, json, yaml' },
    });
    expect(await run(vizCommand, ['stat', 'svc/web'])).toMatchObject({ code: 2 });
    expect(await run(vizCommand, ['stat', 'deploy', '-t', '2d'])).toMatchObject({ code: 2 });
    expect(await run(vizCommand, ['stat', 'deploy', '--from', 'deploy/a', '--to', 'deploy/b'])).toMatchObject({
      code: 2,
    });
    expect(await run(vizCommand, ['bogus'])).toMatchObject({
      code: 2,
      error: {
        message: 'unknown viz command "bogus": expected one of stat, stat-outbound, authz, edges, top, tap, dashboard',
      },
    });
  });

  it('--help everywhere', async () => {
    for (const sub of ['stat', 'edges', 'top', 'tap', 'dashboard']) {
      const r = await run(vizCommand, [sub, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`minimesh viz ${sub}`);
    }
    expect((await run(vizCommand, ['--help'])).stdout).toContain('Commands:');
    expect((await run(diagnosticsCommand, ['proxy-metrics', '--help'])).stdout).toContain('<namespace>/<pod>');
  });
});

describe('minimesh viz edges', () => {
  it('shows the client -> server edge secured, with both identities in wide output', async () => {
    const r = await run(vizCommand, ['edges', 'deploy', '-n', 'demo']);
    expect(r.stdout).toBe('SRC      DST      SRC_NS   DST_NS   SECURED\nclient   server   demo     demo     √\n');
    const w = await run(vizCommand, ['edges', 'deploy', '-n', 'demo', '-o', 'wide']);
    expect(w.stdout).toContain(CLIENT_ID);
    expect(w.stdout).toContain('server.demo.serviceaccount.identity.minimesh.cluster.local');
    const j = await run(vizCommand, ['edges', 'deploy', '-n', 'demo', '-o', 'json']);
    const y = await run(vizCommand, ['edges', 'deploy', '-n', 'demo', '-o', 'yaml']);
    expect(parseYaml(y.stdout)).toEqual(JSON.parse(j.stdout));
    expect(parseYaml(y.stdout)).toEqual([expect.objectContaining({ src: 'client', dst: 'server' })]);
  });
});

describe('minimesh viz tap and top', () => {
  it('tap prints req/rsp/end lines with identities until the limit', async () => {
    const r = await run(vizCommand, ['tap', 'deploy/server', '-n', 'demo', '--limit', '2']);
    expect(r.error).toBeUndefined();
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe(
      `req id=1:0 proxy=in  src=127.0.0.5:41000 dst=127.0.0.1:8080 tls=true :method=GET :authority=server.demo:8080 :path=/a src_id=${CLIENT_ID} dst_id=server.demo.serviceaccount.identity.minimesh.cluster.local`,
    );
    expect(lines[1]).toBe(
      'rsp id=1:0 proxy=in  src=127.0.0.5:41000 dst=127.0.0.1:8080 tls=true :status=200 latency=1000µs',
    );
    const json = await run(vizCommand, ['tap', 'deploy/server', '-n', 'demo', '--limit', '1', '-o', 'json']);
    expect(JSON.parse(json.stdout.split('\n')[0] ?? '')).toMatchObject({
      type: 'requestInit',
      path: '/a',
      source: { identity: CLIENT_ID },
    });
    const yaml = await run(vizCommand, ['tap', 'deploy/server', '-n', 'demo', '--limit', '1', '-o', 'yaml']);
    const docs = parseAllDocuments(yaml.stdout).map((d) => d.toJS() as Record<string, unknown>);
    expect(docs.map((d) => d.type)).toEqual(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type),
    );
    expect(docs[0]).toMatchObject({ type: 'requestInit', path: '/a', source: { identity: CLIENT_ID } });
  });

  it('tap refuses a workload without meshed pods or a missing name', async () => {
    expect(await run(vizCommand, ['tap', 'deploy/nope', '-n', 'demo'])).toMatchObject({
      code: 2,
      error: { message: 'deployment "nope" not found in namespace "demo"' },
    });
    expect(await run(vizCommand, ['tap', 'deploy', '-n', 'demo'])).toMatchObject({ code: 2 });
  });

  it('top groups the requests by route', async () => {
    const r = await run(vizCommand, ['top', 'deploy/server', '-n', 'demo', '--limit', '4', '--duration', '5s']);
    expect(r.error).toBeUndefined();
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^SOURCE +DESTINATION +METHOD +PATH +COUNT +BEST +WORST +LAST +SUCCESS_RATE$/);
    expect(lines[1]).toMatch(/^client-h1-a +server-h1-a +GET +\/a +2 +1000µs +3000µs +3000µs +50\.00%$/);
    expect(lines[2]).toMatch(/^client-h1-a +server-h1-a +GET +\/b +2 +2000µs +4000µs +4000µs +100\.00%$/);
    const y = await run(vizCommand, [
      'top',
      'deploy/server',
      '-n',
      'demo',
      '--limit',
      '4',
      '--duration',
      '5s',
      '-o',
      'yaml',
    ]);
    expect(parseYaml(y.stdout)).toEqual([
      expect.objectContaining({
        source: 'client-h1-a',
        destination: 'server-h1-a',
        path: '/a',
        count: 2,
        successes: 1,
      }),
      expect.objectContaining({ path: '/b', count: 2, successes: 2 }),
    ]);
  });
});

describe('minimesh diagnostics proxy-metrics', () => {
  it("prints the proxy's metrics through the API server's pod proxy", async () => {
    expect((await run(diagnosticsCommand, ['proxy-metrics', 'demo/server-h1-a'])).stdout).toBe(PROXY_METRICS);
    expect((await run(diagnosticsCommand, ['proxy-metrics', '-n', 'demo', 'po/server-h1-a'])).stdout).toBe(
      PROXY_METRICS,
    );
  });
  it('one line for a pod without a proxy or a pod that is not there', async () => {
    expect(await run(diagnosticsCommand, ['proxy-metrics', 'demo/legacy-h1-a'])).toMatchObject({
      code: 2,
      error: { message: 'pod demo/legacy-h1-a has no minimesh-proxy container: it is not meshed' },
    });
    expect(await run(diagnosticsCommand, ['proxy-metrics', 'demo/gone'])).toMatchObject({
      code: 2,
      error: { message: 'pod "gone" not found in namespace "demo"' },
    });
    expect(await run(diagnosticsCommand, ['proxy-metrics'])).toMatchObject({ code: 2 });
  });
});
