// The client on the wire, against a TLS server on 127.0.0.1 that counts the connections it accepts:
// one HTTP/2 connection for everything, a bounded HTTP/1.1 pool where h2 is not offered, 429 with
// Retry-After, the client-side rate limit, rotated token files, exec plugins, watch streams.
import { execFile } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient, KubeApiError, type KubeConfig } from '../src/index.js';
import { startConnectionCounter } from '../src/testing.js';
import { json, makePki, startTestServer, type TestPki, type TestServer } from './tls-server.js';

let pki: TestPki;
let h2: TestServer;
let h1: TestServer;
const throttled = new Map<string, number>();
/** /drop/<key>: how many times the server closed the connection instead of answering. */
const dropped = new Map<string, number>();

function handler(
  req: { url?: string; method?: string; headers: Record<string, unknown> },
  body: string,
  res: Parameters<typeof json>[0],
) {
  const url = new URL(req.url ?? '/', 'https://x');
  if (url.pathname === '/version') return json(res, 200, { gitVersion: 'v1.33.0-test' });
  if (url.pathname === '/echo')
    return json(res, 200, { method: req.method, body: body === '' ? undefined : JSON.parse(body) });
  // The keep-alive race, from the server's side: close the connection instead of answering (once for
  // /drop/once-*, always for /drop/always-*).
  if (url.pathname.startsWith('/drop/')) {
    const n = dropped.get(url.pathname) ?? 0;
    if (url.pathname.startsWith('/drop/always-') || n === 0) {
      dropped.set(url.pathname, n + 1);
      return void (req as unknown as { socket: { destroy(): void } }).socket.destroy();
    }
    return json(res, 200, { method: req.method, body: body === '' ? undefined : JSON.parse(body) });
  }
  if (url.pathname === '/slow') return void setTimeout(() => json(res, 200, {}), 2000);
  if (url.pathname.startsWith('/throttle/')) {
    const left = throttled.get(url.pathname) ?? 0;
    if (left > 0) {
      throttled.set(url.pathname, left - 1);
      return json(
        res,
        429,
        { kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' },
        { 'retry-after': '0' },
      );
    }
    return json(res, 200, { ok: true });
  }
  if (url.pathname === '/api/v1/things' && url.searchParams.get('watch') === 'true') {
    if (url.searchParams.get('resourceVersion') === 'old')
      return json(res, 410, {
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version: 1 (5)',
      });
    (res as { writeHead: (s: number, h: Record<string, string>) => void }).writeHead(200, {
      'content-type': 'application/json',
    });
    const ev = (type: string, name: string, rv: string) =>
      JSON.stringify({ type, object: { metadata: { name, resourceVersion: rv } } }) + '\n';
    // Events split across writes, as a real stream may split them.
    const text = ev('ADDED', 'a', '2') + ev('BOOKMARK', '', '3') + ev('DELETED', 'a', '4');
    const w = res as unknown as { write(chunk: string): boolean };
    w.write(text.slice(0, 30));
    setTimeout(() => {
      w.write(text.slice(30));
      if (url.searchParams.get('timeoutSeconds') !== '999') res.end();
    }, 20);
    return;
  }
  return json(res, 404, { kind: 'Status', code: 404, reason: 'NotFound', message: `${url.pathname} not found` });
}

const config = (server: TestServer, auth: KubeConfig['auth'] = { kind: 'token', token: 't0k3n' }): KubeConfig => ({
  source: 'test',
  files: [],
  server: server.url,
  tls: { ca: pki.cert, insecureSkipTlsVerify: false },
  auth,
  namespace: 'default',
});

beforeAll(async () => {
  pki = makePki();
  h2 = await startTestServer(pki, handler);
  h1 = await startTestServer(pki, handler, { http1Only: true });
});
afterAll(async () => {
  await h2?.close();
  await h1?.close();
  rmSync(pki.dir, { recursive: true, force: true });
});

describe('KubeClient transport', () => {
  it('sends 300 requests, 30 at a time, over one HTTP/2 connection', async () => {
    const before = h2.connections;
    const client = createKubeClient(config(h2), { userAgent: 'test/1', rateLimit: { qps: 0, burst: 1 } });
    for (let round = 0; round < 10; round++) {
      const all = await Promise.all(
        Array.from({ length: 30 }, (_, i) => client.requestOk<{ body: { i: number } }>('POST', '/echo', { i })),
      );
      expect(all.map((r) => r.body.i)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    }
    expect(h2.connections - before).toBe(1);
    expect(client.stats()).toMatchObject({ connectionsOpened: 1, protocol: 'h2', requests: 300 });
    await client.close();
  });

  it('falls back to a keep-alive HTTP/1.1 pool of at most poolSize sockets, watches outside it', async () => {
    const before = h1.connections;
    const client = createKubeClient(config(h1), { userAgent: 'test/1', poolSize: 3, rateLimit: { qps: 0, burst: 1 } });
    const events: string[] = [];
    const watching = client.watch('/api/v1/things', { timeoutSeconds: 999 }, (t) => events.push(t), {
      signal: AbortSignal.timeout(3000),
    });
    for (let round = 0; round < 5; round++)
      await Promise.all(Array.from({ length: 20 }, () => client.requestOk('GET', '/version')));
    expect(await watching).toBe('aborted');
    expect(events).toEqual(['ADDED', 'BOOKMARK', 'DELETED']);
    // 1 ALPN probe + at most 3 pooled sockets + 1 for the watch
    expect(h1.connections - before).toBeLessThanOrEqual(5);
    expect(client.stats().protocol).toBe('http/1.1');
    await client.close();
  });

  it('sends a request again when a reused HTTP/1.1 connection was closed under it, never a fresh one', async () => {
    const client = createKubeClient(config(h1), { userAgent: 'test/1', poolSize: 1, rateLimit: { qps: 0, burst: 1 } });
    await client.requestOk('GET', '/version'); // a kept-alive connection in the pool
    const r = await client.requestOk<{ body: { n: number } }>('POST', '/drop/once-a', { n: 1 });
    expect(r.body).toEqual({ n: 1 });
    expect(dropped.get('/drop/once-a')).toBe(1); // dropped on the reused connection, answered on a new one
    await client.close();
    const fresh = createKubeClient(config(h1), { userAgent: 'test/1', poolSize: 1, rateLimit: { qps: 0, burst: 1 } });
    await fresh.requestOk('GET', '/version');
    // Reused: the one retry goes on a new connection, and a new connection that fails is an error.
    await expect(fresh.requestOk('POST', '/drop/always-b', { n: 2 })).rejects.toThrow();
    expect(dropped.get('/drop/always-b')).toBe(2);
    await fresh.close();
  });

  it('through a counting relay: 200 requests and a watch are one connection for the server', async () => {
    const relay = await startConnectionCounter({ host: '127.0.0.1', port: Number(new URL(h2.url).port) });
    const client = createKubeClient(
      { ...config(h2), server: `https://127.0.0.1:${relay.port}` },
      { userAgent: 'test/1' },
    );
    const watching = client.watch('/api/v1/things', { timeoutSeconds: 999 }, () => undefined, {
      signal: AbortSignal.timeout(1000),
    });
    await Promise.all(Array.from({ length: 200 }, () => client.requestOk('GET', '/version')));
    expect(await watching).toBe('aborted');
    expect(relay.connections).toBe(1);
    await client.close();
    await relay.close();
  });

  it('verifies the server certificate against the kubeconfig CA', async () => {
    const client = createKubeClient({ ...config(h2), tls: { insecureSkipTlsVerify: false } }, { userAgent: 'test/1' });
    const err = await client.request('GET', '/version').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).statusCode).toBe(0);
    expect((err as Error).message).toMatch(/^GET \/version: request failed: .*(self.signed|certificate)/i);
    await client.close();
  });

  it('times out a request that gets no answer, naming the limit', async () => {
    const client = createKubeClient(config(h2), { userAgent: 'test/1' });
    await expect(client.request('GET', '/slow', undefined, { timeoutMs: 200 })).rejects.toThrow(
      'GET /slow: request failed: no response within 200 ms',
    );
    await client.close();
  });

  it('an idle client does not keep a process alive', async () => {
    const script = `
      const { createKubeClient } = await import(${JSON.stringify(new URL('../src/index.ts', import.meta.url).pathname)});
      const c = createKubeClient({ source: 't', files: [], server: ${JSON.stringify(h2.url)}, tls: { insecureSkipTlsVerify: true }, auth: { kind: 'none' }, namespace: undefined }, { userAgent: 't' });
      const r = await c.request('GET', '/version');
      console.log(r.status);`;
    // Not spawnSync: the server answering it lives in this process.
    const r = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        { timeout: 15_000 },
        (_e, stdout) => resolve({ code: child.exitCode, stdout: String(stdout) }),
      );
    });
    expect(r.stdout.trim()).toBe('200');
    expect(r.code).toBe(0);
  });
});

describe('KubeClient flow control', () => {
  it('retries a 429 after Retry-After, and returns it once the retries are spent', async () => {
    const client = createKubeClient(config(h2), { userAgent: 'test/1', maxThrottleRetries: 3 });
    throttled.set('/throttle/a', 2);
    expect((await client.request('GET', '/throttle/a')).status).toBe(200);
    throttled.set('/throttle/b', 10);
    const res = await client.request('GET', '/throttle/b');
    expect(res.status).toBe(429);
    await expect(client.requestOk('GET', '/throttle/b')).rejects.toThrow(
      'GET /throttle/b: HTTP 429 TooManyRequests: slow down',
    );
    expect(client.stats().throttled).toBe(2 + 4 + 4);
    await client.close();
  });

  it('holds requests to the QPS after the burst', async () => {
    const client = createKubeClient(config(h2), { userAgent: 'test/1', rateLimit: { qps: 50, burst: 5 } });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 20 }, () => client.request('GET', '/version')));
    const took = performance.now() - t0;
    // 15 requests past the burst at 50/s: about 300 ms
    expect(took).toBeGreaterThanOrEqual(280);
    expect(client.stats().rateLimited).toBe(15);
    await client.close();
  });
});

describe('KubeClient credentials', () => {
  it('sends the token, and reads a token file again after a 401', async () => {
    const file = join(pki.dir, 'token');
    writeFileSync(file, 'first\n');
    const client = createKubeClient(config(h2, { kind: 'token-file', path: file }), { userAgent: 'test/1' });
    await client.request('GET', '/version');
    writeFileSync(file, 'second\n');
    await client.request('GET', '/version'); // cached for a minute
    expect(h2.authorizations.slice(-2)).toEqual(['Bearer first', 'Bearer first']);
    await client.close();
  });

  it('runs an exec credential plugin once and keeps its token until it expires', async () => {
    const plugin = join(pki.dir, 'plugin.sh');
    const count = join(pki.dir, 'plugin.count');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho x >> ${count}\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin-'$PLUGIN_ARG'","expirationTimestamp":"2999-01-01T00:00:00Z"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const client = createKubeClient(
      config(h2, {
        kind: 'exec',
        exec: {
          command: plugin,
          args: [],
          env: [{ name: 'PLUGIN_ARG', value: 'x1' }],
          apiVersion: 'client.authentication.k8s.io/v1',
          dir: pki.dir,
        },
      }),
      { userAgent: 'test/1' },
    );
    await Promise.all([client.request('GET', '/version'), client.request('GET', '/version')]);
    await client.request('GET', '/version');
    expect(h2.authorizations.slice(-3)).toEqual(Array(3).fill('Bearer from-plugin-x1'));
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(1);
    await client.close();
  });

  it('names a missing credential plugin and its install hint', async () => {
    const client = createKubeClient(
      config(h2, {
        kind: 'exec',
        exec: {
          command: 'mm-no-such-plugin',
          args: [],
          env: [],
          apiVersion: 'client.authentication.k8s.io/v1',
          installHint: 'install it from x',
          dir: '/',
        },
      }),
      { userAgent: 'test/1' },
    );
    await expect(client.request('GET', '/version')).rejects.toThrow(
      'credential plugin mm-no-such-plugin: not found (install it from x)',
    );
    await client.close();
  });
});

describe('KubeClient.watch', () => {
  it('delivers each event once, across split writes, and ends with the stream', async () => {
    const client = createKubeClient(config(h2), { userAgent: 'test/1' });
    const seen: string[] = [];
    const end = await client.watch('/api/v1/things', { resourceVersion: '1', allowWatchBookmarks: true }, (type, obj) =>
      seen.push(`${type} ${(obj as { metadata: { resourceVersion: string } }).metadata.resourceVersion}`),
    );
    expect(end).toBe('ended');
    expect(seen).toEqual(['ADDED 2', 'BOOKMARK 3', 'DELETED 4']);
    await client.close();
  });

  it('throws KubeApiError 410 for an expired version, and the handler’s own error ends the watch', async () => {
    const client = createKubeClient(config(h2), { userAgent: 'test/1' });
    const gone = await client
      .watch('/api/v1/things', { resourceVersion: 'old' }, () => undefined)
      .catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(KubeApiError);
    expect((gone as KubeApiError).statusCode).toBe(410);
    await expect(
      client.watch('/api/v1/things', {}, () => {
        throw new Error('handler broke');
      }),
    ).rejects.toThrow('handler broke');
    await client.close();
  });
});
