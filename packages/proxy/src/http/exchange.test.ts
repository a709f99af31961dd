// An HTTP/1 exchange (a real caller and a real app on loopback) forwarded as the connect stage says: it
// counts its request and response, tells an observer (tap) how the response goes, answers upstream
// failures as proxy errors, enforces a route's request timeout, and counts what a stage refuses.
import { createServer, request, type IncomingMessage } from 'node:http';
import { H1Pool } from './h1-pool.js';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../errors.js';
import { ProxyMetrics, toLabels } from '../metrics/metrics.js';
import { plainEndpoint } from '../targets.js';
import { H1Exchange, type ExchangeObserver } from './exchange.js';
import type { Connected } from './upstream.js';
import { afterTest, listen } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
const LABELS = toLabels({ direction: 'outbound', authority: 'web:80', targetAddr: '127.0.0.1:1', tls: 'no_identity' });

/** A proxy whose every request is an H1Exchange handed to `handle`, and a GET to it. */
async function proxy(handle: (ex: H1Exchange) => void) {
  const metrics = new ProxyMetrics(new Registry());
  const port = await listen(
    createServer((req, res) => handle(new H1Exchange(req, res, { direction: 'outbound', metrics, log }))),
  );
  const get = (): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/p', headers: { host: 'web:80' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  return { metrics, get };
}

async function upstreamTo(answer: Parameters<typeof createServer>[1]): Promise<Connected> {
  const pool = new H1Pool();
  afterTest(() => pool.close());
  const port = await listen(createServer(answer));
  const ep = plainEndpoint('127.0.0.1', port);
  return {
    upstream: { kind: 'h1', endpoint: ep, agent: pool.endpoint(ep.key, ep.ip, ep.port) },
    labels: LABELS,
    authority: 'web:80',
    extra: { 'x-extra': 'added' },
  };
}

describe('HTTP exchange', () => {
  it('forwards, counts request and response under its labels, and tells its observer', async () => {
    const to = await upstreamTo((req, res) =>
      res.writeHead(201, { 'x-got': String(req.headers['x-extra']) }).end('body'),
    );
    const seen: string[] = [];
    const observer: ExchangeObserver = {
      responseInit: (s) => seen.push(`init ${s}`),
      responseEnd: (o) => seen.push(`end ${o.failed ? 'failed' : 'ok'}`),
    };
    const p = await proxy((ex) => {
      ex.observe(observer);
      ex.forward(to);
    });
    const r = await p.get();
    expect(r).toMatchObject({ status: 201, body: 'body', headers: { 'x-got': 'added' } });
    await new Promise((res) => setTimeout(res, 20));
    expect(seen).toEqual(['init 201', 'end ok']);
    const text = await p.metrics.registry.metrics();
    expect(text).toMatch(/request_total\{[^}]*authority="web:80"[^}]*\} 1/);
    expect(text).toMatch(/response_total\{[^}]*status_code="201"[^}]*classification="success"[^}]*\} 1/);
  });

  it('answers an upstream that refused the connection with 502 and counts the error', async () => {
    const closed = createServer();
    const port = await listen(closed);
    closed.close();
    const pool = new H1Pool();
    afterTest(() => pool.close());
    const ep = plainEndpoint('127.0.0.1', port);
    const p = await proxy((ex) =>
      ex.forward({
        upstream: { kind: 'h1', endpoint: ep, agent: pool.endpoint(ep.key, ep.ip, ep.port) },
        labels: LABELS,
        authority: '',
        extra: undefined,
      }),
    );
    const r = await p.get();
    expect(r.status).toBe(502);
    expect(r.headers['x-minimesh-proxy-error']).toMatch(
      /^MINIMESH_PROXY_CONNECT_REFUSED: endpoint 127\.0\.0\.1:\d+: connection refused/,
    );
    expect(await p.metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="outbound",error="MINIMESH_PROXY_CONNECT_REFUSED"} 1',
    );
  });

  it("enforces a route's request timeout: 504 before the head, counted", async () => {
    const to = await upstreamTo(() => undefined);
    const p = await proxy((ex) => {
      ex.requestTimeoutMs = 100;
      ex.forward(to);
    });
    const t0 = Date.now();
    const r = await p.get();
    expect(r.status).toBe(504);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.headers['x-minimesh-proxy-error']).toMatch(/^MINIMESH_PROXY_REQUEST_TIMEOUT/);
    expect(await p.metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="outbound",error="MINIMESH_PROXY_REQUEST_TIMEOUT"} 1',
    );
  });

  it('a refusal by a stage is counted and answered; a route answer is not an error', async () => {
    const refused = await proxy((ex) =>
      ex.reject(new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', 'service web:80: no endpoints')),
    );
    expect((await refused.get()).status).toBe(503);
    expect(await refused.metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="outbound",error="MINIMESH_PROXY_NO_ENDPOINTS"} 1',
    );
    const answered = await proxy((ex) => ex.answer(302, 'redirected', '/x'));
    const r = await answered.get();
    expect(r).toMatchObject({ status: 302, headers: { location: '/x', 'x-minimesh-proxy-error': 'redirected' } });
    expect(await answered.metrics.registry.metrics()).not.toContain('proxy_errors_total{');
  });
});
